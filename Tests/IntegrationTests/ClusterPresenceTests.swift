import FanoutProtocol
import FanoutTestSupport
import Foundation
import Testing

/// Presence across nodes over real redis-server and fanoutd processes (PROTOCOL.md, "Presence (1.3)"): every
/// node's WHO counts every node's members, listed as `<node>/<id>`; joins and leaves reach watchers on every
/// node with the same seqs; a node killed with SIGKILL takes its members with it, one `node-lost` leave each,
/// announced once; a shard's outage neither duplicates nor loses a member.
@Suite("Presence across nodes", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterPresenceTests {
    /// Fast heartbeats and a one-second lease; `presence:` is a top-level key, written after the cluster's own.
    static let settings = "  heartbeat: 0.1\n  down_after: 0.5\n  presence_lease: 1\npresence: [\"chat.>\"]\n"

    func nodeID(_ node: Daemon) throws -> String {
        let client = try node.client()
        defer { client.close() }
        return try #require(infoFields(try client.command("INFO"))["cluster_node"])
    }

    /// `+OK <count> <member> ...` split: the count and the members' ids.
    func who(_ client: LineClient, _ subject: String) throws -> (count: Int, ids: [String]) {
        let reply = try client.command("WHO \(subject)")
        let words = reply.split(separator: " ")
        guard words.count >= 2, words[0] == "+OK", let count = Int(words[1]) else {
            throw TestFailure("WHO answered \(reply)")
        }
        let ids = words.dropFirst(2).map { word in
            String(word.split(separator: ",").first { $0.hasPrefix("id=") }?.dropFirst(3) ?? "")
        }
        return (count, ids)
    }

    /// The id a member connection has on its node, as CLIENTS shows it (the newest connection is the asker's).
    func connectionID(_ client: LineClient) throws -> String {
        let reply = try client.command("CLIENTS")
        let mine = reply.split(separator: " ").last { $0.hasPrefix("id=") || $0.contains("id=") }
        return String(mine?.split(separator: ",").first { $0.hasPrefix("id=") }?.dropFirst(3) ?? "")
    }

    @Test(arguments: [2, 3])
    func everyNodeCountsEveryMemberAndWatchersSeeTheSameEventsWithTheSameSeqs(nodes: Int) throws {
        let rig = try ClusterRig(shards: 1, nodes: nodes, clusterExtra: Self.settings)
        let ids = try rig.nodes.map(nodeID)
        #expect(Set(ids).count == nodes)
        var watchers: [LineClient] = []
        for node in rig.nodes {
            let watcher = try node.client(timeout: 15)
            #expect(try watcher.command("SUB $presence.chat.room") == "+OK 1")
            watchers.append(watcher)
        }
        var members: [LineClient] = []
        for node in rig.nodes {
            let member = try node.client(timeout: 15)
            #expect(try member.command("SUB chat.room") == "+OK 1")
            members.append(member)
            // Join order across nodes is to the millisecond of their clocks: the joins are a few apart.
            Thread.sleep(forTimeInterval: 0.005)
        }
        for node in rig.nodes {
            let asker = try node.client()
            try eventually(timeout: 10, "WHO counts every node's member") { try who(asker, "chat.room").count == nodes }
            let listed = try who(asker, "chat.room").ids
            #expect(listed.count == nodes)
            // Each `<node>/<id>`, one per node, in join order (the members joined node by node).
            #expect(listed.map { String($0.split(separator: "/").first ?? "") } == ids)
            #expect(listed.allSatisfy { $0.split(separator: "/").count == 2 })
            // WHO waits on Redis; what the connection sends after it is answered after it.
            try asker.send("WHO chat.room 1\nPING after\nPUB chat.elsewhere x\n")
            #expect(try asker.readLine().hasPrefix("+OK \(nodes) id=\(ids[0])/"))
            #expect(try asker.readLine() == "+PONG after")
            #expect(try asker.readLine().hasPrefix("+OK "))
        }
        // One member leaves: a leave with reason=unsub.
        #expect(try members[0].command("UNSUB chat.room") == "+OK 0")
        var seen: [[String]] = []
        for watcher in watchers {
            var lines: [String] = []
            while lines.count < nodes + 1 { lines.append(try watcher.readLine()) }
            seen.append(lines)
        }
        for lines in seen {
            let messages = lines.compactMap(ReceivedMessage.init)
            #expect(messages.count == nodes + 1)
            #expect(messages.map(\.seq) == Array(1...UInt64(nodes + 1)))
            #expect(messages.prefix(nodes).allSatisfy { $0.payload.hasPrefix("join id=") && $0.payload.hasSuffix(",since_s=0") })
            #expect(messages.last?.payload.hasPrefix("leave id=\(ids[0])/") == true)
            #expect(messages.last?.payload.hasSuffix(",reason=unsub") == true)
        }
        // Every watcher, on every node, saw the same events under the same seqs.
        #expect(Set(seen.map { $0.joined(separator: "\n") }).count == 1)
        let asker = try rig.nodes[nodes - 1].client()
        try eventually(timeout: 10, "the leave is counted everywhere") { try who(asker, "chat.room").count == nodes - 1 }
    }

    @Test func aNodeKilledWithSIGKILLTakesItsMembersWithItAnnouncedOnceBySurvivors() throws {
        let rig = try ClusterRig(shards: 1, nodes: 3, clusterExtra: Self.settings)
        let victim = rig.nodes[0]
        let victimID = try nodeID(victim)
        var watchers: [LineClient] = []
        for node in rig.nodes.dropFirst() {
            let watcher = try node.client(timeout: 15)
            #expect(try watcher.command("SUB $presence.chat.>") == "+OK 1")
            watchers.append(watcher)
        }
        let plain = try victim.client()
        #expect(try plain.command("SUB chat.room chat.other") == "+OK 2")
        let grouped = try victim.client()
        #expect(try grouped.command("QSUB g chat.room") == "+OK 1")
        let survivor = try rig.nodes[1].client(timeout: 15)
        #expect(try survivor.command("SUB chat.room") == "+OK 1")
        let asker = try rig.nodes[2].client(timeout: 15)
        try eventually(timeout: 10, "all three members of chat.room counted") { try who(asker, "chat.room").count == 3 }
        // The joins so far: 4 on each watcher.
        for watcher in watchers {
            for _ in 0..<4 { #expect(try watcher.readLine().contains(" join id=")) }
        }
        let killed = Date()
        victim.signal(SIGKILL)
        var leaves: [[String]] = []
        for watcher in watchers {
            var lines: [String] = []
            while lines.count < 3 { lines.append(try watcher.readLine()) }
            leaves.append(lines)
        }
        let took = Date().timeIntervalSince(killed)
        // The lease (1 s) plus a few heartbeats and the shared machine's margin.
        #expect(took < 1 + 2, "node-lost leaves after \(took) s")
        for lines in leaves {
            let payloads = lines.compactMap(ReceivedMessage.init).map { "\($0.subject) \($0.payload)" }
            #expect(payloads.count == 3)
            #expect(payloads.allSatisfy { $0.contains(" leave id=\(victimID)/") && $0.hasSuffix(",reason=node-lost") })
            #expect(payloads.filter { $0.hasPrefix("$presence.chat.room ") }.count == 2)
            #expect(payloads.filter { $0.hasPrefix("$presence.chat.other ") }.count == 1)
            #expect(payloads.filter { $0.contains(",group=g,") }.count == 1)
        }
        // Both survivors' watchers saw the same leaves, under the same seqs.
        #expect(leaves[0] == leaves[1])
        // A lease and more later, nothing more: each leave was announced once.
        Thread.sleep(forTimeInterval: 1.5)  // the absence of a second announcement has no event to await
        for watcher in watchers { #expect(try watcher.pushes().isEmpty) }
        let listed = try who(asker, "chat.room")
        #expect(listed.count == 1 && listed.ids.allSatisfy { !$0.hasPrefix(victimID + "/") })
        #expect(try who(asker, "chat.other").count == 0)
        let info = infoFields(try asker.command("INFO"))
        let announced = try rig.nodes.dropFirst().map { node -> Int in
            let client = try node.client()
            defer { client.close() }
            return Int(infoFields(try client.command("INFO"))["cluster_presence_lost"] ?? "") ?? -1
        }
        #expect(announced.sorted() == [0, 3], "cluster_presence_lost per survivor: \(announced); \(info.count)")
    }

    @Test func aShardStoppedAndRestartedLeavesEveryMemberListedOnce() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2, redisArguments: ["--appendonly", "yes", "--appendfsync", "always"],
                                 clusterExtra: Self.settings)
        var members: [LineClient] = []
        for node in rig.nodes {
            for _ in 0..<2 {
                let member = try node.client(timeout: 15)
                #expect(try member.command("SUB chat.room") == "+OK 1")
                members.append(member)
            }
        }
        let asker = try rig.nodes[1].client(timeout: 15)
        try eventually(timeout: 10, "four members") { try who(asker, "chat.room").count == 4 }
        let before = try who(asker, "chat.room").ids
        rig.shards[0].kill()
        try eventually(timeout: 10, "WHO says the shard is away") {
            (try? asker.command("WHO chat.room"))?.hasPrefix("-ERR unavailable") == true
        }
        // While it is away, one member on node 0 leaves.
        let leaving = before.first { $0.hasPrefix(try! nodeID(rig.nodes[0]) + "/") }!
        try members[0].sendLine("QUIT")
        _ = try members[0].readLineOrEOF()
        try rig.shards[0].start()
        for node in rig.nodes { try rig.waitUntilUp(node, shard: 0) }
        let expected = before.filter { $0 != leaving }
        try eventually(timeout: 10, "three members, each once") {
            let listed = try? who(asker, "chat.room")
            return listed?.count == 3 && listed?.ids == expected
        }
        // And it stays so: nothing is written twice later, by either node.
        Thread.sleep(forTimeInterval: 1.5)  // a lease's worth of heartbeats: no event to await
        let after = try who(asker, "chat.room")
        #expect(after.count == 3 && after.ids == expected)
    }

    @Test func aReloadThatRestartsTheEngineCarriesItsMembersOverUnderTheNodesNewID() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2, clusterExtra: Self.settings)
        let oldID = try nodeID(rig.nodes[0])
        let watcher = try rig.nodes[1].client(timeout: 15)
        #expect(try watcher.command("SUB $presence.chat.room") == "+OK 1")
        let member = try rig.nodes[0].client(timeout: 15)
        #expect(try member.command("SUB chat.room") == "+OK 1")
        #expect(try watcher.readLine().contains(" join id=\(oldID)/"))
        // A changed cluster section: node 0 restarts its engine, under a new node id.
        let yaml = try String(contentsOfFile: rig.configPath, encoding: .utf8)
        try yaml.replacingOccurrences(of: "  heartbeat: 0.1\n", with: "  heartbeat: 0.1\n  max_in_flight: 999\n")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.nodes[0].signal(SIGHUP)
        try eventually(timeout: 10, "a new node id") { try nodeID(rig.nodes[0]) != oldID }
        let newID = try nodeID(rig.nodes[0])
        // The member joins under the new id at once, and its old id leaves as a lost node's once the lease ran out.
        let first = try #require(ReceivedMessage(try watcher.readLine()))
        #expect(first.payload.hasPrefix("join id=\(newID)/") && first.payload.hasSuffix(",since_s=0"))
        let second = try #require(ReceivedMessage(try watcher.readLine()))
        #expect(second.payload.hasPrefix("leave id=\(oldID)/") && second.payload.hasSuffix(",reason=node-lost"),
                "\(second.payload)")
        let asker = try rig.nodes[1].client()
        try eventually(timeout: 10, "one member, under the new id") {
            let listed = try who(asker, "chat.room")
            return listed.count == 1 && listed.ids.first?.hasPrefix(newID + "/") == true
        }
    }

    /// A burst of joins larger than the shard's `max_in_flight` loses none: each join reaches the other node's
    /// watcher and WHO, and each member's leave says `reason=shutdown` when its node stops cleanly (the node
    /// waits for them within its grace), not `node-lost` after the lease.
    @Test func aBurstOfJoinsPastMaxInFlightAndACleanStopLoseNoEvent() throws {
        let settings = "  max_in_flight: 20\n" + Self.settings
        let rig = try ClusterRig(shards: 1, nodes: 2, clusterExtra: settings)
        let watcher = try rig.nodes[1].client(timeout: 30)
        #expect(try watcher.command("SUB $presence.chat.burst") == "+OK 1")
        let crowd = 300
        let members = try (0..<crowd).map { _ in try rig.nodes[0].client(timeout: 30) }
        for member in members { try member.send("SUB chat.burst\n") }
        for member in members { #expect(try member.readLine() == "+OK 1") }
        var joined: Set<String> = []
        while joined.count < crowd {
            let message = try #require(ReceivedMessage(try watcher.readLine()))
            let event = try #require(PresenceEvent(parsing: Substring(message.payload)), "\(message.payload)")
            #expect(event.kind == .join)
            joined.insert(event.member.client)
        }
        let asker = try rig.nodes[1].client()
        try eventually(timeout: 10, "node 1 counts every member") { try who(asker, "chat.burst").count == crowd }
        rig.nodes[0].signal(SIGTERM)
        var left: Set<String> = []
        while left.count < crowd {
            let message = try #require(ReceivedMessage(try watcher.readLine()))
            let event = try #require(PresenceEvent(parsing: Substring(message.payload)), "\(message.payload)")
            #expect(event.kind == .leave && event.reason == "shutdown", "\(message.payload)")
            left.insert(event.member.client)
        }
        #expect(left == joined)
        try eventually(timeout: 10, "no member left in WHO") { try who(asker, "chat.burst").count == 0 }
    }

    /// A reload that stops keeping a subject forgets its members on that node and in the engine too, so that
    /// another node's WHO no longer counts them (it does not wait for the node to die).
    @Test func aReloadThatStopsKeepingASubjectTakesItsMembersOutOfEveryNodesWHO() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2, clusterExtra: Self.settings)
        let member = try rig.nodes[0].client(timeout: 15)
        #expect(try member.command("SUB chat.room") == "+OK 1")
        let asker = try rig.nodes[1].client()
        try eventually(timeout: 10, "node 1 counts node 0's member") { try who(asker, "chat.room").count == 1 }
        let yaml = try String(contentsOfFile: rig.configPath, encoding: .utf8)
        try yaml.replacingOccurrences(of: "presence: [\"chat.>\"]", with: "presence: [\"other.>\"]")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.nodes[0].signal(SIGHUP)
        try eventually(timeout: 10, "node 1 no longer counts the forgotten member") {
            try who(asker, "chat.room").count == 0
        }
        #expect(try member.command("PING") == "+PONG", "the member itself stays connected and subscribed")
    }

    /// `fanoutd --check-config` of a cluster section: its exit status and what it printed (both streams).
    func checkConfig(_ cluster: String) throws -> (status: Int32, output: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lease-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "cluster:\n  redis: [\"redis://127.0.0.1:1\"]\n\(cluster)".write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = Daemon.executable
        process.arguments = ["--config", path, "--check-config"]
        let pipe = try CloexecPipe()
        process.standardOutput = pipe.write
        process.standardError = pipe.write
        try process.run()
        try pipe.write.close()
        let output = String(decoding: pipe.read.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test func theLeaseIsThreeSecondsOrThreeHeartbeatsAndNeverShorter() throws {
        let standard = try checkConfig("")
        #expect(standard.status == 0 && standard.output.contains("cluster_presence_lease: 3.0 seconds"), "\(standard)")
        // A slow heartbeat keeps a valid default: three of its beats.
        let slow = try checkConfig("  heartbeat: 2\n  down_after: 5\n")
        #expect(slow.status == 0 && slow.output.contains("cluster_presence_lease: 6.0 seconds"), "\(slow)")
        let set = try checkConfig("  presence_lease: 10\n")
        #expect(set.status == 0 && set.output.contains("cluster_presence_lease: 10.0 seconds"), "\(set)")
        let short = try checkConfig("  heartbeat: 0.5\n  presence_lease: 1\n")
        #expect(short.status != 0 && short.output.contains("presence_lease: must be at least 3 heartbeats"), "\(short)")
    }
}
