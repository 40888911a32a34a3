import Foundation
import Testing

@Suite("fanout bench over WebSocket and event streams", .threadPerTest, .timeLimit(.minutes(3)))
struct BenchTransportTests {
    /// `--transport websocket` (or `sse`) runs the scenario with TCP subscribers, then WebSocket subscribers
    /// (or event streams), each losing nothing.
    @Test(arguments: [("websocket", "websocket subscribers"), ("sse", "event-stream subscribers")])
    func benchComparesTCPAndBrowserTransportSubscribers(transport: String, label: String) throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let result = try FanoutTool.run(["bench", "--server", "127.0.0.1:\(daemon.port)", "--subscribers", "5",
                                         "--subjects", "2", "--messages", "3000", "--transport", transport,
                                         "--http-server", "127.0.0.1:\(try daemon.httpPort())", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let runs = try #require(report?["results"] as? [[String: Any]])
        #expect(runs.count == 2)
        #expect((runs.last?["target"] as? String)?.contains(label) == true, "\(runs)")
        for run in runs {
            #expect(run["lost"] as? Int == 0)
            #expect(run["delivered"] as? Int == 7500, "3000 messages over 2 subjects with 3 and 2 subscribers")
        }
    }
}
