import FanoutEventLoop
@testable import FanoutServer
import Glibc
import Logging

/// A `Server` built inside the test process, in the spirit of swift-nio's `EmbeddedChannel` and nats-server's
/// `newClientForServer`: no listener, no signal handler, no thread. Peers are socket pairs whose server end
/// goes through the server's own accept path (`Server.accept(fd:peer:)`), and the test steps the loop itself,
/// so that a test waits for an event (a line, a close, a counter) rather than for time.
///
/// Everything runs on the test's thread: the loop only turns inside `step` and `run(until:)`, and between
/// passes the harness writes what peers sent and reads what they got. Tests talk through the wire and through
/// `Server`'s stable names (`configuration`, `connections`, `stats`), not through components' internals.
/// `shutdown()` (or the end of the harness) tears the server down and closes every descriptor it opened.
final class ServerHarness {
    let server: Server
    private(set) var peers: [HarnessPeer] = []
    private var nextPort = 40_000
    private var isShutDown = false

    /// The longest a `run(until:)` waits when the test names no bound.
    static let defaultTimeout = Duration.seconds(10)

    /// A server with the default configuration, changed by `configure`; its name in greetings is `harness`.
    init(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        // As fanoutd does at start: evbuffer_write to a peer that left must give EPIPE, not end the process.
        SignalWatcher.ignoreBrokenPipe()
        var configuration = ServerConfiguration()
        configuration.serverName = "harness"
        configure(&configuration)
        let logger = Logger(label: "harness", factory: { _ in SwiftLogNoOpLogHandler() })
        server = try Server(configuration: configuration, logger: logger)
    }

    deinit { shutdown() }

    /// Attaches a new client over a socket pair, as if accepted from `host`, and waits for its greeting (unless
    /// `greeting` is false, or the server refused it: then `id` is 0 and the refusal is in its inbox).
    /// `sendBuffer` caps the server end's kernel send buffer after the server set its own, so that a peer that
    /// stops reading pushes back after a few KiB.
    func connect(host: String = "127.0.0.1", sendBuffer: Int? = nil, greeting: Bool = true) throws -> HarnessPeer {
        var fds: [Int32] = [0, 0]
        // Both ends non-blocking, as libevent's listener hands accepted sockets over: the server never waits in
        // a call, and the harness reads and writes between passes.
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw HarnessError.system("socketpair", errno) }
        nextPort += 1
        let address = try SocketAddress(parsing: "\(host):\(nextPort)")
        let known = Set(server.connections.ids)
        server.accept(fd: fds[0], peer: address)
        let id = server.connections.ids.first { !known.contains($0) } ?? 0
        if id != 0, let sendBuffer {
            var value = Int32(sendBuffer)
            _ = setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        let peer = HarnessPeer(fd: fds[1], id: id, serverEnd: fds[0])
        peers.append(peer)
        if greeting && id != 0 {
            let hello = try reply(of: peer)
            guard hello.hasPrefix("+HELLO ") else { throw HarnessError.unexpected("greeting", hello) }
        }
        return peer
    }

    /// One loop pass, waiting at most `limit` for an event, with the peers' writes before it and their reads after.
    func step(waitingAtMost limit: Duration = .milliseconds(5)) {
        pump()
        server.loop.runOnce(waitingAtMost: limit)
        pump()
    }

