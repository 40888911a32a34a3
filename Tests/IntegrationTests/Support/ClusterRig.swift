import FanoutTestSupport
import Foundation
import Testing

/// Redis shards and fanoutd nodes sharing them, all real processes on loopback ports.
final class ClusterRig: @unchecked Sendable {
    let shards: [RedisServerProcess]
    private(set) var nodes: [Daemon] = []
    let configPath: String

    /// `history` is YAML for the history section (rules for `h.>` by default).
    init(shards shardCount: Int, nodes nodeCount: Int, redisArguments: [String] = [], clusterExtra: String = "",
         history: String = "  - subjects: \"h.>\"\n    max_messages: 10000\n    max_age: 0\n") throws {
        shards = try (0..<shardCount).map { _ in try RedisServerProcess(arguments: redisArguments) }
        let urls = shards.map { "\"\($0.url)\"" }.joined(separator: ", ")
        configPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-cluster-\(UUID().uuidString).yaml").path
        let yaml = "cluster:\n  redis: [\(urls)]\n\(clusterExtra)history:\n\(history)"
        try yaml.write(toFile: configPath, atomically: true, encoding: .utf8)
        for _ in 0..<nodeCount { nodes.append(try startNode()) }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: configPath)
    }

    /// A node with every shard up.
    func startNode(extraArguments: [String] = [], environment: [String: String] = [:]) throws -> Daemon {
        let daemon = try Daemon(arguments: ["--config", configPath] + extraArguments, environment: environment)
        for index in shards.indices { _ = try daemon.stderr.waitForLine(containing: "shard \(index) ", timeout: 20) }
        for index in shards.indices { try waitUntilUp(daemon, shard: index) }
        return daemon
    }

    /// Waits for INFO to report the shard up (the node reconnects on its own).
    func waitUntilUp(_ daemon: Daemon, shard: Int, timeout: TimeInterval = 20) throws {
        let client = try daemon.client()
        defer { client.close() }
        try eventually(timeout: timeout, "shard \(shard) up") {
            infoFields(try client.command("INFO"))["shard\(shard)_status"] == "up"
        }
    }

    /// The shard a subject lives on: the engine's FNV-1a hash, which every node computes alike.
    func shard(of subject: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in subject.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return Int(hash % UInt64(shards.count))
    }

    /// Subjects `prefix.<n>` on each shard, `perShard` of each.
    func subjects(prefix: String, perShard: Int) -> [String] {
        var found: [[String]] = Array(repeating: [], count: shards.count)
        var candidate = 0
        while found.contains(where: { $0.count < perShard }) {
            let subject = "\(prefix).\(candidate)"
            candidate += 1
            let shard = shard(of: subject)
            if found[shard].count < perShard { found[shard].append(subject) }
        }
        return found.flatMap { $0 }
    }
}

/// A connected client that read the greeting, and the epoch it named.
func connectReadingEpoch(_ daemon: Daemon) throws -> (LineClient, String) {
    let client = try LineClient(port: daemon.port, timeout: 15)
    let greeting = try client.readLine()
    let epoch = greeting.split(separator: " ").first { $0.hasPrefix("epoch=") }?.dropFirst(6) ?? ""
    return (client, String(epoch))
}

/// `MSG <subject> <seq> <payload>` split up.
struct ReceivedMessage: Equatable {
    let subject: String
    let seq: UInt64
    let payload: String

    init?(_ line: String) {
        let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "MSG", let seq = UInt64(parts[2]) else { return nil }
        subject = String(parts[1])
        self.seq = seq
        payload = String(parts[3])
    }
}
