import Foundation
import Testing

/// The ids CLIENTS lists, oldest first, with each one's transport.
private func listedClients(via client: LineClient) throws -> [(id: String, transport: String)] {
    let reply = try client.command("CLIENTS")
    guard reply.hasPrefix("+OK ") else { throw TestFailure("CLIENTS: \(reply)") }
    return reply.split(separator: " ").dropFirst(2).map { entry in
        let fields = Dictionary(entry.split(separator: ",").map { field -> (String, String) in
            let pair = field.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), pair.count > 1 ? String(pair[1]) : "")
        }) { first, _ in first }
        return (fields["id"] ?? "", fields["transport"] ?? "")
    }
}

/// A connection of an auth-on server that has read the greeting and authenticated with `token`.
private func login(_ daemon: Daemon, _ token: String) throws -> LineClient {
    let client = try LineClient(port: daemon.port)
    #expect(try client.readLine().contains(" auth=required "))
    #expect(try client.command("AUTH \(token)") == "+OK")
    return client
}

@Suite("KICK (1.3)", .threadPerTest, .timeLimit(.minutes(3)))
struct KickTests {
    /// By id: the kicker hears `+OK 1`, the kicked connection its reason and then the end of the stream; the
    /// reason defaults to "by an administrator"; the server logs who kicked whom.
    @Test func kickByIDTellsTheReasonAndCloses() throws {
        let daemon = try Daemon()
        let admin = try daemon.client()
        let first = try daemon.client()
        let second = try daemon.client()
        #expect(try first.command("SUB chat.room1") == "+OK 1")
        let ids = try listedClients(via: admin).map(\.id)
        #expect(ids.count == 3)
        #expect(try admin.command("KICK \(ids[1]) flooding the room") == "+OK 1")
        #expect(try first.readUntilClosed() == ["-ERR kicked flooding the room"])
        _ = try daemon.stderr.waitForLine(containing: "reason=flooding the room", timeout: 10)
        #expect(try admin.command("KICK \(ids[2])") == "+OK 1")
        #expect(try second.readUntilClosed() == ["-ERR kicked by an administrator"])
        #expect(try listedClients(via: admin).map(\.id) == [ids[0]], "both are gone")
        #expect(try admin.command("PUB chat.room1 anyone") == "+OK 0", "the kicked subscriber left the subject")
    }

    @Test func kickOfNobodyClosesNothing() throws {
        let daemon = try Daemon()
        let admin = try daemon.client()
        let bystander = try daemon.client()
        #expect(try admin.command("KICK 999999") == "+OK 0")
        #expect(try admin.command("KICK user=nobody") == "+OK 0", "no connection is authenticated as anyone")
        #expect(try bystander.command("PING") == "+PONG")
    }