    /// Steps the loop until `condition` holds; throws `HarnessError.timedOut` when `timeout` passes first.
    func run(until condition: () throws -> Bool, timeout: Duration = defaultTimeout,
             _ what: @autoclosure () -> String = "condition") throws {
        let deadline = ContinuousClock.now + timeout
        pump()
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw HarnessError.timedOut(what()) }
            step()
        }
    }

    /// Sends one command line and returns its reply; pushes that come before it stay in the inbox.
    @discardableResult
    func command(_ line: String, on peer: HarnessPeer, timeout: Duration = defaultTimeout) throws -> String {
        peer.send(line + "\n")
        return try reply(of: peer, timeout: timeout)
    }

    /// Waits for `peer`'s next reply line and takes it.
    func reply(of peer: HarnessPeer, timeout: Duration = defaultTimeout) throws -> String {
        var found: String?
        try run(until: {
            found = peer.takeReply()
            return found != nil || peer.sawEnd
        }, timeout: timeout, "a reply on connection \(peer.id)")
        guard let found else { throw HarnessError.unexpected("a reply on connection \(peer.id)", "end of stream") }
        return found
    }

    /// Waits for `peer`'s next line of any kind and takes it.
    func nextLine(of peer: HarnessPeer, timeout: Duration = defaultTimeout) throws -> String {
        try run(until: { !peer.inbox.isEmpty || peer.sawEnd }, timeout: timeout, "a line on connection \(peer.id)")
        guard let line = peer.takeLine() else {
            throw HarnessError.unexpected("a line on connection \(peer.id)", "end of stream")
        }
        return line
    }

    /// Every line `peer` gets before the answer to a `PING` sent now: what the server queued to it before this
    /// call, since its output keeps its order. Reads the peer even if it had stopped reading.
    func linesBeforeFence(of peer: HarnessPeer, timeout: Duration = defaultTimeout) throws -> [String] {
        let wasReading = peer.isReading
        peer.isReading = true
        defer { peer.isReading = wasReading }
        let fence = "+PONG fence-\(peer.id)"
        peer.send("PING fence-\(peer.id)\n")
        var lines: [String]?
        try run(until: {
            lines = peer.takeLines(before: fence)
            return lines != nil || peer.sawEnd
        }, timeout: timeout, "the fence on connection \(peer.id)")
        guard let lines else { throw HarnessError.unexpected("the fence on connection \(peer.id)", "end of stream") }
        return lines
    }

    /// A subscriber to `subject` that has stopped reading, with a 4 KiB send buffer on the server's end, so that
    /// its backlog builds in the server at once, as a stalled client's does behind a full kernel buffer.
    func laggingSubscriber(to subject: String) throws -> HarnessPeer {
        let peer = try connect(sendBuffer: 4096)
        let reply = try command("SUB \(subject)", on: peer)
        guard reply == "+OK 1" else { throw HarnessError.unexpected("+OK 1 to SUB \(subject)", reply) }
        peer.isReading = false
        return peer
    }

    /// `peer`'s unsent output as `CLIENTS` shows it (`pending=`), asked by `observer`; -1 when it is not listed.
    func pendingBytes(of peer: HarnessPeer, asking observer: HarnessPeer) throws -> Int {
        let reply = try command("CLIENTS", on: observer)
        for entry in reply.split(separator: " ") where entry.hasPrefix("id=\(peer.id),") {
            for field in entry.split(separator: ",") where field.hasPrefix("pending=") {
                return Int(field.dropFirst("pending=".count)) ?? -1
            }
        }
        return -1
    }

    /// Writes what peers have queued and reads what they were sent.
    func pump() {
        for peer in peers {
            peer.flush()
            peer.receive()
        }
    }

    /// The server's connection for `peer`, while it is open.
    func isConnected(_ peer: HarnessPeer) -> Bool {
        server.connections[peer.id] != nil
    }

    /// Tears the server down (connections, sockets, timers, loop) and closes every peer's end.
    func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        server.tearDown()
        for peer in peers { peer.close() }
        peers.removeAll()
    }
}

enum HarnessError: Error, CustomStringConvertible {
    case timedOut(String)
    case unexpected(String, String)
    case system(String, Int32)

    var description: String {
        switch self {
        case .timedOut(let what): "timed out waiting for \(what)"
        case .unexpected(let wanted, let got): "wanted \(wanted), got \(got)"
        case .system(let call, let code): "\(call) failed: errno \(code)"
        }
    }
}
