import Foundation
import Testing

/// A real `fanoutd` process on a loopback port chosen by the kernel, torn down when the value is dropped.
final class Daemon: @unchecked Sendable {
    let process = Process()
    let stderr = LineCollector()
    private let exited = DispatchSemaphore(value: 0)
    /// The port read back from the daemon's "listening on" log line.
    private(set) var port: Int = 0
    private(set) var ports: [Int] = []
    var pid: Int32 { process.processIdentifier }

    /// The built executables sit next to the test bundle.
    static var binDirectory: URL {
        if let explicit = ProcessInfo.processInfo.environment["FANOUT_BIN_DIR"] {
            return URL(fileURLWithPath: explicit)
        }
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: me).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("fanoutd").path),
              directory.path != "/" {
            directory = directory.deletingLastPathComponent()
        }
        return directory
    }

    static var executable: URL { binDirectory.appendingPathComponent("fanoutd") }

    /// Whether the daemon under test is an optimised build (`FANOUT_BIN_DIR` pointing at `.build/release`):
    /// a latency bound stated for the shipped build is held there, and scaled for the debug build the suite
    /// normally runs.
    static var isReleaseBuild: Bool { binDirectory.path.contains("/release") }

    /// Starts `fanoutd --listen 127.0.0.1:0 <arguments>` with `environment` added, and waits until it listens.
    init(
        arguments: [String] = [],
        environment: [String: String] = [:],
        listen: [String] = ["127.0.0.1:0"],
        waitForListening: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        process.executableURL = Self.executable
        process.arguments = listen.flatMap { ["--listen", $0] } + arguments
        let expectedListeners = max(listen.count, 1)
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FANOUTD_") }
        env.merge(environment) { $1 }
        process.environment = env
        let pipe = try CloexecPipe()
        process.standardError = pipe.write
        process.standardOutput = FileHandle.nullDevice
        stderr.attach(pipe.read)
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        try pipe.write.close()
        guard waitForListening else { return }
        for _ in 0..<expectedListeners {
            let line = try stderr.waitForLine(containing: "listening on ", after: ports.count, timeout: 20)
            guard let address = line.components(separatedBy: "listening on ").last?.split(separator: " ").first else {
                throw TestFailure("cannot read the address from: \(line)")
            }
            if address.hasPrefix("unix:") {
                ports.append(0)
                continue
            }
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
                throw TestFailure("cannot read the port from: \(line)")
            }
            ports.append(port)
        }
        port = ports[0]
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 10)
        }
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the process to exit; returns its status, or nil on timeout.
    func waitForExit(timeout: TimeInterval) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        return process.terminationStatus
    }

    /// Resident set size in bytes, from /proc.
    func residentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) else {
            throw TestFailure("no VmRSS for \(pid)")
        }
        return kilobytes * 1024
    }

    /// A connected client that has already read the greeting.
    func client(timeout: TimeInterval = 10) throws -> LineClient {
        let client = try LineClient(port: port, timeout: timeout)
        let greeting = try client.readLine()
        guard greeting.hasPrefix("+HELLO fanout/1 ") else { throw TestFailure("bad greeting: \(greeting)") }
        return client
    }
}

/// Collects a pipe's output as lines and lets a test wait for a line to appear.
final class LineCollector: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []
    private var partial: [UInt8] = []
    private var closed = false

    /// Reads `handle` on a thread of its own until end of file (blocking reads make EOF certain).
    func attach(_ handle: FileHandle) {
        let fd = handle.fileDescriptor
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                condition.lock()
                if count <= 0 {
                    closed = true
                } else {
                    partial.append(contentsOf: chunk[0..<count])
                    while let newline = partial.firstIndex(of: 0x0A) {
                        lines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
                        partial.removeSubrange(partial.startIndex...newline)
                    }
                }
                condition.broadcast()
                condition.unlock()
                if count <= 0 {
                    withExtendedLifetime(handle) {}
                    return
                }
            }
        }
    }

    var all: [String] {
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    /// Waits for the first line containing `text`, skipping the first `after` such lines.
    func waitForLine(containing text: String, after skip: Int = 0, timeout: TimeInterval) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let matches = lines.filter { $0.contains(text) }
            if matches.count > skip { return matches[skip] }
            if closed {
                throw TestFailure("output ended without a line containing '\(text)':\n\(lines.joined(separator: "\n"))")
            }
            if !condition.wait(until: deadline) {
                throw TestFailure("no line containing '\(text)' within \(timeout)s:\n\(lines.joined(separator: "\n"))")
            }
        }
    }
}

/// The path of a file in Tests/IntegrationTests/Fixtures.
func fixture(_ name: String) throws -> String {
    guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures") else {
        throw TestFailure("missing fixture \(name)")
    }
    return url.path
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes. For state with no event to wait on (a server-side
/// counter), never as a stand-in for an event a test can wait for.
func eventually(
    timeout: TimeInterval = 10, _ what: String, _ condition: () throws -> Bool
) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return }
        usleep(20_000)
    }
    throw TestFailure("not true within \(timeout)s: \(what)")
}
