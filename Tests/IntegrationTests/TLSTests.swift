import Foundation
import Testing

/// A throwaway CA with a server certificate for 127.0.0.1/localhost and a client certificate, made with
/// the `openssl` command.
final class TestPKI {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try makeCA("ca")
        try makeCA("other-ca")
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(to: url("server.ext"), atomically: true, encoding: .utf8)
        try "extendedKeyUsage=clientAuth\n".write(to: url("client.ext"), atomically: true, encoding: .utf8)
        try makeCertificate("server", subject: "/CN=localhost", extensions: "server.ext")
        try makeCertificate("client", subject: "/CN=test-client", extensions: "client.ext")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { url(name).path }
    private func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    private func makeCA(_ name: String) throws {
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name)-key.pem"),
                     "-out", path("\(name).pem"), "-days", "2", "-subj", "/CN=\(name)"])
    }

    func issueServerCertificate(named name: String, by authority: String) throws {
        try makeCertificate(name, subject: "/CN=localhost", extensions: "server.ext", authority: authority)
    }

    private func makeCertificate(_ name: String, subject: String, extensions: String, authority: String = "ca") throws {
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name)-key.pem"),
                     "-out", path("\(name).csr"), "-subj", subject])
        try openssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(authority).pem"),
                     "-CAkey", path("\(authority)-key.pem"), "-CAcreateserial", "-out", path("\(name).pem"),
                     "-days", "2", "-extfile", path(extensions)])
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("openssl \(arguments.first ?? "") failed") }
    }
}

private let hasOpenSSL = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

@Suite("TLS listeners", .threadPerTest,
       .enabled(if: hasOpenSSL, "the openssl command is not installed (apt-get install openssl)"),
       .timeLimit(.minutes(3)))
struct TLSTests {
    private func tlsDaemon(
        _ pki: TestPKI, clientCA: Bool = false, extra: [String: String] = [:]
    ) throws -> (Daemon, tlsPort: Int) {
        var environment = ["FANOUTD_TLS_LISTEN": "127.0.0.1:\(try freePort())", "FANOUTD_TLS_CERT": pki.path("server.pem"),
                           "FANOUTD_TLS_KEY": pki.path("server-key.pem")]
        environment.merge(extra) { $1 }
        if clientCA { environment["FANOUTD_TLS_CLIENT_CA"] = pki.path("ca.pem") }
        let daemon = try Daemon(environment: environment)
        let line = try daemon.stderr.waitForLine(containing: "(tls)", timeout: 10)
        let address = try #require(line.components(separatedBy: "listening on ").last?.split(separator: " ").first)
        return (daemon, try #require(Int(address.split(separator: ":").last!)))
    }

    /// `openssl s_client` connected to `port`, verifying the server with the test CA: its stdin to write
    /// lines to, its output and diagnostics as lines. Killed when the returned process is dropped by the test.
    private final class OpenSSLClient {
        let process = Process()
        /// A real pipe for stdin: s_client treats a socket on stdin differently. (Only output pipes need to be
        /// close-on-exec, for end of file; an inherited stdin write end merely keeps it open.)
        let input = Pipe()
        let lines = LineCollector(), diagnostics = LineCollector()

        init(port: Int, pki: TestPKI) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", pki.path("ca.pem"),
                                 "-verify_return_error", "-quiet"]
            let output = try CloexecPipe(), errors = try CloexecPipe()
            process.standardInput = input
            process.standardOutput = output.write
            process.standardError = errors.write
            lines.attach(output.read)
            diagnostics.attach(errors.read)
            try process.run()
            try output.write.close()
            try errors.write.close()
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        func send(_ text: String) throws { try input.fileHandleForWriting.write(contentsOf: Data(text.utf8)) }
    }

    @Test func roundTripWithOpenSSLsClient() throws {
        let pki = try TestPKI()
        let (daemon, port) = try tlsDaemon(pki)
        defer { withExtendedLifetime(daemon) {} }
        let client = try OpenSSLClient(port: port, pki: pki)
        let hello = try? client.lines.waitForLine(containing: "+HELLO", timeout: 10)
        #expect(hello?.hasPrefix("+HELLO fanout/1 ") == true, "s_client said: \(client.diagnostics.all)")
        try client.send("PING over tls\nQUIT\n")
        #expect(try client.lines.waitForLine(containing: "+PONG", timeout: 10) == "+PONG over tls")
        #expect(try client.lines.waitForLine(containing: "+OK bye", timeout: 10) == "+OK bye")
    }

    @Test func plainAndTLSSideBySideWithTheBundledClient() throws {
        let pki = try TestPKI()
        let (daemon, port) = try tlsDaemon(pki)
        let plain = try daemon.client()
        #expect(try plain.command("SUB mixed") == "+OK 1")
        let pub = try FanoutTool.run(["pub", "--tls", "--ca", pki.path("ca.pem"), "--server", "127.0.0.1:\(port)",
                                      "mixed", "sent over tls"])
        #expect(pub.status == 0, "\(pub.stderr)")
        #expect(pub.stdout == ["1"])
        #expect(try plain.readLine() == "MSG mixed 1 sent over tls")
    }

