import Foundation

/// The system's `nc`, connected to the daemon, with its stdin to write to and its stdout collected.
final class Netcat: @unchecked Sendable {
    let process = Process()
    let output = LineCollector()
    private let input = Pipe()

    static var path: String? {
        ["/usr/bin/nc", "/bin/nc", "/usr/local/bin/nc"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init(host: String = "127.0.0.1", port: Int, extraArguments: [String] = []) throws {
        guard let path = Self.path else { throw TestFailure("nc is not installed (apt-get install netcat-openbsd)") }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = extraArguments + [host, String(port)]
        let stdout = Pipe()
        process.standardInput = input
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        output.attach(stdout.fileHandleForReading)
        try process.run()
        try stdout.fileHandleForWriting.close()
        try input.fileHandleForReading.close()
    }

    deinit {
        if process.isRunning { kill() }
    }

    func send(_ text: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// SIGKILL, as if the subscriber crashed: the kernel closes its socket.
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
