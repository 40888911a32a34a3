import DequeModule
import FanoutEventLoop

/// What departures reach in the server: the loop their slices run on, and the one way a connection is let go.
protocol DeparturesHost: AnyObject {
    var loop: EventLoop { get }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// Peers that leave by themselves (end of stream, reset) are let go at once, up to `perPass` in a loop pass;
/// past that they wait, in the order they left, and go `slice` per pass. Letting go of a connection costs
/// about 10 µs (its socket's close, its subscriptions', presence's leaves and the table's entry): 10,000
/// clients that close together would otherwise take one pass of 100 ms or more, and every other client's
/// command would wait behind it. A waiting connection reads nothing (libevent stopped reading at its end) and
/// stays in the table and its subscriber sets for those few passes, as it would have had the end come a
/// little later.
///
/// Worst case: one entry (a reference and a reason) per connection, `max_connections` at most.
final class Departures {
    unowned let host: any DeparturesHost
    /// Let go at once in a pass before the rest wait: a few departures cost nothing worth spreading.
    static let perPass = 64
    /// Let go per later pass: a few milliseconds.
    static let slice = 256

    private var waiting = Deque<(connection: ClientConnection, reason: DisconnectReason)>()
    private var inThisPass = 0
    private var timer = SliceTimer()

    init(host: any DeparturesHost) {
        self.host = host
    }

    /// Connections whose departure waits for a later pass.
    var count: Int { waiting.count }

    /// The peer of `connection` ended the stream or the socket failed: let it go now, or in a later pass when
    /// this one has let enough go already (or others wait before it).
    func peerLeft(_ connection: ClientConnection, reason: DisconnectReason) {
        timer.schedule(on: host.loop) { [unowned self] in self.nextPass() }
        guard waiting.isEmpty, inThisPass < Self.perPass else {
            waiting.append((connection, reason))
            return
        }
        inThisPass += 1
        host.disconnect(connection, reason: reason)
    }

    private func nextPass() {
        inThisPass = 0
        // A connection the server let go meanwhile (shutdown, a slow consumer) is not let go twice:
        // `disconnect` returns at once for a closed connection.
        for _ in 0..<min(Self.slice, waiting.count) {
            let (connection, reason) = waiting.removeFirst()
            host.disconnect(connection, reason: reason)
        }
        if !waiting.isEmpty {
            timer.schedule(on: host.loop) { [unowned self] in self.nextPass() }
        }
    }

    func tearDown() {
        timer.tearDown()
        waiting.removeAll()
    }
}
