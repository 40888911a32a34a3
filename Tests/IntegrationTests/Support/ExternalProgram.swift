import Foundation

/// Another program the tests drive (python3, curl): started with arguments, its output collected as lines.
final class ExternalProgram: @unchecked Sendable {
    let process = Process()
    let stdout = LineCollector()
    let stderr = LineCollector()
    private let exited = DispatchSemaphore(value: 0)
    /// The program's stdin, when started `interactive`.
    private var input: FileHandle?

    /// Starts `executable` (a path, or a name looked up on PATH).
    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], interactive: Bool = false) throws {
        // Looked up on PATH, as a shell would: ./dev installs Python modules for the python3 found there.
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/local/bin", "/usr/bin", "/bin"]
        let path = executable.hasPrefix("/") ? executable
            : directories.map { $0 + "/" + executable }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { throw TestFailure("\(executable) is not installed (./dev deps installs it)") }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        process.environment = env
        let out = try CloexecPipe(), err = try CloexecPipe()
        let stdinPipe = interactive ? try CloexecPipe() : nil
        process.standardInput = stdinPipe?.read ?? FileHandle.nullDevice
        process.standardOutput = out.write
        process.standardError = err.write
        stdout.attach(out.read)
        stderr.attach(err.read)
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        try out.write.close()
        try err.write.close()
        try stdinPipe?.read.close()
        input = stdinPipe?.write
    }

    /// Writes one line to the program's stdin (started `interactive`).
    func sendLine(_ line: String) throws {
        try input?.write(contentsOf: Data((line + "\n").utf8))
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 10)
        }
    }

    /// Waits for exit (killing the program at `timeout`) and for its output; nil status on timeout.
    func finish(timeout: TimeInterval = 60) -> (status: Int32?, stdout: [String], stderr: [String]) {
        guard exited.wait(timeout: .now() + timeout) == .success else {
            kill(process.processIdentifier, SIGKILL)
            return (nil, stdout.all, stderr.all)
        }
        stdout.waitForEnd(timeout: 5)
        stderr.waitForEnd(timeout: 5)
        return (process.terminationStatus, stdout.all, stderr.all)
    }
}

extension Daemon {
    /// The HTTP listener's port, read back from the daemon's "serving HTTP on" log line.
    func httpPort() throws -> Int {
        let line = try stderr.waitForLine(containing: "serving HTTP on http://", timeout: 10)
        let address = line.components(separatedBy: "http://").last!.components(separatedBy: "/").first!
        guard let port = Int(address.split(separator: ":").last!) else { throw TestFailure("no port in: \(line)") }
        return port
    }
}

/// Runs one check of a Python fixture script against `daemon` and expects it to pass.
func runPythonCheck(_ script: String, _ check: String, daemon: Daemon, extra: [String] = []) throws -> ExternalProgram {
    try ExternalProgram("python3", [try fixture(script), check, String(try daemon.httpPort()), String(daemon.port)] + extra)
}