    @Test func plainClientsAndWrongCAsFailCleanly() throws {
        let pki = try TestPKI()
        let (daemon, port) = try tlsDaemon(pki)
        let plainOnTLS = try LineClient(port: port)
        try plainOnTLS.send("PING\n")
        #expect(try plainOnTLS.readUntilClosed().allSatisfy { !$0.contains("PONG") }, "no protocol without TLS")
        let wrongCA = try FanoutTool.run(["ping", "--tls", "--ca", pki.path("other-ca.pem"), "--server", "127.0.0.1:\(port)", "-c", "1"])
        #expect(wrongCA.status == 2)
        #expect(wrongCA.stderr.first?.contains("certificate verify failed") == true, "\(wrongCA.stderr)")
        let stillServing = try FanoutTool.run(["ping", "--tls", "--ca", pki.path("ca.pem"), "--server", "127.0.0.1:\(port)", "-c", "1"])
        #expect(stillServing.status == 0)
        #expect(try daemon.client().command("PING") == "+PONG")
    }

    @Test func certificatesAreReadAgainOnSIGHUP() throws {
        let pki = try TestPKI()
        let tlsPort = try freePort()
        let config = URL(fileURLWithPath: pki.path("fanoutd.yaml"))
        func writeConfig(certificate: String, key: String) throws {
            try "tls_listen: [\"127.0.0.1:\(tlsPort)\"]\ntls_cert: \(certificate)\ntls_key: \(key)\n"
                .write(to: config, atomically: true, encoding: .utf8)
        }
        try writeConfig(certificate: pki.path("server.pem"), key: pki.path("server-key.pem"))
        let daemon = try Daemon(arguments: ["--config", config.path])
        let server = "127.0.0.1:\(tlsPort)"
        let ping = ["ping", "--tls", "--server", server, "-c", "1"]
        #expect(try FanoutTool.run(ping + ["--ca", pki.path("ca.pem")]).status == 0)

        // A certificate that does not load is rejected; the running one keeps serving.
        try writeConfig(certificate: pki.path("missing.pem"), key: pki.path("server-key.pem"))
        daemon.signal(SIGHUP)
        #expect(try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10).contains("missing.pem"))
        #expect(try FanoutTool.run(ping + ["--ca", pki.path("ca.pem")]).status == 0)

        // A renewed certificate (here: one that another CA signed) is served to new connections.
        try pki.issueServerCertificate(named: "renewed", by: "other-ca")
        try writeConfig(certificate: pki.path("renewed.pem"), key: pki.path("renewed-key.pem"))
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        #expect(try FanoutTool.run(ping + ["--ca", pki.path("other-ca.pem")]).status == 0)
        #expect(try FanoutTool.run(ping + ["--ca", pki.path("ca.pem")]).status == 2)
    }

    @Test func mutualTLSRejectsClientsWithoutACertificate() throws {
        let pki = try TestPKI()
        let (daemon, port) = try tlsDaemon(pki, clientCA: true)
        defer { withExtendedLifetime(daemon) {} }
        let server = "127.0.0.1:\(port)"
        let anonymous = try FanoutTool.run(["ping", "--tls", "--ca", pki.path("ca.pem"), "--server", server, "-c", "1"])
        #expect(anonymous.status == 2, "\(anonymous.stdout) \(anonymous.stderr)")
        let withCertificate = try FanoutTool.run(["ping", "--tls", "--ca", pki.path("ca.pem"), "--cert", pki.path("client.pem"),
                                                  "--key", pki.path("client-key.pem"), "--server", server, "-c", "1"])
        #expect(withCertificate.status == 0, "\(withCertificate.stderr) \(daemon.stderr.all)")
    }

    @Test func aHandshakeThatNeverFinishesIsClosedAtTheTimeout() throws {
        let pki = try TestPKI()
        let (daemon, port) = try tlsDaemon(pki, extra: ["FANOUTD_TLS_HANDSHAKE_TIMEOUT": "1"])
        let observer = try daemon.client()
        // A finished handshake is not touched by the timeout.
        let client = try OpenSSLClient(port: port, pki: pki)
        _ = try client.lines.waitForLine(containing: "+HELLO", timeout: 10)
        // A TCP connection to the TLS port that never starts a handshake.
        let silent = try LineClient(port: port, timeout: 10)
        let started = Date()
        #expect(try silent.readLineOrEOF() == nil, "closed without a line")
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.5 && waited < 5, "closed at tls_handshake_timeout: \(waited)s")
        try eventually("the half-open connection left the table") {
            infoFields(try observer.command("INFO"))["clients"] == "2"
        }
        try client.send("PING still here\n")
        #expect(try client.lines.waitForLine(containing: "+PONG", timeout: 10) == "+PONG still here")
    }
}
