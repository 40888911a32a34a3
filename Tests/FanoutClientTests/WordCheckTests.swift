import FanoutClient
import FanoutEventLoop
import FanoutTestSupport
import Glibc
import Testing

/// Every word the client puts on a line is checked before anything is sent: a bad one fails its call with
/// `.invalid`, and the peer reads nothing of it. The peer here is a loopback socket the test itself accepts
/// and greets, so the test sees every byte the client writes, with no server in between.
@Suite("The client refuses words a line cannot carry", .threadPerTest, .timeLimit(.minutes(1)))
struct WordCheckTests {
    /// Calls that must fail with `.invalid` before sending; each reports through `done`.
    static var badCalls: [(name: String, call: (FanoutClient, @escaping (ClientError?) -> Void) -> Void)] {
        [
        ("publish with a space", { client, done in client.publish("bad subject", "x") { done($0.error) } }),
        ("publish to an empty subject", { client, done in client.publish("", "x") { done($0.error) } }),
        ("publish with a LF", { client, done in client.publish("a\nPUB b", "x") { done($0.error) } }),
        ("publish to a wildcard", { client, done in client.publish("news.*", "x") { done($0.error) } }),
        ("publish with an empty token", { client, done in client.publish("a..b", "x") { done($0.error) } }),
        ("binary publish with a space", { client, done in client.publishBinary("a b", [1, 2]) { done($0.error) } }),
        ("subscribe with a space", { client, done in client.subscribe(["ok", "a b"], completion: { done($0.error) }) }),
        ("subscribe to nothing", { client, done in client.subscribe([], completion: { done($0.error) }) }),
        ("subscribe to > not last", { client, done in client.subscribe(["a.>.b"], completion: { done($0.error) }) }),
        ("subscribe with LAST and a CR", { client, done in
            client.subscribe(["a\rb"], last: 2, completion: { done($0.error) }) }),
        ("unsubscribe with a LF", { client, done in client.unsubscribe(["a\nQUIT"], completion: { done($0.error) }) }),
        ("group with a space", { client, done in
            client.subscribe(["jobs"], group: "w 1", completion: { done($0.error) }) }),
        ("group too long", { client, done in
            client.subscribe(["jobs"], group: String(repeating: "g", count: 65), completion: { done($0.error) }) }),
        ("group pattern with a space", { client, done in
            client.subscribe(["a b"], group: "w", completion: { done($0.error) }) }),
        ("ask with a space", { client, done in
            client.ask("svc time", "now", timeout: .seconds(1), onAnswer: { _ in }) { done($0.error) } }),
        ("ask a wildcard", { client, done in
            client.ask("svc.*", "now", timeout: .seconds(1), onAnswer: { _ in }) { done($0.error) } }),
        ("answer with a bad id", { client, done in client.answer("q1 x", "42") { done($0.error) } }),
        ("request with a LF", { client, done in client.request("INFO\nPUB x y") { done($0.error) } }),
        ]
    }

    @Test func badWordsFailBeforeAnythingIsSent() throws {
        let peer = try FakePeer()
        defer { peer.close() }
        let loop = try EventLoop()
        let client = FanoutClient(loop: loop, address: try SocketAddress(parsing: "127.0.0.1:\(peer.port)"))
        defer { client.close() }
        var connected: Result<String, ClientError>?
        client.connect { connected = $0 }
        try peer.accept()
        peer.write("+HELLO fanout/1 fake auth=none\n")
        try spin(loop) { connected != nil }
        #expect((try? connected?.get()) == "fake")

        for (name, call) in Self.badCalls {
            var outcome: ClientError??
            call(client) { outcome = .some($0) }
            guard case .invalid(let reason)?? = outcome else {
                Issue.record("\(name): expected .invalid at once, got \(String(describing: outcome))")
                continue
            }
            #expect(!reason.isEmpty && !reason.contains("\n"), "\(name): one line of reason")
        }
        #expect(client.inFlight == 0, "nothing waits for a reply")

        // A good command after them: the peer reads it alone, so nothing of the refused ones was written.
        var receivers: Int?
        client.publish("good.subject", "x") { receivers = try? $0.get() }
        let line = try peer.readLine(spinning: loop)
        #expect(line == "PUB good.subject x")
        peer.write("+OK 0\n")
        try spin(loop) { receivers != nil }
        #expect(receivers == 0, "the reply goes to the good publish, not to a refused one")
    }

    @Test func aTokenThatAuthCannotCarryFailsTheConnect() throws {
        let loop = try EventLoop()
        for token in ["two words", "", "line\nPUB x y", "tab\there"] {
            let client = FanoutClient(loop: loop, address: try SocketAddress(parsing: "127.0.0.1:9"),
                                      options: ClientOptions(token: token))
            var result: Result<String, ClientError>?
            client.connect { result = $0 }
            guard case .failure(.invalid)? = result else {
                Issue.record("token \(token.debugDescription): expected .invalid, got \(String(describing: result))")
                continue
            }
        }
    }

    private func spin(_ loop: EventLoop, until done: () -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !done() {
            guard ContinuousClock.now < deadline else { throw PeerError("timed out") }
            loop.runOnce(blocking: false)
            usleep(1000)
        }
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A listening loopback socket that accepts one connection and reads and writes it with plain blocking calls.
final class FakePeer {
    private let listener: Int32
    private var connection: Int32 = -1
    private var buffer: [UInt8] = []
    let port: Int

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, listen(listener, 1) == 0 else { return -1 }
                return getsockname(listener, pointer, &length)
            }
        }
        guard bound == 0 else { throw PeerError("cannot listen on loopback") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts the client's connection (already queued: connecting to loopback completes in the kernel).
    func accept() throws {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 10_000) == 1 else { throw PeerError("no connection") }
        connection = Glibc.accept(listener, nil, nil)
        guard connection >= 0 else { throw PeerError("accept failed") }
    }

    /// Whether a connection (a second one, after `accept`) waits to be accepted within `milliseconds`.
    func hasWaitingConnection(within milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) == 1
    }

    /// Closes the accepted connection, as a server does after its last line.
    func hangUp() {
        if connection >= 0 { Glibc.close(connection) }
        connection = -1
    }

    func write(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The next line the client wrote, running the client's loop while waiting for it.
    func readLine(spinning loop: EventLoop) throws -> String {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if let end = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 1)
                return line
            }
            guard ContinuousClock.now < deadline else { throw PeerError("no line from the client") }
            loop.runOnce(blocking: false)
            var poller = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 1) == 1 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw PeerError("the client closed the connection") }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    func close() {
        if connection >= 0 { Glibc.close(connection) }
        Glibc.close(listener)
    }
}
