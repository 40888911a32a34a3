import Foundation
import Testing

@Suite("Unix socket listener", .threadPerTest, .timeLimit(.minutes(3)))
struct UnixSocketTests {
    @Test func roundTripWithTheConfiguredFileMode() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-unix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fanoutd.sock").path
        // A stale socket file from an earlier run is replaced.
        FileManager.default.createFile(atPath: path, contents: nil)
        try FileManager.default.removeItem(atPath: path)

        let daemon = try Daemon(environment: ["FANOUTD_UNIX_SOCKET_MODE": "0600"], listen: ["127.0.0.1:0", "unix:\(path)"])
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let local = try LineClient(unixPath: path)
        #expect(try local.readLine().hasPrefix("+HELLO fanout/1 "))
        #expect(try local.command("SUB over.unix") == "+OK 1")
        let tcp = try daemon.client()
        #expect(try tcp.command("PUB over.unix hi") == "+OK 1")
        #expect(try local.readLine() == "MSG over.unix 1 hi")
        #expect(try tcp.command("CLIENTS").contains("addr=unix:"))

        let pub = try FanoutTool.run(["pub", "--server", "unix:\(path)", "over.unix", "from-the-client"])
        #expect(pub.status == 0)
        #expect(pub.stdout == ["1"])
        #expect(try local.readLine() == "MSG over.unix 2 from-the-client")

        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 15) == 0)
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed on exit")
    }
}
