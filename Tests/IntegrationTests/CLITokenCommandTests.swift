import Foundation
import Testing

/// `fanout sub --token-command`: a fresh token from the command before each connection and on the server's
/// `-ERR auth-expired` push, sent with AUTH on the live connection, the push told on stderr while the stream
/// goes on, each message reaching the pipe as it arrives. Against a scripted server, since the server side of
/// application tokens is not what is tested here: only the lines PROTOCOL.md gives for AUTH.
@Suite("fanout --token-command", .threadPerTest, .timeLimit(.minutes(1)))
struct CLITokenCommandTests {
    /// A token command that prints tok-1, tok-2, ... one more on each run, counted in a file of its own.
    private func countingCommand() throws -> (command: String, counter: URL) {
        let counter = FileManager.default.temporaryDirectory.appendingPathComponent("token-count-\(UUID().uuidString)")
        let path = counter.path
        return ("n=$(cat '\(path)' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '\(path)'; printf '  tok-%s\\n' $n",
                counter)
    }

    @Test func subRefreshesItsTokenOnTheLiveConnectionAndAfterAReconnect() throws {
        let server = try ScriptedServer()
        let (command, counter) = try countingCommand()
        defer { try? FileManager.default.removeItem(at: counter) }
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(server.port)", "--token-command", command,
                                  "--count", "3", "news.*"])
        let first = try server.accept()
        try first.send("+HELLO fanout/1 scripted auth=required epoch=E1\n")
        #expect(try first.readLine() == "AUTH tok-1", "the command's output, trimmed, before anything else")
        try first.send("+OK\n")
        #expect(try first.readLine() == "SUB news.*")
        try first.send("+OK 1\nMSG news.a 1 one\n")
        // The pipe sees the message before anything else happens: output is not held back for more.
        _ = try sub.stdout.waitForLine(containing: "one", timeout: 10)

        try first.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s\n")
        #expect(try first.readLine() == "AUTH tok-2", "a fresh token on the same connection")
        try first.send("+OK\nMSG news.a 2 two\n")
        _ = try sub.stdout.waitForLine(containing: "two", timeout: 10)
        let note = try sub.stderr.waitForLine(containing: "auth-expired", timeout: 10)
        #expect(note == "fanout: server says auth-expired token expired; send AUTH with a fresh token within 30s")

        // The grace ran out: the server closes, and the reconnect runs the command again.
        try first.send("-ERR auth-expired closing\n")
        first.reset()
        let second = try server.accept()
        try second.send("+HELLO fanout/1 scripted auth=required epoch=E1\n")
        #expect(try second.readLine() == "AUTH tok-3")
        try second.send("+OK\n")
        // The subject received is resumed where it was, then the pattern subscribed again.
        #expect(try second.readLine() == "RESUME news.a E1 2")
        try second.send("+OK 1 epoch=E1 seq=2 replayed=0 missed=0\n")
        #expect(try second.readLine() == "SUB news.*")
        try second.send("+OK 1\nMSG news.b 1 three\n")
        _ = try sub.stdout.waitForLine(containing: "three", timeout: 10)
        let result = sub.finish()
        #expect(result.status == 0, "--count 3 exits after the third message")
        #expect(result.stdout == ["one", "two", "three"], "the pushes never reach stdout")
        #expect(!result.stderr.joined().contains("tok-"), "a token is never printed")
    }

    @Test func aRefusedRefreshIsToldAndTriedAgainWhileTheStreamGoesOn() throws {
        let server = try ScriptedServer()
        let (command, counter) = try countingCommand()
        defer { try? FileManager.default.removeItem(at: counter) }
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(server.port)", "--token-command", command,
                                  "--count", "2", "news.*"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=required epoch=E1\n")
        #expect(try connection.readLine() == "AUTH tok-1")
        try connection.send("+OK\n")
        #expect(try connection.readLine() == "SUB news.*")
        try connection.send("+OK 1\n-ERR auth-expired token expired; send AUTH with a fresh token within 30s\n")
        #expect(try connection.readLine() == "AUTH tok-2")
        try connection.send("-ERR denied token is for another user\nMSG news.a 1 one\n")
        _ = try sub.stdout.waitForLine(containing: "one", timeout: 10)
        let told = try sub.stderr.waitForLine(containing: "token refresh failed", timeout: 10)
        #expect(told == "fanout: token refresh failed: the server refused the fresh token: "
            + "denied token is for another user; retrying")
        #expect(try connection.readLine() == "AUTH tok-3", "tried again after a second")
        try connection.send("+OK\nMSG news.a 2 two\n")
        let result = sub.finish()
        #expect(result.status == 0)
        #expect(result.stdout == ["one", "two"])
    }

    /// The pushes come between a command and its reply: the reply still goes to the command.
    @Test func pushesBetweenACommandAndItsReplyAreNotTakenForTheReply() throws {
        let server = try ScriptedServer()
        let (command, counter) = try countingCommand()
        defer { try? FileManager.default.removeItem(at: counter) }
        let pub = try FanoutTool(["pub", "--server", "127.0.0.1:\(server.port)", "--token-command", command,
                                  "a.b", "hello"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=required\n")
        #expect(try connection.readLine() == "AUTH tok-1")
        try connection.send("+OK\n")
        #expect(try connection.readLine() == "PUB a.b hello")
        try connection.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s\n"
            + "-ERR denied revoked: no longer allowed to subscribe to a.>\n+OK 3\n")
        #expect(try connection.readLine() == "AUTH tok-2", "the push asked for a fresh token")
        try connection.send("+OK\n")
        let result = pub.finish(timeout: 15)
        #expect(result.status == 0)
        #expect(result.stdout == ["3"], "the receivers count of the PUB's own reply")
    }

    @Test func aFailingTokenCommandIsAConnectionFailureThatSaysSoWithoutTheOutput() throws {
        let server = try ScriptedServer()
        let pub = try FanoutTool(["pub", "--server", "127.0.0.1:\(server.port)",
                                  "--token-command", "echo secret-part; exit 3", "a", "b"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=required\n")
        let result = pub.finish(timeout: 15)
        #expect(result.status == 2, "cannot connect")
        #expect(result.stderr.joined(separator: "\n").contains("--token-command exited with status 3"))
        #expect(!result.stderr.joined().contains("secret-part"))
    }

    @Test func tokenAndTokenCommandTogetherAreAUsageError() throws {
        let result = try FanoutTool.run(["pub", "--token", "t", "--token-command", "echo t", "a", "b"])
        #expect(result.status == 64)
        #expect(result.stderr.joined().contains("--token and --token-command: give one"))
    }
}
