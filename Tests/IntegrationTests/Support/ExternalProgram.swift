import Foundation

/// A program the tests drive (python3, curl, the built `fanout`): started with arguments, its output collected
/// as lines.
class ExternalProgram: @unchecked Sendable {
    /// What the program reads.
    enum Input {
        /// Nothing (end of file at once).
        case none
        /// A pipe that stays open for `sendLine` until `closeInput`.
        case pipe
        /// These bytes, then end of file.
        case data(Data)
    }

    let process = Process()
    let stdout = LineCollector()
    let stderr = LineCollector()
    private let exited = DispatchSemaphore(value: 0)
    /// The program's stdin, while open (`Input.pipe`).
    private var input: FileHandle?
    /// How long `finish()` waits by default.
    private let finishTimeout: TimeInterval

    /// Starts `executable` (a path, or a name looked up on PATH); `interactive` keeps its stdin open.
    convenience init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                     interactive: Bool = false) throws {
        // Looked up on PATH, as a shell would: ./dev installs Python modules for the python3 found there.
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/local/bin", "/usr/bin", "/bin"]
        let path = executable.hasPrefix("/") ? executable
            : directories.map { $0 + "/" + executable }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { throw TestFailure("\(executable) is not installed (./dev deps installs it)") }
        try self.init(path: path, arguments, environment: environment, input: interactive ? .pipe : .none)
    }

    /// Starts the program at `path` with this process's environment, less `unset`, plus `environment`.
    init(path: String, _ arguments: [String], environment: [String: String] = [:], unset: [String] = [],
         input mode: Input, finishTimeout: TimeInterval = 60) throws {
        self.finishTimeout = finishTimeout
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for name in unset { env[name] = nil }
        env.merge(environment) { $1 }
        process.environment = env
        let out = try CloexecPipe(), err = try CloexecPipe()
        let stdinPipe: CloexecPipe?
        if case .none = mode { stdinPipe = nil } else { stdinPipe = try CloexecPipe() }
        process.standardInput = stdinPipe?.read ?? FileHandle.nullDevice
        process.standardOutput = out.write
        process.standardError = err.write
        stdout.attach(out.read)
        stderr.attach(err.read)
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        // The child has its own copies: close ours, or the pipes never reach end of file.
        try out.write.close()
        try err.write.close()
        try stdinPipe?.read.close()
        if case .data(let data) = mode, let writer = stdinPipe?.write {
            // Written from another thread: a large input would otherwise block on the pipe before we read output.
            Thread.detachNewThread {
                try? writer.write(contentsOf: data)
                try? writer.close()
            }
        } else {
            input = stdinPipe?.write
        }
    }

    /// Writes one line to the program's stdin (`Input.pipe`).
    func sendLine(_ line: String) throws {
        try input?.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Ends the program's stdin (`Input.pipe`).
    func closeInput() {
        try? input?.close()
        input = nil
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 10)
        }
    }

    /// Waits for exit (killing the program at `timeout`, by default the one it was started with) and for its
    /// output; nil status on timeout.
    func finish(timeout: TimeInterval? = nil) -> (status: Int32?, stdout: [String], stderr: [String]) {
        guard exited.wait(timeout: .now() + (timeout ?? finishTimeout)) == .success else {
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
