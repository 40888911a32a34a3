import DequeModule
import FanoutEngine
import FanoutEventLoop
import FanoutProtocol

/// What holding output for the disk needs from the server: the loop for its poll, this process's history (the
/// writer's progress), the fan-out (a run's replies), the counters, and closing a connection.
protocol DurableAcknowledgementsHost: AnyObject {
    var loop: EventLoop { get }
    var localHistory: any LocalHistory { get }
    var fanout: Fanout<Server> { get }
    var stats: ServerStats { get set }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// Under `history_fsync: always`, a PUB to a subject with history is acknowledged only once its record is
/// synced, so that `+OK` means "on disk"; and its subscribers get it only then too, as does a RESUME or
/// LAST's reply and replay, so that nobody ever sees a message that a crash could number again. The loop
/// never waits for that: the connection's output (the publisher's `+OK`s, a subscriber's messages, and
/// everything after them, in order) is held in a `HeldOutput`, and a timer polls the writer's count of synced
/// records and releases what it covers. Connections read on meanwhile; a client that waits for its
/// acknowledgements (a window) is paced by the disk's group commits.
///
/// Bound: one held connection per connection with unsynced output; its held bytes count as its pending output
/// (`ClientConnection.pendingBytes`), under the same slow-consumer limit as its socket's, and are released a
/// group commit (about one fdatasync) later.
///
/// A record that could not be written or synced is settled too, as failed, once `state` says a crash renews
/// the epochs (`DiskState`): a subscriber may then get its message, but its publisher never gets the `+OK`. A
/// held chunk that acknowledges records, one of which failed, is dropped with everything held after it; the
/// publisher gets `-ERR unavailable` and is disconnected, which tells it that none of its PUBs without a `+OK`
/// is on disk (a reply cannot be taken back from the middle of held output, and a pipelining publisher must
/// know where the acknowledgements stop).
final class DurableAcknowledgements {
    /// How often the writer's progress is polled while output is held.
    static let pollInterval = Duration.milliseconds(1)

    unowned let host: any DurableAcknowledgementsHost
    /// Publishers whose output is held, in no order.
    private var holders: [ClientConnection] = []
    /// The writer's count of settled records as the loop last read it: a chunk made from now on acknowledges
    /// only records after it (they were recorded since that read, on the loop).
    private var settledSeen: UInt64 = 0
    private var timer: LoopTimer?

    init(host: any DurableAcknowledgementsHost) {
        self.host = host
    }

    func tearDown() {
        timer = nil
        holders.removeAll()
    }
}

/// A connection's output held for the disk: chunks, each released once the records before it are synced.
final class HeldOutput {
    /// Bytes in order, each chunk behind the record whose ticket it names; `from` is the ticket before the
    /// first record it may acknowledge, and `acknowledges` whether it holds a publisher's `+OK`s.
    var chunks = Deque<(ticket: UInt64, from: UInt64, acknowledges: Bool, bytes: [UInt8])>()
    /// A graceful close (QUIT, the client's EOF) that waits for the held output to go first.
    var closeReason: DisconnectReason?
    /// Bytes held in all: they count as the connection's pending output, for the slow-consumer limit.
    private(set) var bytes = 0

    func append(_ more: [UInt8]) {
        guard !chunks.isEmpty else { return }
        chunks[chunks.count - 1].bytes.append(contentsOf: more)
        bytes += more.count
    }

    func removeFirst() -> (ticket: UInt64, from: UInt64, acknowledges: Bool, bytes: [UInt8]) {
        let first = chunks.removeFirst()
        bytes -= first.bytes.count
        return first
    }
}

extension DurableAcknowledgements {
    /// Holds what is sent to `publisher` (or a subscriber) from now on until every record retained so far is
    /// synced.
    /// `acknowledging`: what follows is a publisher's `+OK`s for records up to now.
    func hold(_ publisher: ClientConnection, acknowledging: Bool = false) {
        let ticket = host.localHistory.recordedTicket
        let from = settledSeen
        if let held = publisher.extras?.heldOutput {
            if held.chunks.last?.ticket != ticket {
                held.chunks.append((ticket, from, acknowledging, []))
            } else if acknowledging {
                held.chunks[held.chunks.count - 1].acknowledges = true
            }
            return
        }
        let held = HeldOutput()
        held.chunks.append((ticket, from, acknowledging, []))
        publisher.madeExtras.heldOutput = held
        holders.append(publisher)
        if timer == nil {
            timer = LoopTimer(loop: host.loop) { [unowned self] in self.release() }
        }
        timer?.schedule(after: Self.pollInterval)
    }

    /// A QUIT or an EOF from a publisher whose acknowledgements are held waits for them: they go out first,
    /// then the connection closes as it would have. True when the close was put off; failures close at once.
    func defersDisconnect(of connection: ClientConnection, reason: DisconnectReason) -> Bool {
        guard host.localHistory.holdsAcknowledgements, connection.socket != nil else { return false }
        // The run's replies so far are held too, ahead of the farewell.
        if connection === host.fanout.run.publisher { host.fanout.flushReplies() }
        guard let held = connection.extras?.heldOutput else { return false }
        switch reason {
        case .quit, .eof, .idleTimeout, .authTimeout, .webSocketClose:
            held.closeReason = reason
            connection.stopReading(.commandsHeld)
            return true
        default:
            return false
        }
    }

    /// Sends the held output whose records are synced (all of it when `all`), and polls again while some is
    /// left.
    func release(all: Bool = false) {
        guard !holders.isEmpty else { return }
        let history = host.localHistory
        history.submitWaitingRecords()
        let settled = history.durableTicket
        settledSeen = settled
        let durable = all ? UInt64.max : settled
        holders.removeAll { connection in
            guard let held = connection.extras?.heldOutput else { return true }
            while let first = held.chunks.first, first.ticket <= durable {
                if first.acknowledges, first.from < first.ticket, history.recordsFailed(first.from + 1...first.ticket) {
                    refuseHeldAcknowledgements(of: connection, held)
                    return true
                }
                _ = held.removeFirst()
                guard connection.socket != nil, !first.bytes.isEmpty else { continue }
                connection.extras?.heldOutput = nil
                connection.write(first.bytes)
                connection.madeExtras.heldOutput = held
            }
            if held.chunks.isEmpty || connection.socket == nil {
                connection.extras?.heldOutput = nil
                if let reason = held.closeReason { host.disconnect(connection, reason: reason) }
                return true
            }
            return false
        }
        if !holders.isEmpty {
            timer?.schedule(after: Self.pollInterval)
        }
    }

    /// A record that `connection`'s held `+OK`s acknowledge failed: they and everything held after them go,
    /// and the connection is told and closed (`DurableAcknowledgements`).
    private func refuseHeldAcknowledgements(of connection: ClientConnection, _ held: HeldOutput) {
        held.chunks.removeAll()
        connection.extras?.heldOutput = nil
        host.stats.unavailable += 1
        let why = host.localHistory.diskFigures.map { "after \($0.failures) failed disk writes" } ?? ""
        connection.write(ProtocolError(.unavailable, "history on disk could not be written \(why); PUBs without " +
                                       "+OK were not stored; closing").line)
        host.disconnect(connection, reason: .quit)
    }
}
