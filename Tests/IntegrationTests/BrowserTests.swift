import Foundation
import Testing

/// Headless Chromium and its WebDriver, as Debian installs them (./dev deps).
private let chromiumInstalled = ["/usr/bin/chromium", "/usr/bin/chromedriver"].allSatisfy {
    FileManager.default.isExecutableFile(atPath: $0)
}

@Suite("Console in a real browser", .timeLimit(.minutes(3)))
struct BrowserTests {
    /// Headless Chromium, driven by Selenium (browser_checks.py), loads the console through a proxy the test
    /// can cut; the test's side uses the system's nc. The page subscribes to a pattern and shows a message
    /// published from nc; a message published from the page reaches an nc subscriber; and an EventSource
    /// in the page, cut while two messages are published, resumes with each message exactly once.
    @Test(.enabled(if: chromiumInstalled, "chromium and chromium-driver are not installed (./dev deps installs them)"))
    func consoleSubscribesPublishesAndResumes() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("history.yaml")])
        let proxy = try CuttingProxy(forwardingTo: try daemon.httpPort())
        let subscriber = try Netcat(port: daemon.port)
        _ = try subscriber.output.waitForLine(containing: "+HELLO", timeout: 10)
        try subscriber.send("SUB page.>\n")
        _ = try subscriber.output.waitForLine(containing: "+OK 1", timeout: 10)
        let publisher = try Netcat(port: daemon.port)
        _ = try publisher.output.waitForLine(containing: "+HELLO", timeout: 10)
        var replies = 0
        func publish(_ line: String) throws {
            try publisher.send("PUB \(line)\n")
            replies += 1
            _ = try publisher.output.waitForLine(containing: "+OK", after: replies - 1, timeout: 10)
        }

        let page = "http://127.0.0.1:\(proxy.port)/"
        let browser = try ExternalProgram("python3", [try fixture("browser_checks.py"), page, String(daemon.port)],
                                          environment: ProcessInfo.processInfo.environment["FANOUT_SCREENSHOT"].map { ["FANOUT_SCREENSHOT": $0] } ?? [:],
                                          interactive: true)
        func waitForStep(_ name: String) throws {
            _ = try browser.stdout.waitForLine(containing: "STEP \(name)", timeout: 60)
        }
        try waitForStep("subscribed")
        try publish("news.uk hello from nc")
        try browser.sendLine("go")

        try waitForStep("published")
        #expect(try subscriber.output.waitForLine(containing: "MSG page.out", timeout: 10) == "MSG page.out 1 hello from the page")
        try browser.sendLine("go")

        try waitForStep("stream-open")
        try publish("orders.feed order-1")
        try publish("orders.feed order-2")
        try browser.sendLine("go")

        try waitForStep("two-received")
        let before = proxy.accepted
        proxy.cut(holding: true)
        try publish("orders.feed order-3")
        try publish("orders.feed order-4")
        proxy.release()
        try browser.sendLine("go")
        try waitForStep("resumed")
        #expect(proxy.accepted > before, "the page reconnected through the proxy")
        try publish("orders.feed order-5")
        try browser.sendLine("go")

        // 1.2: a group member shows in the subjects table, and answers the page's question.
        try waitForStep("group-joined")
        let responder = try Netcat(port: daemon.port)
        _ = try responder.output.waitForLine(containing: "+HELLO", timeout: 10)
        try responder.send("QSUB workers svc.*\n")
        _ = try responder.output.waitForLine(containing: "+OK 1", timeout: 10)
        try browser.sendLine("go")
        try waitForStep("asked")
        let question = try responder.output.waitForLine(containing: "ASK svc.ping ", timeout: 10)
        let id = question.split(separator: " ")[2]
        #expect(question == "ASK svc.ping \(id) ping?")
        try responder.send("ANSWER \(id) pong\n")
        try browser.sendLine("go")

        let run = browser.finish(timeout: 90)
        #expect(run.status == 0 && run.stdout.contains("ok browser"), "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }

    /// The console opened with `?token=` (as an application links to it) connects with that token and takes
    /// it out of the address bar; its Token box sends a fresh token with AUTH on the live connection, whose
    /// rights apply from then on (a publish refused before is delivered after).
    @Test(.enabled(if: chromiumInstalled, "chromium and chromium-driver are not installed (./dev deps installs them)"))
    func consoleTakesATokenFromItsAddressAndFromItsTokenBox() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("auth.yaml")])
        let page = "http://127.0.0.1:\(try daemon.httpPort())/"
        let browser = try ExternalProgram("python3", [try fixture("console_token_checks.py"), page,
                                                      "reader-secret-token", "sensor-secret-token"])
        let run = browser.finish(timeout: 90)
        #expect(run.status == 0 && run.stdout.contains("ok console-token"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }
}