    /// The kicker may kick itself: its `+OK 1` comes before its farewell.
    @Test func aConnectionMayKickItself() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        let id = try listedClients(via: client)[0].id
        try client.sendLine("KICK \(id) leaving")
        #expect(try client.readUntilClosed() == ["+OK 1", "-ERR kicked leaving"])
    }

    /// A `<node>/<id>` on a standalone server names a node it is not; syntax errors are answered.
    @Test func syntaxErrorsAndOtherNodes() throws {
        let daemon = try Daemon()
        let client = try daemon.client()
        #expect(try client.command("KICK abc/1") ==
            "-ERR syntax abc/1 is a client of node abc; send KICK to a connection of that node")
        for bad in ["KICK", "KICK x1", "KICK user=", "KICK 1 " + String(repeating: "r", count: 257)] {
            #expect(try client.command(bad).hasPrefix("-ERR syntax "), "\(bad.prefix(20))")
        }
        #expect(try client.command("PING") == "+PONG", "still served")
    }

    /// Users file: KICK needs `admin: true`; `user=<user>` closes every connection of that user.
    @Test func usersFileAdministratorKicksAUsersConnections() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("auth.yaml")])
        let unauthenticated = try LineClient(port: daemon.port)
        #expect(try unauthenticated.readLine().contains(" auth=required "))
        #expect(try unauthenticated.command("KICK user=sensors").hasPrefix("-ERR auth-required "))
        let sensors = [try login(daemon, "sensor-secret-token"), try login(daemon, "sensor-secret-token")]
        let reader = try login(daemon, "reader-secret-token")
        #expect(try sensors[0].command("KICK user=reader") == "-ERR denied KICK needs an administrator")
        #expect(try sensors[0].command("KICK 1") == "-ERR denied KICK needs an administrator")
        #expect(try reader.command("KICK user=sensors misbehaving") == "+OK 2")
        for connection in sensors {
            #expect(try connection.readUntilClosed() == ["-ERR kicked misbehaving"])
        }
        #expect(try reader.command("PING") == "+PONG")
        #expect(try unauthenticated.command("PING") == "+PONG", "not a connection of the user")
    }

    /// A user whose name holds a space, comma or `=` is listed with `_` for each (WHO and CLIENTS alike), and
    /// `KICK user=` with that listed name reaches its connections; a reason that is not UTF-8 is refused.
    @Test func aUserIsKickedByTheNameTheListingsShow() throws {
        let yaml = try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "  sensors:\n", with: "  \"eve x,y=z\":\n")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("kick-\(UUID().uuidString).yaml").path
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let daemon = try Daemon(arguments: ["--config", path])
        let eve = try login(daemon, "sensor-secret-token")
        let reader = try login(daemon, "reader-secret-token")
        #expect(try reader.command("CLIENTS").contains(",user=eve_x_y_z"))
        try reader.send([UInt8]("KICK user=eve_x_y_z ".utf8) + [0xFF] + [0x0A])
        #expect(try reader.readLine().hasPrefix("-ERR syntax KICK's reason is UTF-8 text"))
        #expect(try reader.command("KICK user=eve_x_y_z bye") == "+OK 1")
        #expect(try eve.readUntilClosed() == ["-ERR kicked bye"])
    }

    /// Tokens: the claim `fanout.admin` true allows KICK, false (or absent) does not.
    @Test func tokenAdministratorClaim() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-kick-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret").path
        try "secret-of-the-kick-tests\n".write(toFile: secret, atomically: true, encoding: .utf8)
        func mint(_ subject: String, admin: Bool?) throws -> String {
            let claim = admin.map { #","fanout":{"subscribe":[">"],"admin":\#($0)}"# } ?? ""
            let claims = #"{"sub":"\#(subject)","exp":"+120"\#(claim)}"#
            let run = try ExternalProgram("python3", [try fixture("mint_token.py"), "HS256", secret, claims])
                .finish(timeout: 30)
            guard run.status == 0, let token = run.stdout.first else { throw TestFailure("mint: \(run.stderr)") }
            return token
        }
        let daemon = try Daemon(environment: ["FANOUTD_TOKEN_SECRET_FILE": secret])
        let administrator = try login(daemon, try mint("ops", admin: true))
        let plain = try login(daemon, try mint("alice", admin: false))
        let unclaimed = try login(daemon, try mint("bob", admin: nil))
        #expect(try plain.command("KICK user=bob") == "-ERR denied KICK needs an administrator")
        #expect(try unclaimed.command("KICK user=alice") == "-ERR denied KICK needs an administrator")
        #expect(try administrator.command("KICK user=alice") == "+OK 1")
        #expect(try plain.readUntilClosed() == ["-ERR kicked by an administrator"])
        let bobID = try listedClients(via: administrator).map(\.id).last ?? ""
        #expect(try administrator.command("KICK \(bobID) token revoked") == "+OK 1")
        #expect(try unclaimed.readUntilClosed() == ["-ERR kicked token revoked"])
    }

    /// A unix-socket client is kicked from its socket, and kicks a TCP client: one dispatcher for every transport.
    @Test func unixSocketClientsKickAndAreKicked() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-kick-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let daemon = try Daemon(listen: ["127.0.0.1:0", "unix:\(path)"])
        let tcp = try daemon.client()
        let local = try LineClient(unixPath: path)
        #expect(try local.readLine().hasPrefix("+HELLO fanout/1 "))
        let listed = try listedClients(via: tcp)
        let localID = try #require(listed.first { $0.transport == "unix" }?.id)
        let tcpID = try #require(listed.first { $0.transport == "tcp" }?.id)
        let victim = try daemon.client()
        let victimID = try #require(try listedClients(via: tcp).map(\.id).first { $0 != localID && $0 != tcpID })
        #expect(try local.command("KICK \(victimID) from the socket") == "+OK 1")
        #expect(try victim.readUntilClosed() == ["-ERR kicked from the socket"])
        #expect(try tcp.command("KICK \(localID)") == "+OK 1")
        #expect(try local.readUntilClosed() == ["-ERR kicked by an administrator"])
    }

    /// A WebSocket kicked by a TCP administrator, and one that kicks itself: the farewell as a text frame, then
    /// close code 1008.
    @Test func kickedWebSocketClosesWith1008() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let run = try runPythonCheck("kick_checks.py", "websocket", daemon: daemon).finish(timeout: 60)
        #expect(run.status == 0 && run.stdout.contains("ok websocket"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }

    /// An event stream is a connection KICK can name: it gets an `error` event with the code `kicked`, and the
    /// stream ends. An HTTP publish's request is never a listed client.
    @Test func kickedEventStreamGetsAnErrorEvent() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let admin = try daemon.client()
        let stream = try eventStream(port: try daemon.httpPort(), query: "subject=news")
        _ = try stream.stdout.waitForLine(containing: ": +OK 1", timeout: 10)
        let listed = try listedClients(via: admin)
        let streamID = try #require(listed.first { $0.transport == "sse" }?.id)
        #expect(listed.count == 2)
        #expect(try admin.command("KICK \(streamID) maintenance") == "+OK 1")
        _ = try stream.stdout.waitForLine(containing: "event: error", timeout: 10)
        _ = try stream.stdout.waitForLine(containing: #"{"error":"kicked","message":"maintenance"}"#, timeout: 10)
        let ended = stream.finish(timeout: 20)
        #expect(ended.status != nil, "the server ended the stream (curl would wait 60 s)")
    }
}
