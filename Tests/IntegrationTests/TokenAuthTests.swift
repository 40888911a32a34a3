import Foundation
import Testing

/// Keys made for one test: an HMAC secret, an RSA and a P-256 key pair (private keys sign, as the
/// application's backend does with PyJWT; public ones are fanoutd's), in a directory removed afterwards.
private final class TokenKeys {
    let directory: URL
    var secret: String { directory.appendingPathComponent("secret").path }
    var rsaPrivate: String { directory.appendingPathComponent("rsa.pem").path }
    var rsaPublic: String { directory.appendingPathComponent("rsa.pub.pem").path }
    var ecPrivate: String { directory.appendingPathComponent("ec.pem").path }
    var ecPublic: String { directory.appendingPathComponent("ec.pub.pem").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try "first-secret-of-the-application-backend\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let made = try ExternalProgram("python3", [try fixture("mint_token.py"), "--keys", directory.path])
            .finish(timeout: 60)
        guard made.status == 0 else { throw TestFailure("key generation failed: \(made.stderr)") }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A token signed with `alg` and the key in `keyFile`; `exp` etc. given as "+N" are N seconds from now.
    func mint(_ alg: String, _ keyFile: String, _ claims: String) throws -> String {
        let run = try ExternalProgram("python3", [try fixture("mint_token.py"), alg, keyFile, claims])
            .finish(timeout: 30)
        guard run.status == 0, let token = run.stdout.first, !token.isEmpty else {
            throw TestFailure("mint_token.py failed: \(run.stderr)")
        }
        return token
    }

    /// A daemon that verifies tokens with the secret and the RSA public key (or the P-256 one), HTTP on.
    func daemon(ec: Bool = false, _ environment: [String: String] = [:]) throws -> Daemon {
        var settings = ["FANOUTD_TOKEN_PUBLIC_KEY_FILE": ec ? ecPublic : rsaPublic,
                        "FANOUTD_HTTP_LISTEN": "127.0.0.1:0", "FANOUTD_TOKEN_AUDIENCE": "fanout"]
        if !ec { settings["FANOUTD_TOKEN_SECRET_FILE"] = secret }
        return try Daemon(environment: settings.merging(environment) { $1 })
    }
}

/// The grant of most tests: chat.room42 to read, chat.room42.in to write.
private let roomGrant = #""fanout":{"subscribe":["chat.room42","chat.room42.>"],"publish":["chat.room42.in"]}"#

private func login(_ daemon: Daemon, _ token: String) throws -> LineClient {
    let client = try LineClient(port: daemon.port)
    #expect(try client.readLine().contains(" auth=required "))
    #expect(try client.command("AUTH \(token)") == "+OK")
    return client
}

/// `token` (whose grant reads chat.room42 and chat.room42.> and writes chat.room42.in) authenticates a WebSocket
/// by each way a browser presents it, an event stream by `?token=`, and an HTTP publish by Bearer, which the
/// stream receives.
private func expectAcceptedOverEveryHTTPWay(_ token: String, port: Int, publishing payload: String) throws {
    for way in ["query", "bearer", "subprotocol"] {
        let check = try ExternalProgram("python3", [try fixture("token_websocket.py"), String(port), way, token])
            .finish(timeout: 30)
        #expect(check.status == 0, "WebSocket with the token as \(way): \(check.stdout) \(check.stderr)")
    }
    let stream = try eventStream(port: port, query: "subject=chat.room42.in&token=\(token)")
    _ = try stream.stdout.waitForLine(containing: ": +OK 1", timeout: 10)
    let published = try curl(["-X", "POST", "-H", "Authorization: Bearer \(token)", "--data-binary", payload,
                              "http://127.0.0.1:\(port)/publish/chat.room42.in"])
    #expect(published.status == 200 && published.body.first?.hasPrefix(#"{"receivers":1"#) == true, "\(published)")
    _ = try stream.stdout.waitForLine(containing: payload, timeout: 10)
}

@Suite("Application tokens (JWT)", .threadPerTest, .timeLimit(.minutes(3)))
struct TokenAuthTests {
    @Test func eachAlgorithmAuthenticatesOverTCP() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon()
        for (alg, key) in [("HS256", keys.secret), ("HS512", keys.secret), ("RS256", keys.rsaPrivate)] {
            let token = try keys.mint(alg, key, #"{"sub":"u-\#(alg)","aud":"fanout","exp":"+60",\#(roomGrant)}"#)
            let client = try login(daemon, token)
            #expect(try client.command("SUB chat.room42") == "+OK 1", "\(alg)")
        }
        let ecDaemon = try keys.daemon(ec: true)
        let token = try keys.mint("ES256", keys.ecPrivate, #"{"sub":"u-es","aud":["x","fanout"],\#(roomGrant)}"#)
        #expect(try login(ecDaemon, token).command("SUB chat.room42") == "+OK 1")
        let hmacToEC = try keys.mint("HS256", keys.secret, #"{"sub":"u-es","aud":"fanout"}"#)
        let client = try LineClient(port: ecDaemon.port)
        _ = try client.readLine()
        #expect(try client.command("AUTH \(hmacToEC)") == "-ERR denied invalid token", "the key pins ES256")
    }

    @Test func aBadTokenIsRefusedWithItsReasonInTheLogOnly() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon()
        let token = try keys.mint("HS256", keys.secret, #"{"sub":"eve","aud":"fanout","exp":"-120",\#(roomGrant)}"#)
        let client = try LineClient(port: daemon.port)
        _ = try client.readLine()
        #expect(try client.command("AUTH \(token)") == "-ERR denied invalid token")
        let line = try daemon.stderr.waitForLine(containing: "AUTH failed", timeout: 10)
        #expect(line.contains("reason"), "\(line)")
        #expect(line.lowercased().contains("expir"), "the reason is the expiry: \(line)")
        let signature = String(token.split(separator: ".").last!)
        #expect(!daemon.stderr.all.contains { $0.contains(signature) || $0.contains(token) },
                "no token text in the log")
    }

    @Test func permissionsComeFromTheClaimAndClientsNamesTheUser() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon()
        let reader = try login(daemon, try keys.mint("HS256", keys.secret,
                                                     #"{"sub":"reader-1","aud":"fanout",\#(roomGrant)}"#))
        #expect(try reader.command("SUB chat.room42 chat.room42.in") == "+OK 2")
        #expect(try reader.command("SUB chat.room43").hasPrefix("-ERR denied "))
        #expect(try reader.command("PUB chat.room42.in hello") == "+OK 1")
        #expect(try readMessage(reader) == ("chat.room42.in", 1, "hello"))
        #expect(try reader.command("PUB chat.room42 not-mine").hasPrefix("-ERR denied "))
        #expect(try reader.command("CLIENTS").hasPrefix("-ERR denied "), "not an admin")
        let admin = try login(daemon, try keys.mint("RS256", keys.rsaPrivate,
                                                    #"{"sub":"ops","aud":"fanout","fanout":{"admin":true}}"#))
        let clients = try admin.command("CLIENTS")
        #expect(clients.contains(",user=reader-1") && clients.contains(",user=ops"), "\(clients)")
        #expect(infoFields(try admin.command("INFO"))["token_auth"] == "on")
    }

    @Test func browsersPresentTheTokenOverHTTP() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon()
        let port = try daemon.httpPort()
        let token = try keys.mint("HS256", keys.secret, #"{"sub":"web","aud":"fanout","exp":"+120",\#(roomGrant)}"#)
        try expectAcceptedOverEveryHTTPWay(token, port: port, publishing: "from-http")
        let denied = try curl(["-X", "POST", "-H", "Authorization: Bearer \(token)", "--data-binary", "x",
                               "http://127.0.0.1:\(port)/publish/chat.room42"])
        #expect(denied.status == 403, "\(denied)")
        let forged = try curl(["-X", "POST", "-H", "Authorization: Bearer \(token.dropLast(2))xx", "--data-binary", "x",
                               "http://127.0.0.1:\(port)/publish/chat.room42.in"])
        #expect(forged.status == 401 && forged.body.first?.contains(#""denied""#) == true, "\(forged)")
        let refused = try curl(["http://127.0.0.1:\(port)/events?subject=chat.room43&token=\(token)"])
        #expect(refused.status == 403, "\(refused)")
    }

    /// A token near the 32 KiB a token may hold (600 patterns) fits an HTTP request head on every way a browser
    /// presents one; a head past 40 KiB is still refused.
    @Test func aLargeTokenFitsEveryHTTPWay() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon()
        let port = try daemon.httpPort()
        let padding = (0..<600).map { "\"padding.subject.number.\($0).>\"" }.joined(separator: ",")
        let grant = #""fanout":{"subscribe":["chat.room42","chat.room42.>",\#(padding)],"publish":["chat.room42.in"]}"#
        let token = try keys.mint("HS256", keys.secret, #"{"sub":"big","aud":"fanout","exp":"+120",\#(grant)}"#)
        #expect(token.utf8.count > 20_000 && token.utf8.count < 32 * 1024, "\(token.utf8.count) bytes")
        try expectAcceptedOverEveryHTTPWay(token, port: port, publishing: "large")
        let tooLong = try curl(["-H", "X-Padding: \(String(repeating: "p", count: 41 * 1024))",
                                "http://127.0.0.1:\(port)/healthz"])
        #expect(tooLong.status == 431, "\(tooLong)")
    }

    /// A WebSocket presenting a JWT whose user holds max_connections_per_user already is refused with 429 before
    /// the upgrade, as one with a users-file token is.
    @Test func aWebSocketWithAJWTOverItsUsersConnectionLimitGets429() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon(["FANOUTD_MAX_CONNECTIONS_PER_USER": "1"])
        let port = try daemon.httpPort()
        let token = try keys.mint("HS256", keys.secret, #"{"sub":"carol","aud":"fanout","exp":"+120",\#(roomGrant)}"#)
        let first = try login(daemon, token)
        #expect(try first.command("PING") == "+PONG")
        let upgrade = ["-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                       "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
        for (way, extra, url) in [("bearer", ["-H", "Authorization: Bearer \(token)"], "http://127.0.0.1:\(port)/ws"),
                                  ("query", [], "http://127.0.0.1:\(port)/ws?token=\(token)"),
                                  ("subprotocol", ["-H", "Sec-WebSocket-Protocol: fanout, bearer.\(token)"],
                                   "http://127.0.0.1:\(port)/ws")] {
            let refused = try curl(upgrade + extra + [url])
            #expect(refused.status == 429 && refused.body.joined().contains("max_connections_per_user 1"),
                    "\(way): \(refused)")
        }
    }

    /// An event stream cannot send AUTH: when its token expires it gets the `auth-expired` error event, and at
    /// the grace's end the second one and the end of the stream.
    @Test func anEventStreamIsToldOfItsTokensExpiryAndClosedAfterTheGrace() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon(["FANOUTD_TOKEN_LEEWAY": "0", "FANOUTD_TOKEN_EXPIRY_GRACE": "1"])
        let port = try daemon.httpPort()
        // Five seconds, not two: on a loaded machine minting, starting curl and its request took over two, and
        // the stream was refused as expired before it began.
        let token = try keys.mint("HS256", keys.secret, #"{"sub":"web","aud":"fanout","exp":"+5",\#(roomGrant)}"#)
        let stream = try eventStream(port: port, query: "subject=chat.room42&token=\(token)")
        _ = try stream.stdout.waitForLine(containing: ": +OK 1", timeout: 10)
        let told = try stream.stdout.waitForLine(containing: #""auth-expired""#, timeout: 10)
        #expect(told.contains("send AUTH with a fresh token within 1s"), "\(told)")
        let closing = try stream.stdout.waitForLine(containing: #""auth-expired""#, after: 1, timeout: 10)
        #expect(closing.contains("closing"), "\(closing)")
        // Bounded by 30 s, not 10: the server closes right after the last event, and a run of the whole suite on
        // a shared machine once stalled every test process for over 10 s here (every suite's tests finished in
        // the same second after it), which a 10 s wait took for a stream never closed.
        let ended = stream.finish(timeout: 30)
        #expect(ended.status == 0, "curl saw the stream end: \(ended.stdout)")
        _ = try daemon.stderr.waitForLine(containing: "reason=auth-expired", timeout: 10)
    }

    /// A key that cannot be read or used stops the daemon at start with exit 78, naming the setting;
    /// `--check-config` names the files and never prints what they hold.
    @Test func aBadKeyIsAConfigurationErrorAndNoKeyIsPrinted() throws {
        let keys = try TokenKeys()
        let missing = try runDaemon(["--check-config"], environment: ["FANOUTD_TOKEN_SECRET_FILE": "/nonexistent/secret"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("token_secret_file: cannot read /nonexistent/secret"), "\(missing.stderr)")
        let swapped = try runDaemon(["--listen", "127.0.0.1:0"], environment: ["FANOUTD_TOKEN_SECRET_FILE": keys.rsaPublic])
        #expect(swapped.status == 78, "a PEM key is no HMAC secret")
        #expect(swapped.stderr.contains("token_secret_file: "), "\(swapped.stderr)")
        let checked = try runDaemon(["--check-config"], environment: ["FANOUTD_TOKEN_SECRET_FILE": keys.secret,
                                                                      "FANOUTD_TOKEN_PUBLIC_KEY_FILE": keys.ecPublic])
        #expect(checked.status == 0)
        #expect(checked.stdout.contains("token_secret_file: \(keys.secret)"), "\(checked.stdout)")
        #expect(!checked.stdout.contains("first-secret") && !checked.stdout.contains("BEGIN"), "\(checked.stdout)")
    }

    @Test func aReloadReplacingTheSecretRefusesOldTokensAndAcceptsNewOnes() throws {
        let keys = try TokenKeys()
        let daemon = try keys.daemon()
        let claims = #"{"sub":"u","aud":"fanout",\#(roomGrant)}"#
        let old = try keys.mint("HS256", keys.secret, claims)
        let kept = try login(daemon, old)
        try "the-renewed-secret-of-the-backend\n".write(toFile: keys.secret, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        let client = try LineClient(port: daemon.port)
        _ = try client.readLine()
        #expect(try client.command("AUTH \(old)") == "-ERR denied invalid token", "signed with the old secret")
        let fresh = try keys.mint("HS256", keys.secret, claims)
        #expect(try login(daemon, fresh).command("SUB chat.room42") == "+OK 1")
        #expect(try kept.command("SUB chat.room42") == "+OK 1", "an authenticated connection keeps its token")
        try "".write(toFile: keys.secret, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10)
        #expect(try login(daemon, fresh).command("PING") == "+PONG", "a bad file keeps the running keys")
    }
}
