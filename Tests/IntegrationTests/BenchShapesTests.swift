import Foundation
import Testing

/// The load generator's protocol 1.2 shapes, each a short bounded run against a real fanoutd that must count
/// exactly what the protocol promises.
@Suite("fanout bench: groups, questions and BPUB", .threadPerTest, .timeLimit(.minutes(1)))
struct BenchShapesTests {
    private func results(_ arguments: [String], _ daemon: Daemon) throws -> [[String: Any]] {
        let result = try FanoutTool.run(["bench", "--server", "127.0.0.1:\(daemon.port)", "--json"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        return try #require(report?["results"] as? [[String: Any]])
    }

    /// A group of 5 members shares the messages: each one is delivered once, not 5 times.
    @Test func groupDeliversEachMessageOnce() throws {
        let daemon = try Daemon()
        let arguments = ["--subscribers", "5", "--group", "workers", "--messages", "3000"]
        let run = try #require(try results(arguments, daemon).first)
        #expect(run["delivered"] as? Int == 3000)
        #expect(run["lost"] as? Int == 0)
    }

    /// Questions to 3 responders close with 3 answers each (max-answers 0), and with 1 when capped at 1.
    @Test(arguments: [(0, 3), (1, 1)])
    func questionsGatherTheirAnswers(maxAnswers: Int, perQuestion: Int) throws {
        let daemon = try Daemon()
        let run = try #require(try results(["--ask", "--subscribers", "3", "--max-answers", String(maxAnswers),
                                            "--messages", "500", "--window", "10"], daemon).first)
        #expect(run["published"] as? Int == 500)
        #expect(run["delivered"] as? Int == 500 * perQuestion)
        #expect(run["lost"] as? Int == 0)
    }

    /// A BPUB payload holding an LF reaches every subscriber as BMSG, counted whole.
    @Test func bpubIsDeliveredAsBMSG() throws {
        let daemon = try Daemon()
        let run = try #require(try results(["--bpub", "--payload", "70000", "--subscribers", "3", "--messages", "200",
                                            "--window", "5"], daemon).first)
        #expect(run["delivered"] as? Int == 600)
        #expect(run["lost"] as? Int == 0)
    }
}
