import FanoutEventLoop
import Foundation
@testable import FanoutServer
import Testing

extension InProcess {
    /// Mass leaves go out a slice per loop pass: a connection that leaves 1,000 subjects at once never makes one
    /// pass publish them all, and every leave still goes out, in join order, after its subject's join.
    @Suite("Presence slices", .timeLimit(.minutes(1)))
    struct PresenceSliceTests {
        @Test func aThousandLeavesGoOutOverSeveralPasses() throws {
            let harness = try ServerHarness { $0.presence.patterns = ["many.>"] }
            let watcher = try harness.connect()
            #expect(try harness.command("SUB $presence.many.>", on: watcher) == "+OK 1")
            let member = try harness.connect()
            let subjects = (0..<1000).map { "many.\(($0 * 997) % 1000)" }
            #expect(try harness.command("SUB " + subjects.joined(separator: " "), on: member) == "+OK 1000")
            let presence = harness.server.presence
            try harness.run(until: { presence.eventsPublished == 1000 }, "the joins")
            #expect(try harness.linesBeforeFence(of: watcher).count == 1000)
            member.close()
            try harness.run(until: { !harness.isConnected(member) }, "the member's close")
            var perPass: [UInt64] = []
            var before = presence.eventsPublished
            while presence.eventsPublished < 2000 && perPass.count < 100 {
                harness.step()
                perPass.append(presence.eventsPublished - before)
                before = presence.eventsPublished
            }
            #expect(presence.eventsPublished == 2000)
            #expect(perPass.allSatisfy { $0 <= UInt64(Presence.slice) }, "events per pass: \(perPass)")
            #expect(perPass.filter { $0 > 0 }.count >= 1000 / Presence.slice)
            // How long each membership lasted depends on the machine's speed; the rest of the payload does not.
            let leaves = try harness.linesBeforeFence(of: watcher).map {
                $0.replacingOccurrences(of: #"since_s=[0-9]+"#, with: "since_s=*", options: .regularExpression)
            }
            #expect(leaves == subjects.map {
                "MSG $presence.\($0) 2 leave id=\(member.id),user=-,since_s=*,reason=closed"
            })
        }
    }
}
