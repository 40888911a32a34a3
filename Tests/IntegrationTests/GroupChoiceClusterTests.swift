import FanoutTestSupport
import Foundation
import Testing

/// A group's members on several nodes: every message goes to exactly one member cluster-wide, and each member
/// should take an even share whatever node it is on.
@Suite("Group choice on several nodes", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct GroupChoiceClusterTests {
    /// Two members on each of two nodes, 2,000 jobs published on the first: each job reaches one member, and
    /// every member's share should be within 30% of the mean. First come, the node whose claims reached the
    /// shard first took all 2,000; by turns weighed by each node's members (`RedisEngine+Groups.swift`) both
    /// take work, and their shares are near even.
    @Test func membersOnEveryNodeTakeEvenShares() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2)
        var members: [LineClient] = []
        for node in rig.nodes {
            for _ in 0..<2 {
                let member = try node.client(timeout: 15)
                #expect(try member.command("QSUB workers jobs.x") == "+OK 1")
                members.append(member)
            }
        }
        let publisher = try rig.nodes[0].client(timeout: 15)
        let total = 2000
        try publisher.send((1...total).map { "PUB jobs.x job-\($0)\n" }.joined())
        for _ in 1...total { #expect(try publisher.readLine().hasPrefix("+OK ")) }
        var shares = Array(repeating: 0, count: members.count)
        var seen: [String: Int] = [:]
        let deadline = Date().addingTimeInterval(30)
        while shares.reduce(0, +) < total && Date() < deadline {
            for (index, member) in members.enumerated() {
                for line in try member.pushes() where line.hasPrefix("MSG ") {
                    shares[index] += 1
                    seen[line, default: 0] += 1
                }
            }
        }
        #expect(shares.reduce(0, +) == total, "every job reached a member: \(shares)")
        #expect(seen.values.allSatisfy { $0 == 1 }, "each job to exactly one member")
        #expect(shares.allSatisfy { $0 > 0 }, "the nodes take turns: \(shares)")
        let mean = Double(total) / Double(members.count)
        // Turns go by runs of up to 64 messages, so within 30% rather than exact.
        #expect(shares.allSatisfy { abs(Double($0) - mean) <= mean * 0.3 }, "shares by node: \(shares)")
    }
}
