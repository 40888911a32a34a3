import Foundation
import Testing

/// `fanout` refuses a subject, pattern, group or token that a line cannot carry, with exit 64 and one clear
/// line, before it connects: a subscriber to every subject sees nothing of it.
@Suite("The fanout client checks its words", .threadPerTest, .timeLimit(.minutes(2)))
struct CLIWordCheckTests {
    @Test(arguments: [
        (["pub", "a b", "x"], "bad subject"),
        (["pub", "", "x"], "bad subject"),
        (["pub", "a\nPUB b", "x"], "bad subject"),
        (["pub", "news.*", "x"], "bad subject"),
        (["pub", "--binary", "a b"], "bad subject"),
        (["ask", "svc time", "now"], "bad subject"),
        (["sub", "--count", "1", "a b"], "bad subject pattern"),
        (["sub", "--group", "w 1", "--count", "1", "jobs"], "bad group name"),
        (["answer", "a b", "--", "true"], "bad subject pattern"),
        (["channels", "a b"], "bad subject pattern"),
        (["pub", "--token", "two words", "ok", "x"], "bad token"),
    ])
    func refusesBadWordsBeforeSending(arguments: [String], reason: String) throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB >") == "+OK 1")
        let before = try infoFields(watcher.command("INFO"))

        let result = try FanoutTool.run(arguments + ["--server", server], timeout: 20)
        #expect(result.status == 64, "a usage error, not a publish: \(result)")
        let stderr = result.stderr.joined(separator: "\n")
        #expect(stderr.contains(reason), "says why: \(stderr)")
        #expect(result.stdout.isEmpty)

        #expect(try watcher.pushes() == [], "nothing was published")
        let after = try infoFields(watcher.command("INFO"))
        #expect(after["published"] == before["published"], "the server counted no publish")
        #expect(after["connections_total"] == before["connections_total"], "the tool did not even connect")
    }
}
