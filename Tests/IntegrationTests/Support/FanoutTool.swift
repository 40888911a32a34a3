import Foundation

/// The built `fanout` client, run as a user runs it.
final class FanoutTool: @unchecked Sendable {
    let process = Process()
    let stdout = LineCollector()
    let stderr = LineCollector()
    private let input: CloexecPipe
    private let exited = DispatchSemaphore(value: 0)

    static var executable: URL { Daemon.binDirectory.appendingPathComponent("fanout") }

    /// Starts `fanout <arguments>`; stdin stays open until `closeInput` (or is `stdinData`, then closed).
    init(_ arguments: [String], environment: [String: String] = [:], stdinData: Data? = nil) throws {
        process.executableURL = Self.executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["FANOUT_SERVER"] = nil
        env.merge(environment) { $1 }
        process.environment = env
        let out = try CloexecPipe(), err = try CloexecPipe()
        input = try CloexecPipe()
        process.standardInput = input.read
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
        try input.read.close()
        if let stdinData {
            let writer = input.write
            // Write from another thread: a large input would otherwise block on the pipe before we read output.
            Thread.detachNewThread {
                try? writer.write(contentsOf: stdinData)
                try? writer.close()
            }
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 10)
        }
    }

    func closeInput() { try? input.write.close() }

    /// Waits for exit and for the output pipes to drain; nil status on timeout.
    func finish(timeout: TimeInterval = 30) -> (status: Int32?, stdout: [String], stderr: [String]) {
        guard exited.wait(timeout: .now() + timeout) == .success else {
            kill(process.processIdentifier, SIGKILL)
            return (nil, stdout.all, stderr.all)
        }
        stdout.waitForEnd(timeout: 5)
        stderr.waitForEnd(timeout: 5)
        return (process.terminationStatus, stdout.all, stderr.all)
    }

    /// Runs to completion.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], stdin: Data = Data(), timeout: TimeInterval = 60
    ) throws -> (status: Int32?, stdout: [String], stderr: [String]) {
        try FanoutTool(arguments, environment: environment, stdinData: stdin).finish(timeout: timeout)
    }
}

extension LineCollector {
    /// Waits until the pipe has closed, so that `all` holds every line.
    func waitForEnd(timeout: TimeInterval) {
        _ = try? waitForLine(containing: "\u{0}never\u{0}", timeout: timeout)
    }
}

/// A TCP port that was free a moment ago (bound and released).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
            guard bind(fd, pointer, length) == 0 else { return -1 }
            return getsockname(fd, pointer, &length)
        }
    }
    guard bound == 0 else { throw TestFailure("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Waits until `subject` has `count` subscribers on the daemon (a subscription has no event a test can see).
func waitForSubscribers(_ daemon: Daemon, subject: String, count: Int = 1) throws {
    let observer = try daemon.client()
    try eventually("\(subject) has \(count) subscriber(s)") {
        try observer.command("CHANNELS \(subject)").contains(" \(subject)=\(count)")
    }
}
