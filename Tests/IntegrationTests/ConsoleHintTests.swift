import Foundation
import Testing

/// The console's "From a terminal" line names the address this server listens on, not the default port.
@Suite("The console's connect hint", .threadPerTest, .timeLimit(.minutes(1)))
struct ConsoleHintTests {
    private func hint(_ daemon: Daemon) throws -> String {
        let page = try httpGet(port: try daemon.httpPort(), path: "/")
        #expect(page.status.contains(" 200 "))
        let line = try #require(page.body.first { $0.contains("id=\"connect-hint\"") }, "the page has the hint")
        #expect(!line.contains("{{"), "no marker left: \(line)")
        return line
    }

    @Test func namesTheRandomPortTheServerListensOn() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        #expect(daemon.port != 7411)
        let line = try hint(daemon)
        #expect(line.contains("<code>nc 127.0.0.1 \(daemon.port)</code>"), "\(line)")
        #expect(line.contains("fanout sub --server 127.0.0.1:\(daemon.port) 'news.*'"), "\(line)")
        #expect(!line.contains("7411"), "\(line)")
    }

    @Test func namesAUnixSocketAsNcAndFanoutTakeIt() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("hint-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"], listen: ["unix:\(path)"])
        let line = try hint(daemon)
        #expect(line.contains("<code>nc -U \(path)</code>"), "\(line)")
        #expect(line.contains("fanout sub --server unix:\(path) 'news.*'"), "\(line)")
    }
}
