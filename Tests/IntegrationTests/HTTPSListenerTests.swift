import Foundation
import Testing

private let hasOpenSSL = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
private let socketActivate = ["/usr/bin/systemd-socket-activate", "/bin/systemd-socket-activate"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// https_listen: what http_listen serves, over TLS, with a CA made by each test (`TestPKI`) and clients that
/// trust only that CA and verify the certificate's IP address.
@Suite("HTTPS listener", .threadPerTest,
       .enabled(if: hasOpenSSL, "the openssl command is not installed (apt-get install openssl)"),
       .timeLimit(.minutes(3)))
struct HTTPSListenerTests {
    /// A daemon with http_listen on port 0 and https_listen on a free port, with the PKI's server certificate.
    private func httpsDaemon(_ pki: TestPKI, extra: [String: String] = [:]) throws -> (Daemon, httpsPort: Int) {
        var environment = ["FANOUTD_HTTP_LISTEN": "127.0.0.1:0", "FANOUTD_HTTPS_LISTEN": "127.0.0.1:\(try freePort())",
                           "FANOUTD_TLS_CERT": pki.path("server.pem"), "FANOUTD_TLS_KEY": pki.path("server-key.pem")]
        environment.merge(extra) { $1 }
        let daemon = try Daemon(environment: environment)
        return (daemon, try Self.httpsPort(from: daemon.stderr))
    }

    /// The port of the "serving HTTPS on https://HOST:PORT/" log line.
    private static func httpsPort(from log: LineCollector) throws -> Int {
        let line = try log.waitForLine(containing: "serving HTTPS on https://", timeout: 10)
        let address = line.components(separatedBy: "https://").last!.components(separatedBy: "/").first!
        guard let port = Int(address.split(separator: ":").last!) else { throw TestFailure("no port in: \(line)") }
        return port
    }

    private func python(_ check: String, port: Int, tcp: Int, pki: TestPKI, _ argument: String? = nil,
                        interactive: Bool = false) throws -> ExternalProgram {
        try ExternalProgram("python3", [try fixture("https_listener_checks.py"), check, String(port), String(tcp),
                                        pki.path("ca.pem")] + (argument.map { [$0] } ?? []), interactive: interactive)
    }

    @Test func pythonAndNodeClientsOverTLSSeeMessagesPublishedOverTCPWhilePlainHTTPServesToo() throws {
        let pki = try TestPKI()
        let (daemon, port) = try httpsDaemon(pki)
        // Both listeners at once: plain HTTP answers on its own port.
        #expect(try httpGet(port: try daemon.httpPort(), path: "/healthz").body == ["ok"])
        let fromPython = try python("clients", port: port, tcp: daemon.port, pki: pki).finish()
        #expect(fromPython.status == 0 && fromPython.stdout.last == "ok clients",
                "\(fromPython.stdout) \(fromPython.stderr)")
        let node = try ExternalProgram("node", [try fixture("https_listener_checks.mjs"), String(port),
                                                String(daemon.port), pki.path("ca.pem")]).finish()
        #expect(node.status == 0 && node.stdout.last == "ok node", "\(node.stdout) \(node.stderr)")
        // The certificate is the test CA's: a client trusting another CA is refused.
        let other = try python("other-ca", port: port, tcp: daemon.port, pki: pki, pki.path("other-ca.pem")).finish()
        #expect(other.status == 0 && other.stdout.last == "ok other-ca", "\(other.stdout) \(other.stderr)")
        // Plain HTTP on the TLS port gets no answer in the clear.
        let plain = try LineClient(port: port)
        try plain.send("GET /healthz HTTP/1.0\r\n\r\n")
        #expect(try plain.readUntilClosed().allSatisfy { !$0.contains("ok") && !$0.contains("HTTP/1.") })
    }

    @Test func aConnectionThatNeverSendsItsClientHelloIsClosedAtTheHandshakeTimeout() throws {
        let pki = try TestPKI()
        // http_request_timeout far beyond: only the handshake deadline can close the connection in time.
        let (daemon, port) = try httpsDaemon(pki, extra: ["FANOUTD_TLS_HANDSHAKE_TIMEOUT": "1",
                                                          "FANOUTD_HTTP_REQUEST_TIMEOUT": "60"])
        let silent = try LineClient(port: port, timeout: 30)
        let started = Date()
        #expect(try silent.readUntilClosed().isEmpty)
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 0.9 && elapsed < 5, "closed after \(elapsed)s with tls_handshake_timeout 1")
        // A client that finishes its handshake is served as before.
        let served = try python("certificate", port: port, tcp: daemon.port, pki: pki, pki.path("server.pem")).finish()
        #expect(served.status == 0 && served.stdout == ["same"], "\(served.stdout) \(served.stderr)")
    }

    @Test func sighupRenewsTheCertificateForNewConnectionsWhileAnOpenStreamKeepsReceiving() throws {
        let pki = try TestPKI()
        try pki.issueServerCertificate(named: "renewed", by: "ca")
        let live = (certificate: pki.path("live.pem"), key: pki.path("live-key.pem"))
        func install(_ name: String) throws {
            for (from, to) in [(pki.path("\(name).pem"), live.certificate), (pki.path("\(name)-key.pem"), live.key)] {
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: from, toPath: to)
            }
        }
        try install("server")
        let config = pki.path("fanoutd.yaml")
        try "https_listen: \"127.0.0.1:\(try freePort())\"\ntls_cert: \(live.certificate)\ntls_key: \(live.key)\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config])
        let port = try Self.httpsPort(from: daemon.stderr)
        let stream = try python("stream", port: port, tcp: daemon.port, pki: pki, "renew.news", interactive: true)
        _ = try stream.stdout.waitForLine(containing: "ready", timeout: 10)
        let before = try python("certificate", port: port, tcp: daemon.port, pki: pki, pki.path("server.pem")).finish()
        #expect(before.status == 0 && before.stdout == ["same"], "before the reload: \(before.stdout) \(before.stderr)")

        try install("renewed")
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        let after = try python("certificate", port: port, tcp: daemon.port, pki: pki, pki.path("renewed.pem")).finish()
        #expect(after.status == 0 && after.stdout == ["same"], "after the reload: \(after.stdout) \(after.stderr)")
        // The stream opened under the old certificate still receives.
        #expect(try daemon.client().command("PUB renew.news after-reload") == "+OK 1")
        #expect(try stream.stdout.waitForLine(containing: "event ", timeout: 10) == "event after-reload")
    }

    @Test func aReloadThatCannotReadTheCertificateKeepsServingTheOldOne() throws {
        let pki = try TestPKI()
        let config = pki.path("fanoutd.yaml")
        let port = try freePort()
        func write(certificate: String) throws {
            let key = pki.path("server-key.pem")
            try "https_listen: \"127.0.0.1:\(port)\"\ntls_cert: \(certificate)\ntls_key: \(key)\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
        }
        try write(certificate: pki.path("server.pem"))
        let daemon = try Daemon(arguments: ["--config", config])
        _ = try Self.httpsPort(from: daemon.stderr)
        try write(certificate: pki.path("missing.pem"))
        daemon.signal(SIGHUP)
        let failed = try daemon.stderr.waitForLine(containing: "reload failed", timeout: 10)
        #expect(failed.contains("missing.pem"))
        let served = try python("certificate", port: port, tcp: daemon.port, pki: pki, pki.path("server.pem")).finish()
        #expect(served.status == 0 && served.stdout == ["same"], "\(served.stdout) \(served.stderr)")
    }

    @Test func checkConfigRefusesHTTPSWithoutACertificateOrOnAnotherListenersAddress() throws {
        let pki = try TestPKI()
        func check(_ environment: [String: String]) throws -> (status: Int32?, stdout: [String], stderr: [String]) {
            try ExternalProgram(path: Daemon.executable.path, ["--check-config"], environment: environment,
                                unset: ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("FANOUTD_") },
                                input: .none).finish(timeout: 20)
        }
        let certificate = ["FANOUTD_TLS_CERT": pki.path("server.pem"), "FANOUTD_TLS_KEY": pki.path("server-key.pem")]
        let bare = try check(["FANOUTD_HTTPS_LISTEN": "127.0.0.1:7413"])
        #expect(bare.status == 78)
        #expect(bare.stderr.joined().contains("https_listen: needs tls_cert and tls_key"), "\(bare.stderr)")
        let shared = try check(certificate.merging(["FANOUTD_HTTPS_LISTEN": "127.0.0.1:7413",
                                                    "FANOUTD_HTTP_LISTEN": "127.0.0.1:7413"]) { $1 })
        #expect(shared.status == 78)
        #expect(shared.stderr.joined().contains("https_listen: 127.0.0.1:7413 is also http_listen"), "\(shared.stderr)")
        let withTLS = try check(certificate.merging(["FANOUTD_HTTPS_LISTEN": "127.0.0.1:7413",
                                                     "FANOUTD_TLS_LISTEN": "127.0.0.1:7413"]) { $1 })
        #expect(withTLS.status == 78)
        #expect(withTLS.stderr.joined().contains("https_listen: 127.0.0.1:7413 is also tls_listen"), "\(withTLS.stderr)")
        let good = try check(certificate.merging(["FANOUTD_HTTPS_LISTEN": "127.0.0.1:7413"]) { $1 })
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("https_listen: 127.0.0.1:7413"), "\(good.stdout)")
    }

    /// A socket named "https" in LISTEN_FDNAMES serves https_listen's routes, over TLS.
    @Test(.enabled(if: socketActivate != nil, "systemd-socket-activate is not installed"))
    func servesHTTPSOnTheSocketNamedHTTPS() throws {
        let pki = try TestPKI()
        let port = try freePort()
        let activator = Process()
        activator.executableURL = URL(fileURLWithPath: socketActivate!)
        activator.arguments = [
            "-l", "127.0.0.1:\(port)", "--fdname=https",
            "-E", "FANOUTD_TLS_CERT=\(pki.path("server.pem"))", "-E", "FANOUTD_TLS_KEY=\(pki.path("server-key.pem"))",
            Daemon.executable.path, "--listen", "127.0.0.1:0",
        ]
        activator.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FANOUTD_") }
        let log = LineCollector(), stderr = try CloexecPipe()
        activator.standardError = stderr.write
        activator.standardOutput = FileHandle.nullDevice
        log.attach(stderr.read)
        try activator.run()
        try stderr.write.close()
        defer {
            kill(activator.processIdentifier, SIGKILL)
            activator.waitUntilExit()
        }
        _ = try log.waitForLine(containing: "Listening on", timeout: 10)
        // The first connection starts fanoutd, which serves HTTPS on the handed-over socket.
        let first = try LineClient(port: port)
        #expect(try Self.httpsPort(from: log) == port)
        first.close()
        // Its output, not its exit: here the finished python3 was left unreaped while the activated fanoutd ran.
        let served = try python("certificate", port: port, tcp: 0, pki: pki, pki.path("server.pem"))
        #expect(try served.stdout.waitForLine(containing: "same", timeout: 20) == "same")
    }
}
