@testable import FanoutServer
import Logging
import Testing

@Suite("Cluster node")
struct ClusterNodeTests {
    private let quiet = Logger(label: "cluster-node-test") { _ in SwiftLogNoOpLogHandler() }

    /// Without a cluster section no node starts and the server keeps its own engine.
    @Test func aStandaloneServerStartsNoNode() throws {
        let server = try Server(configuration: ServerConfiguration(), logger: quiet)
        ClusterNode.start(for: server)
        #expect(server.cluster == nil)
        #expect(server.engine === server.localHistory)
        #expect(!server.fanout.claimsGroups)
    }

    /// A node that starts takes the engine seam and the groups' claims over and reports its shards to INFO;
    /// stopping it hands both back to the server's own engine. Nothing is read from Redis: the loop never runs.
    @Test func aNodeTakesTheEngineSeamOverAndHandsItBack() throws {
        var configuration = ServerConfiguration()
        var cluster = ClusterSettings()
        cluster.redis = ["redis://127.0.0.1:1"]
        configuration.cluster = cluster
        let server = try Server(configuration: configuration, logger: quiet)
        ClusterNode.start(for: server)
        let node = try #require(server.cluster)
        #expect(server.engine === node.engine)
        #expect(server.fanout.claimsGroups)
        #expect(server.loop.afterEachPass != nil)
        let fields = Dictionary(node.infoFields(), uniquingKeysWith: { first, _ in first })
        #expect(fields["cluster_shards"] == "1")
        #expect(fields["shard0"] == "127.0.0.1:1")
        #expect(fields["cluster_questions_held"] == "0")
        #expect(fields["cluster_presence_members"] == "0")
        // Presence asks the node, as its directory, for every node's members while it runs.
        #expect(server.presence.directory === node)
        node.stop()
        #expect(server.presence.directory == nil)
        #expect(server.cluster == nil)
        #expect(server.engine === server.localHistory)
        #expect(!server.fanout.claimsGroups)
        #expect(server.loop.afterEachPass == nil)
    }
}
