import Foundation
import Testing

/// A group under sustained load spreads each run over as many members as the run's bytes fill 4 KiB turns, and
/// carries its round robin on from run to run, so that every member still takes an even share and each message
/// goes to exactly one member; an idle group spreads a burst message by message (`aBurstIsSpreadOverEveryMember`).
@Suite("Group pacing", .threadPerTest, .timeLimit(.minutes(2)))
struct GroupPacingIntegrationTests {
    @Test func runsBackToBackGoToAMemberEachInTurn() throws {
        let daemon = try Daemon()
        let members = try (0..<10).map { _ in try daemon.client(timeout: 30) }
        for member in members { #expect(try member.command("QSUB workers pace.*") == "+OK 1") }
        let publisher = try daemon.client(timeout: 30)
        // 1,000 runs of 16 messages of about 220 bytes (3.5 KiB: one turn), the subject changing between runs, all
        // in one write: the server reads them back to back for milliseconds, and once they have lasted 2 ms the
        // group counts as under load (a quarter of the runs at least, even in a release build).
        let runs = 1000, perRun = 16
        let filler = String(repeating: "x", count: 190)
        var batch = ""
        for run in 0..<runs {
            for index in 0..<perRun { batch += "PUB pace.\(run % 2 == 0 ? "a" : "b") r\(run)-m\(index)-\(filler)\n" }
        }
        try publisher.send(batch)
        for _ in 0..<(runs * perRun) { #expect(try publisher.readLine() == "+OK 1") }

        var owner: [String: Int] = [:]
        var membersOfRun: [Int: Set<Int>] = [:]
        var shares: [Int] = []
        for (number, member) in members.enumerated() {
            let lines = try member.pushes(beforeFence: "f")
            shares.append(lines.count)
            var lastSeq: [String: UInt64] = [:]
            for line in lines {
                let fields = line.split(separator: " ")
                guard fields.count == 4, fields[0] == "MSG", let seq = UInt64(fields[2]) else {
                    Issue.record("unexpected push \(line)")
                    continue
                }
                let subject = String(fields[1])
                #expect(seq > lastSeq[subject, default: 0], "a member sees an increasing subsequence of \(subject)")
                lastSeq[subject] = seq
                let payload = String(fields[3])
                #expect(owner.updateValue(number, forKey: payload) == nil, "\(payload) went to one member")
                if let run = Int(payload.dropFirst().prefix { $0 != "-" }) {
                    membersOfRun[run, default: []].insert(number)
                }
            }
        }
        #expect(owner.count == runs * perRun, "every message reached a member")
        let mean = runs * perRun / members.count
        #expect(shares.allSatisfy { $0 >= mean / 2 && $0 <= mean * 3 / 2 }, "even shares: \(shares)")
        let paced = try Int(infoFields(publisher.command("INFO"))["group_paced_runs"] ?? "") ?? 0
        #expect(paced >= runs / 4, "runs were paced: \(paced)")
        // A paced run of one turn goes to one member (two when a turn ends inside it); unpaced, it went to ten.
        let narrow = membersOfRun.values.filter { $0.count <= 2 }.count
        #expect(narrow >= runs / 4, "\(narrow) of \(runs) runs reached at most two members")
    }
}
