import Foundation
import Testing

private let refusal = "-ERR denied clients cannot publish to $presence. subjects"

/// A connection of an auth-on server that has read the greeting and authenticated with `token`.
private func login(_ daemon: Daemon, _ token: String) throws -> LineClient {
    let client = try LineClient(port: daemon.port)
    #expect(try client.readLine().contains(" auth=required "))
    #expect(try client.command("AUTH \(token)") == "+OK")
    return client
}

/// An HMAC secret in a directory of its own, for tokens minted with `mint_token.py`.
private final class TokenSecret {
    let directory: URL
    var path: String { directory.appendingPathComponent("secret").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-presence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try "secret-of-the-presence-tests\n".write(toFile: path, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// An HS256 token for `subject` with `grant` as its `fanout` claim (JSON).
    func mint(_ subject: String, grant: String) throws -> String {
        let claims = #"{"sub":"\#(subject)","exp":"+120","fanout":\#(grant)}"#
        let run = try ExternalProgram("python3", [try fixture("mint_token.py"), "HS256", path, claims])
            .finish(timeout: 30)
        guard run.status == 0, let token = run.stdout.first else { throw TestFailure("mint: \(run.stderr)") }
        return token
    }
}

/// Every client publish path to `$presence.x` is refused with the exact line (HTTP: 403 `denied`), and a
/// subscriber of `$presence.>` receives nothing. `bearer` is the HTTP publish's token when auth is on.
private func expectEveryPublishRefused(_ daemon: Daemon, publisher: LineClient, watcher: LineClient,
                                       bearer: String?) throws {
    #expect(try watcher.command("SUB $presence.>") == "+OK 1")
    #expect(try publisher.command("PUB $presence.x join id=1,user=-,since_s=0") == refusal)
    #expect(try publisher.command("PUB $presence.chat.room1 leave") == refusal)
    try publisher.send("BPUB $presence.x 4\nfake\n")
    #expect(try publisher.readLine() == refusal)
    #expect(try publisher.command("PING after") == "+PONG after", "the BPUB's bytes were dropped, not read as a line")
    #expect(try publisher.command("ASK $presence.x 100 1 who") == refusal)
    let headers = bearer.map { ["-H", "Authorization: Bearer \($0)"] } ?? []
    let port = try daemon.httpPort()
    for body in ["a join", "two\nlines"] {  // as PUB, and as BPUB
        let answer = try curl(headers + ["-X", "POST", "--data-binary", body,
                                         "http://127.0.0.1:\(port)/publish/$presence.x"])
        #expect(answer.status == 403, "\(answer)")
        #expect(answer.body.first == #"{"error":"denied","message":"clients cannot publish to $presence. subjects"}"#)
    }
    #expect(try watcher.command("PING") == "+PONG", "no forged join or leave arrived before the PONG")
    #expect(try publisher.command("PUB $presencex ordinary") == "+OK 0", "only the $presence. prefix is the server's")
}

@Suite("Presence permissions (1.3)", .threadPerTest, .timeLimit(.minutes(3)))
struct PresencePermissionTests {
    @Test func clientsCannotPublishToPresenceSubjectsWithAuthOff() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        try expectEveryPublishRefused(daemon, publisher: try daemon.client(), watcher: try daemon.client(), bearer: nil)
    }

    /// Even a grant that may publish everywhere cannot publish a join or a leave.
    @Test func clientsCannotPublishToPresenceSubjectsWithAuthOn() throws {
        let secret = try TokenSecret()
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"],
                                environment: ["FANOUTD_TOKEN_SECRET_FILE": secret.path])
        let token = try secret.mint("everything", grant: #"{"publish":[">"],"subscribe":[">"]}"#)
        try expectEveryPublishRefused(daemon, publisher: try login(daemon, token), watcher: try login(daemon, token),
                                      bearer: token)
    }

    /// `$presence.<rest>` is subscribed to with the rights on `<rest>`: SUB, QSUB, RESUME and LAST alike;
    /// `$presence.>` needs rights on `>`. A grant naming `$presence.` subjects themselves gives nothing.
    @Test func subscribingToPresenceNeedsRightsOnTheSubject() throws {
        let secret = try TokenSecret()
        let daemon = try Daemon(environment: ["FANOUTD_TOKEN_SECRET_FILE": secret.path])
        let client = try login(daemon, try secret.mint("alice", grant:
            #"{"subscribe":["chat.x","chat.open.>","$presence.chat.y"]}"#))
        #expect(try client.command("SUB $presence.chat.x") == "+OK 1")
        #expect(try client.command("SUB $presence.chat.open.*") == "+OK 2")
        #expect(try client.command("QSUB g $presence.chat.open.a") == "+OK 3")
        #expect(try client.command("LAST $presence.chat.x 1").hasPrefix("+OK "))
        for command in ["SUB $presence.chat.z", "SUB $presence.chat.y", "SUB $presence.>", "QSUB g $presence.chat.z",
                        "LAST $presence.chat.z 1", "RESUME $presence.chat.z"] {
            let subject = command.split(separator: " ").first { $0.hasPrefix("$presence.") } ?? ""
            #expect(try client.command(command) == "-ERR denied not allowed to subscribe to '\(subject)'", "\(command)")
        }
        let everything = try login(daemon, try secret.mint("ops", grant: #"{"subscribe":[">"]}"#))
        #expect(try everything.command("SUB $presence.>") == "+OK 1")
    }

    /// A reload that takes away the rights on a subject revokes the subscription to its joins and leaves too.
    @Test func reloadRevokesPresenceSubscriptionsWithTheSubject() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-presence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        let original = try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8)
        try original.write(to: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config.path])
        let reader = try login(daemon, "reader-secret-token")
        #expect(try reader.command("SUB $presence.sensors.kitchen $presence.weather") == "+OK 2")
        #expect(try reader.command("SUB $presence.sensors.secret.keys").hasPrefix("-ERR denied "), "subscribe_deny")
        try original.replacingOccurrences(of: "subscribe: [\">\"]", with: "subscribe: [\"weather\"]")
            .write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(try reader.readLine()
            == "-ERR denied revoked: no longer allowed to subscribe to $presence.sensors.kitchen")
        #expect(try reader.command("UNSUB") == "+OK 0", "only $presence.weather was left")
    }
}
