import Foundation
import Testing

/// Headless Chromium and its WebDriver, as Debian installs them (./dev deps).
private let chromiumInstalled = ["/usr/bin/chromium", "/usr/bin/chromedriver"].allSatisfy {
    FileManager.default.isExecutableFile(atPath: $0)
}

@Suite("Console in a real browser", .threadPerTest, .timeLimit(.minutes(3)))
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

/// cross_origin_page.html as a web application's backend (browser_app.py) serves it on an origin of its own, with
/// what it is told to connect with: fanoutd's WebSocket URL (`ws://` or `wss://`), and a token, or the URL of the
/// backend's token endpoint, which the page asks before each connect and again when its token expires.
struct CrossOriginPage {
    let appPort: Int
    let webSocket: String
    var token: String?
    var tokenEndpoint: String?

    /// The page's origin: what http_allowed_origins must list for it.
    var origin: String { "http://127.0.0.1:\(appPort)" }

    var url: String {
        var query = [URLQueryItem(name: "ws", value: webSocket)]
        if let token { query.append(URLQueryItem(name: "token", value: token)) }
        if let tokenEndpoint { query.append(URLQueryItem(name: "token_url", value: tokenEndpoint)) }
        var components = URLComponents(string: origin + "/")!
        components.queryItems = query
        return components.string!
    }

    /// Starts browser_app.py (`arguments` are its token options: --secret-file and the claims) and reads back its
    /// port; the program serves until it is dropped.
    static func startBackend(_ arguments: [String] = []) throws -> (backend: ExternalProgram, port: Int) {
        let backend = try ExternalProgram("python3", [try fixture("browser_app.py")] + arguments, interactive: true)
        let line = try backend.stdout.waitForLine(containing: "APP ", timeout: 20)
        guard let port = Int(line.dropFirst("APP ".count)) else { throw TestFailure("no port in \(line)") }
        return (backend, port)
    }
}

extension BrowserTests {
    /// A page on another origin (another port) uses fanoutd while http_allowed_origins lists its origin: over a
    /// WebSocket it subscribes, sees a message from nc and publishes; over HTTP it publishes after a preflight
    /// and reads the answer, and its event stream opens and delivers. Once a reload takes its origin off the list,
    /// the reloaded page's WebSocket, its simple and preflighted publishes and its event stream are refused, and
    /// nothing it sent reaches a subscriber. Run without users, then with a token the page presents.
    @Test(.enabled(if: chromiumInstalled, "chromium and chromium-driver are not installed (./dev deps installs them)"))
    func pageOnAnotherOriginIsServedOnlyWhileItsOriginIsAllowed() throws {
        let (backend, appPort) = try CrossOriginPage.startBackend()
        defer { withExtendedLifetime(backend) {} }
        // Without users, and then with a user whose static token the page presents on every route, so that the
        // page's token paths run (a JWT from the backend's /token takes the same paths).
        let hash = "sha256$ac181fbc2253427f94846b33163749fc$"
            + "ab483b004baa389a0e3fe1b232af5bda05c1c65a51d804068340ecf17421e821"  // of page-secret-token
        for token in [nil, "page-secret-token"] {
            let users = token == nil ? "" : """
                users:
                  page:
                    token_hash: "\(hash)"
                    publish: ["page.>"]
                    subscribe: ["page.>"]

                """
            let config = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-origins-\(UUID()).yaml")
            defer { try? FileManager.default.removeItem(at: config) }
            let allowed = users + "http_allowed_origins: [\"http://127.0.0.1:\(appPort)\"]\n"
            try allowed.write(to: config, atomically: true, encoding: .utf8)
            let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", config.path])
            var page = CrossOriginPage(appPort: appPort, webSocket: "ws://127.0.0.1:\(try daemon.httpPort())/ws")
            page.token = token
            try runCrossOriginChecks(page, daemon: daemon, token: token) {
                let refused = users + "http_allowed_origins: [\"https://app.example\"]\n"
                try refused.write(to: config, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
            }
        }
    }

    /// browser_checks.py's cross-origin steps against `daemon`, with nc on the test's side (authenticated with
    /// `token` when given); `refuseOrigin` makes the daemon refuse the page's origin (a reload) between the allowed
    /// part and the refused one. `chromiumArguments` go to Chromium's command line (trusting a test CA for wss://).
    func runCrossOriginChecks(_ page: CrossOriginPage, daemon: Daemon, token: String? = nil,
                              chromiumArguments: [String] = [], refuseOrigin: () throws -> Void) throws {
        func connect() throws -> Netcat {
            let client = try Netcat(port: daemon.port)
            _ = try client.output.waitForLine(containing: "+HELLO", timeout: 10)
            if let token {
                try client.send("AUTH \(token)\n")
                _ = try client.output.waitForLine(containing: "+OK", timeout: 10)
            }
            return client
        }
        let subscriber = try connect()
        try subscriber.send("SUB page.>\n")
        _ = try subscriber.output.waitForLine(containing: "+OK 1", timeout: 10)
        let publisher = try connect()
        var replies = token == nil ? 0 : 1
        func publish(_ line: String) throws {
            try publisher.send("PUB \(line)\n")
            replies += 1
            _ = try publisher.output.waitForLine(containing: "+OK", after: replies - 1, timeout: 10)
        }
        let browser = try ExternalProgram("python3", [try fixture("browser_checks.py"), "cross-origin", page.url]
                                          + chromiumArguments, interactive: true)
        func waitForStep(_ name: String) throws {
            _ = try browser.stdout.waitForLine(containing: "STEP \(name)", timeout: 60)
        }
        try waitForStep("subscribed")
        try publish("page.in hello from nc")
        try browser.sendLine("go")
        try waitForStep("ws-published")
        #expect(try subscriber.output.waitForLine(containing: "MSG page.ws ", timeout: 10)
            .hasSuffix(" hello over the WebSocket"))
        try browser.sendLine("go")
        try waitForStep("http-published")
        #expect(try subscriber.output.waitForLine(containing: "MSG page.http ", timeout: 10)
            .hasSuffix(" hello over HTTP"))
        try browser.sendLine("go")
        try waitForStep("stream-open")
        try publish("page.es message to the stream")
        try browser.sendLine("go")

        try waitForStep("allowed-done")
        try refuseOrigin()
        try browser.sendLine("go")
        try waitForStep("refused")
        // The refused page's publishes never ran: the next page.http message after the allowed one is this marker.
        try publish("page.http marker")
        #expect(try subscriber.output.waitForLine(containing: "MSG page.http ", after: 1, timeout: 10)
            .hasSuffix(" marker"))
        try browser.sendLine("go")
        let run = browser.finish(timeout: 60)
        #expect(run.status == 0 && run.stdout.contains("ok browser"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }
}
