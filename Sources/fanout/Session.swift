import ArgumentParser
import FanoutClient
import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// One command's event loop and connected client. `run` drives the loop until `finish` or `fail`.
final class Session {
    let loop: EventLoop
    let client: FanoutClient
    private var failure: ClientError?

    convenience init(_ options: ConnectionOptions, reconnect: ReconnectPolicy = .never) throws {
        try self.init(address: try options.resolvedAddress(), options: options.clientOptions(reconnect: reconnect))
    }

    init(address: SocketAddress, options: ClientOptions) throws {
        SignalWatcher.ignoreBrokenPipe()
        loop = try EventLoop()
        client = FanoutClient(loop: loop, address: address, options: options)
    }

    /// Connects, then calls `body` once greeted; returns when `finish` is called, exiting on failure.
    func run(_ body: @escaping () -> Void) throws {
        client.connect { [unowned self] result in
            switch result {
            case .success: body()
            case .failure(let error): self.fail(error)
            }
        }
        try loop.run()
        if let failure { throw Self.exit(failure) }
    }

    /// Connects and returns once greeted (for commands that drive the loop themselves).
    func connectAndWait() throws {
        var connected = false
        client.connect { [unowned self] result in
            switch result {
            case .success: connected = true
            case .failure(let error): self.failure = error
            }
        }
        while !connected && failure == nil { loop.runOnce(blocking: true) }
        if let failure { throw Self.exit(failure) }
    }

    func finish() {
        loop.stop()
    }

    func fail(_ error: ClientError) {
        if failure == nil { failure = error }
        loop.stop()
    }

    /// Prints the one-line error and turns it into the matching exit code.
    static func exit(_ error: ClientError) -> ExitCode {
        printError(error.description)
        return ExitCode(ExitStatus.code(for: error))
    }
}

func printError(_ text: String) {
    let line = Array("fanout: \(text)\n".utf8)
    var offset = 0
    while offset < line.count {
        let written = line[offset...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        offset += written
    }
}
