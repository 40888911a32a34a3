import Foundation

/// The system's `nc`, connected to the daemon, with its stdin to write to and its stdout collected.
final class Netcat: @unchecked Sendable {
    let process = Process()
    let output = LineCollector()
    private let input: CloexecPipe

    static var path: String? {
        ["/usr/bin/nc", "/bin/nc", "/usr/local/bin/nc"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init(host: String = "127.0.0.1", port: Int, extraArguments: [String] = []) throws {
        guard let path = Self.path else { throw TestFailure("nc is not installed (apt-get install netcat-openbsd)") }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = extraArguments + [host, String(port)]
        let stdout = try CloexecPipe()
        input = try CloexecPipe()
        process.standardInput = input.read
        process.standardOutput = stdout.write
        process.standardError = FileHandle.nullDevice
        output.attach(stdout.read)
        try process.run()
        try stdout.write.close()
        try input.read.close()
    }

    deinit {
        if process.isRunning { kill() }
    }

    func send(_ text: String) throws {
        try input.write.write(contentsOf: Data(text.utf8))
    }

    /// Ends nc's input: with `-N` it then shuts down its side of the connection, as `printf ... | nc -N` does.
    func finishInput() throws {
        try input.write.close()
    }

    /// SIGKILL, as if the subscriber crashed: the kernel closes its socket.
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
