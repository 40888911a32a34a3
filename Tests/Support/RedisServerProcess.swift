import Foundation

/// A real `redis-server` on a free loopback port, for tests; killed when released.
///
/// It runs in a directory of its own, so that a restart with `appendonly` finds its AOF again.
public final class RedisServerProcess: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private let extraArguments: [String]
    private var process: Process?
    private let condition = NSCondition()
    private var output = ""
    /// Which start the output belongs to.
    private var generation = 0

    /// Starts redis-server with `arguments` (for example `["--appendonly", "yes"]`) and waits until it
    /// accepts connections.
    public init(arguments: [String] = []) throws {
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-redis-\(port)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        extraArguments = arguments
        try start()
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    public var url: String { "redis://127.0.0.1:\(port)" }

    /// Starts it again on the same port and directory (after `kill()`), and waits until it is ready.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--dir", directory.path,
                             "--logfile", "", "--daemonize", "no"] + extraArguments
        // Close-on-exec ends (as the daemon harness's), so that processes other tests spawn meanwhile do not
        // inherit the write end; read on a thread of its own with blocking reads, so end of file is certain.
        let (reader, writer) = try Self.cloexecPipe()
        process.standardOutput = writer
        process.standardError = writer
        condition.lock()
        output = ""
        generation += 1
        let mine = generation
        condition.unlock()
        Thread.detachNewThread { [weak self] in
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(reader.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard let self else { return }
                self.condition.lock()
                // A reader of an earlier start (killed) that reaches its end of file late says nothing here.
                if self.generation == mine {
                    self.output += count > 0 ? String(decoding: chunk[0..<count], as: UTF8.self) : "\n<exited>"
                }
                self.condition.broadcast()
                self.condition.unlock()
                if count <= 0 {
                    withExtendedLifetime(reader) {}
                    return
                }
            }
        }
        try process.run()
        try writer.close()
        self.process = process
        let deadline = Date().addingTimeInterval(20)
        condition.lock()
        defer { condition.unlock() }
        while !output.contains("Ready to accept connections") {
            if output.contains("<exited>") || !condition.wait(until: deadline) {
                throw RedisServerFailure("redis-server on port \(port) did not start:\n\(output)")
            }
        }
    }

    /// SIGKILL, and waits for the process to be gone.
    public func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGSTOP: the server stops answering but keeps its sockets open, as a hung or partitioned one would.
    public func pause() {
        if let process { Foundation.kill(process.processIdentifier, SIGSTOP) }
    }

    /// SIGCONT after `pause()`.
    public func resume() {
        if let process { Foundation.kill(process.processIdentifier, SIGCONT) }
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// Runs `redis-cli` against this server and returns its output, trimmed.
    @discardableResult
    public func cli(_ arguments: String...) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-p", "\(port)"] + arguments
        let (reader, writer) = try Self.cloexecPipe()
        process.standardOutput = writer
        try process.run()
        try writer.close()
        let data = reader.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// How many times the server has run `command` (lowercase), scripts' own calls included, from
    /// `INFO commandstats`; 0 before its first run.
    public func calls(of command: String) throws -> Int {
        let stats = try cli("INFO", "commandstats")
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):") }),
              let calls = line.split(separator: ",").first?.split(separator: "=").last, let count = Int(calls) else {
            return 0
        }
        return count
    }

    /// A stream socketpair, both ends close-on-exec, shut down to one direction each: (read end, write end).
    /// The child gets its end through Process's dup2, which clears the flag on the copy.
    public static func cloexecPipe() throws -> (FileHandle, FileHandle) {
        var fds: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw RedisServerFailure("socketpair: errno \(errno)") }
        shutdown(fds[0], Int32(SHUT_WR))
        shutdown(fds[1], Int32(SHUT_RD))
        return (FileHandle(fileDescriptor: fds[0], closeOnDealloc: true), FileHandle(fileDescriptor: fds[1], closeOnDealloc: true))
    }

    /// A loopback port nothing listens on now (the kernel's choice for a socket bound to port 0).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RedisServerFailure("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw RedisServerFailure("bind: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

public struct RedisServerFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
