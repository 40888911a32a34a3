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

/// The test CA is made with the openssl command (TestPKI), which the browser tests over wss:// need beside Chromium.
private let chromiumAndOpenSSLInstalled = chromiumInstalled
    && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

extension BrowserTests {
    /// A page on another origin, served by a web application's backend (browser_app.py) with the JavaScript
    /// client's browser build, connects over wss:// (Chromium trusts the test CA's server certificate by its public
    /// key) with a 6 s JWT the backend mints with PyJWT. It subscribes and sees a message from nc, publishes to nc,
    /// and is refused a subject its token denies (SUB secret.x) and one it does not grant (PUB page.out). Its token
    /// function is asked ahead of each expiry and the fresh token goes as AUTH on the live connection: past the
    /// first token's exp and token_expiry_grace (when a connection that did not refresh is closed) the page still
    /// receives, without having had an auth-expired push. Once a reload takes its origin off
    /// http_allowed_origins, the reloaded page's wss:// connection is refused (403 before the upgrade) and its
    /// HTTP publish is blocked: nothing it sent reaches nc.
    @Test(.enabled(if: chromiumAndOpenSSLInstalled,
                   "chromium, chromium-driver or openssl is not installed (./dev deps installs them)"))
    func pageOnAnotherOriginUsesWSSWithRefreshedTokensUntilItsOriginIsRefused() throws {
        let pki = try TestPKI()
        let secret = pki.path("token-secret")
        try "browser-secret-\(UUID().uuidString)\n".write(toFile: secret, atomically: true, encoding: .utf8)
        // The client asks for the next token half way through a short one's life: 3 s ahead of expiry, a margin
        // for a loaded machine (the page must not get the auth-expired push).
        let ttl = 6, grace = 2
        let clientScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/FanoutConsole/Page/fanout.browser.js").path
        let (backend, appPort) = try CrossOriginPage.startBackend([
            "--client-script", clientScript, "--secret-file", secret, "--sub", "page-user", "--ttl", String(ttl),
            "--publish", "page.in", "--subscribe", "page.>", "--subscribe-deny", "secret.>",
        ])
        defer { withExtendedLifetime(backend) {} }
        let config = pki.path("fanoutd.yaml")
        func configure(allowing origin: String) throws {
            try """
                https_listen: "127.0.0.1:0"
                tls_cert: "\(pki.path("server.pem"))"
                tls_key: "\(pki.path("server-key.pem"))"
                token_secret_file: "\(secret)"
                token_expiry_grace: \(grace)
                http_allowed_origins: ["\(origin)"]

                """.write(toFile: config, atomically: true, encoding: .utf8)
        }
        let origin = "http://127.0.0.1:\(appPort)"
        try configure(allowing: origin)
        let daemon = try Daemon(arguments: ["--config", config])
        let httpsLine = try daemon.stderr.waitForLine(containing: "serving HTTPS on https://", timeout: 10)
        let httpsAddress = httpsLine.components(separatedBy: "https://").last!.components(separatedBy: "/").first!

        // nc on the test's side, with a token of its own for everything.
        let claims = #"{"sub": "nc", "exp": "+300", "fanout": {"publish": [">"], "subscribe": [">"]}}"#
        let mint = try ExternalProgram("python3", [try fixture("mint_token.py"), "HS256", secret, claims])
            .finish(timeout: 20)
        let ncToken = try #require(mint.stdout.first, "\(mint.stderr)")
        func connect() throws -> Netcat {
            let client = try Netcat(port: daemon.port)
            _ = try client.output.waitForLine(containing: "+HELLO", timeout: 10)
            try client.send("AUTH \(ncToken)\n")
            _ = try client.output.waitForLine(containing: "+OK", timeout: 10)
            return client
        }
        let subscriber = try connect()
        try subscriber.send("SUB page.>\n")
        _ = try subscriber.output.waitForLine(containing: "+OK 1", timeout: 10)
        let publisher = try connect()
        var replies = 1
        func publish(_ line: String) throws {
            try publisher.send("PUB \(line)\n")
            replies += 1
            _ = try publisher.output.waitForLine(containing: "+OK", after: replies - 1, timeout: 10)
        }

        var page = URLComponents(string: origin + "/client")!
        page.queryItems = [URLQueryItem(name: "ws", value: "wss://\(httpsAddress)/ws")]
        let trust = "--ignore-certificate-errors-spki-list=\(try pki.spkiSHA256(of: "server"))"
        let started = Date()
        let browser = try ExternalProgram("python3", [try fixture("browser_checks.py"), "client", page.string!, trust],
                                          interactive: true)
        // On a failure here the script is told by the end of its input and quits Chromium itself; dropped, it would
        // be killed and leave chromedriver and Chromium running.
        var finished = false
        defer { if !finished { browser.closeInput(); _ = browser.finish(timeout: 40) } }
        func waitForStep(_ name: String) throws {
            _ = try browser.stdout.waitForLine(containing: "STEP \(name)", timeout: 60)
        }
        try waitForStep("subscribed")
        try publish("page.news hello from nc")
        try browser.sendLine("go")
        try waitForStep("published")
        #expect(try subscriber.output.waitForLine(containing: "MSG page.in ", timeout: 10)
            .hasSuffix(" hello from the page"))

        // The page's connection outlives its first token: the backend mints a token whose iat is past the first
        // one's exp + grace (when the daemon closes a connection that has not refreshed), and then nc publishes.
        func seconds(_ name: String, in line: String) throws -> Int {
            let word = line.split(separator: " ").first { $0.hasPrefix(name + "=") }
            return try #require(word.flatMap { Int($0.dropFirst(name.count + 1)) }, "no \(name) in \(line)")
        }
        let firstExpiry = try seconds("exp", in: try backend.stdout.waitForLine(containing: "TOKEN 1 ", timeout: 10))
        var minted = 1
        do {
            while try seconds("iat", in: try backend.stdout.waitForLine(containing: "TOKEN ", after: minted,
                                                                        timeout: 20)) <= firstExpiry + grace {
                minted += 1
            }
        } catch {
            throw TestFailure("no token asked past the first one's exp + grace (\(minted) minted): \(error)")
        }
        minted += 1
        try publish("page.news after the first token")
        try browser.sendLine("go")
        try waitForStep("refreshed")
        #expect(minted >= 2, "the page asked its backend for fresh tokens")

        try configure(allowing: "https://app.example")
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        try browser.sendLine("go")
        try waitForStep("refused")
        // The refused page's publish never ran: the next page.in message after the page's own is this marker.
        try publish("page.in marker")
        #expect(try subscriber.output.waitForLine(containing: "MSG page.in ", after: 1, timeout: 10)
            .hasSuffix(" marker"))
        try browser.sendLine("go")
        let run = browser.finish(timeout: 60)
        finished = true
        #expect(run.status == 0 && run.stdout.contains("ok browser"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
        let seen = run.stdout.filter { !$0.hasPrefix("STEP ") }.joined(separator: "; ")
        print("browser over wss:// with tokens: \(minted) minted, \(Date().timeIntervalSince(started)) s: \(seen)")
    }
}
