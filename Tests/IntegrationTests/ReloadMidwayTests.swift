import FanoutTestSupport
import Foundation
import Testing

/// A reload that lands while commands wait: the promise is that every command is checked against the
/// configuration in force when it runs, whichever step of the reload runs it.
@Suite("A reload midway", .threadPerTest, .serialized, .timeLimit(.minutes(2)))
struct ReloadMidwayTests {
    /// On a clustered node, an AUTH pipelined behind a PUB that waits on a hung Redis is held (replies keep their
    /// order). A SIGHUP that drops the cluster section and adds users restarts the engine, which fails the PUB
    /// and runs the AUTH during the reload: it must meet the new users (`+OK`), not the old "no users" (`+OK auth
    /// not required`), as the configuration it is part of says.
    @Test func aCommandARestartRunsMeetsTheReloadedUsers() throws {
        let redis = try RedisServerProcess()
        defer { redis.resume() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-midway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml").path
        // down_after far beyond the test: the hung shard must not fail the PUB before the reload does.
        try "cluster:\n  redis: [\"\(redis.url)\"]\n  down_after: 60\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config])
        let client = try daemon.client(timeout: 15)
        let bystander = try daemon.client(timeout: 15)
        try eventually(timeout: 20, "the node publishes through Redis") {
            try client.command("PUB midway.warm x") == "+OK 0"
        }

        redis.pause()
        try client.send("PUB midway.x a\nAUTH sensor-secret-token\n")
        // Two round trips of another client: the loop has read the pipelined pair meanwhile.
        for _ in 0..<2 { #expect(try bystander.command("PING") == "+PONG") }

        let users = try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8)
        try users.write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "restarting the engine", timeout: 10)
        let publishReply = try client.readLine()
        #expect(publishReply.hasPrefix("-ERR "), "the PUB the stopped engine owed: \(publishReply)")
        #expect(try client.readLine() == "+OK", "the AUTH, checked against the users now configured")
    }
}
