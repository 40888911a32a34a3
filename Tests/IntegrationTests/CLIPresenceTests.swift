import Foundation
import Testing

/// `fanout` for presence (protocol 1.3): `who` against a real fanoutd keeping presence, `sub --presence`
/// printing joins and leaves as they happen (read through its stdout pipe), and `kick`, with the rule that a
/// kicked `fanout sub` says so and exits without reconnecting.
@Suite("The fanout client with presence", .threadPerTest, .timeLimit(.minutes(3)))
struct CLIPresenceTests {
    @Test func presenceOptionsAreChecked() throws {
        #expect(try FanoutTool.run(["sub", "--format", "event", "x"]).status == 64, "event goes with --presence")
        #expect(try FanoutTool.run(["sub", "--presence", "--group", "g", "x"]).status == 64)
        #expect(try FanoutTool.run(["kick", "7 8"]).status == 64)
        #expect(try FanoutTool.run(["kick", "7", String(repeating: "r", count: 257)]).status == 64)
    }

    // MARK: kick

    @Test func kickSendsTheClientAndReasonAndPrintsTheCount() throws {
        let server = try ScriptedServer()
        let kick = try FanoutTool(["kick", "--server", "127.0.0.1:\(server.port)", "user=alice", "spamming", "the",
                                   "room"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=none epoch=E1\n")
        #expect(try connection.readLine() == "KICK user=alice spamming the room")
        try connection.send("+OK 2\n")
        let result = kick.finish(timeout: 20)
        #expect(result.status == 0)
        #expect(result.stdout == ["2"])

        let refused = try FanoutTool(["kick", "--server", "127.0.0.1:\(server.port)", "7"])
        let second = try server.accept()
        try second.send("+HELLO fanout/1 scripted auth=required epoch=E1\n")
        #expect(try second.readLine() == "KICK 7")
        try second.send("-ERR denied KICK needs an administrator\n")
        let denied = refused.finish(timeout: 20)
        #expect(denied.status == 1)
        #expect(denied.stdout.isEmpty)
        #expect(denied.stderr == ["fanout: server error: denied KICK needs an administrator"])
    }

    @Test func aKickedSubSaysSoAndExitsWithoutReconnecting() throws {
        let server = try ScriptedServer()
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(server.port)", "--presence", "chat.room1"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=none\n")
        #expect(try connection.readLine() == "SUB $presence.chat.room1")
        try connection.send("+OK 1\nMSG $presence.chat.room1 1 join id=3,user=-,since_s=0\n")
        _ = try sub.stdout.waitForLine(containing: "join id=3", timeout: 10)
        // The connection stays open: the farewell alone ends the tool, which a lost connection would not (it
        // reconnects, and stays up until interrupted).
        try connection.send("-ERR kicked spamming the room\n")
        let result = sub.finish(timeout: 20)
        #expect(result.status == 1)
        #expect(result.stdout == ["chat.room1 join id=3,user=-,since_s=0"])
        #expect(result.stderr == ["fanout: kicked by the server: spamming the room"], "no reconnect, one line")
        withExtendedLifetime(connection) {}
    }
}
