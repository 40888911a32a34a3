import Foundation
import Testing

private let setprivPath = ["/usr/bin/setpriv", "/bin/setpriv"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// config/fanoutd.yaml, as a new user runs it from a clone: `fanoutd --config config/fanoutd.yaml` as an
/// ordinary user serves (it kept history in /var/lib/fanout, which only the packaged service may write, and
/// exited 73). Run as `nobody` when the tests run as root.
@Suite("The shipped configuration", .threadPerTest, .timeLimit(.minutes(1)))
struct ShippedConfigTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    @Test(.enabled(if: getuid() != 0 || setprivPath != nil, "root without setpriv cannot run as an ordinary user"))
    func servesAsAnOrdinaryUserFromTheRepository() throws {
        var command = [Daemon.executable.path, "--config", Self.root.appendingPathComponent("config/fanoutd.yaml").path,
                       "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"]
        if getuid() == 0, let setpriv = setprivPath {
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + command
        }
        let settings = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("FANOUTD_") }
        let daemon = try ExternalProgram(path: command[0], Array(command.dropFirst()), unset: settings, input: .none)
        let listening = try? daemon.stderr.waitForLine(containing: "listening on 127.0.0.1:", timeout: 20)
        kill(daemon.process.processIdentifier, SIGTERM)
        let end = daemon.finish(timeout: 20)
        #expect(listening != nil, "fanoutd serves with the shipped file: \(end.stderr.joined(separator: "\n"))")
        #expect(end.status == 0, "and stops cleanly")
    }
}
