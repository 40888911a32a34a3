import Foundation

/// The built `fanout` client, run as a user runs it (without `FANOUT_SERVER` from the test's environment).
final class FanoutTool: ExternalProgram, @unchecked Sendable {
    static var executable: URL { Daemon.binDirectory.appendingPathComponent("fanout") }

    /// Starts `fanout <arguments>`; stdin stays open until `closeInput` (or is `stdinData`, then closed).
    init(_ arguments: [String], environment: [String: String] = [:], stdinData: Data? = nil) throws {
        try super.init(path: Self.executable.path, arguments, environment: environment, unset: ["FANOUT_SERVER"],
                       input: stdinData.map { .data($0) } ?? .pipe, finishTimeout: 30)
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
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
