import DequeModule
import FanoutEventLoop
import FanoutProtocol

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
struct DurableAcknowledgements {
    /// Publishers whose output is held, in no order.
    var held: [ClientConnection] = []
    /// The writer's count of settled records as the loop last read it: a chunk made from now on acknowledges
    /// only records after it (they were recorded since that read, on the loop).
    var settledSeen: UInt64 = 0
    var timer: LoopTimer?
    /// How often the writer's progress is polled while output is held.
    static let pollInterval = Duration.milliseconds(1)

    mutating func tearDown() {
        timer = nil
        held.removeAll()
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

extension Server {
    /// Holds what is sent to `publisher` (or a subscriber) from now on until every record retained so far is
    /// synced.
    /// `acknowledging`: what follows is a publisher's `+OK`s for records up to now.
    func holdUntilDurable(_ publisher: ClientConnection, acknowledging: Bool = false) {
        let ticket = local.recordedTicket
        let from = durableAcknowledgements.settledSeen
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
        durableAcknowledgements.held.append(publisher)
        if durableAcknowledgements.timer == nil {
            durableAcknowledgements.timer = LoopTimer(loop: loop) { [unowned self] in self.releaseDurableOutput() }
        }
        durableAcknowledgements.timer?.schedule(after: DurableAcknowledgements.pollInterval)
    }

    /// A QUIT or an EOF from a publisher whose acknowledgements are held waits for them: they go out first,
    /// then the connection closes as it would have. True when the close was put off; failures close at once.
    func deferDisconnectUntilDurable(_ connection: ClientConnection, reason: DisconnectReason) -> Bool {
        guard local.holdsAcknowledgements, connection.socket != nil else { return false }
        // The run's replies so far are held too, ahead of the farewell.
        if connection === fanout.run.publisher { fanout.flushReplies() }
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
    func releaseDurableOutput(all: Bool = false) {
        guard !durableAcknowledgements.held.isEmpty else { return }
        local.submitWaitingRecords()
        let settled = local.durableTicket
        durableAcknowledgements.settledSeen = settled
        let durable = all ? UInt64.max : settled
        durableAcknowledgements.held.removeAll { connection in
            guard let held = connection.extras?.heldOutput else { return true }
            while let first = held.chunks.first, first.ticket <= durable {
                if first.acknowledges, first.from < first.ticket, local.recordsFailed(first.from + 1...first.ticket) {
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
                if let reason = held.closeReason { disconnect(connection, reason: reason) }
                return true
            }
            return false
        }
        if !durableAcknowledgements.held.isEmpty {
            durableAcknowledgements.timer?.schedule(after: DurableAcknowledgements.pollInterval)
        }
    }
}

extension Server {
    /// A record that `connection`'s held `+OK`s acknowledge failed: they and everything held after them go,
    /// and the connection is told and closed (`DurableAcknowledgements`).
    private func refuseHeldAcknowledgements(of connection: ClientConnection, _ held: HeldOutput) {
        held.chunks.removeAll()
        connection.extras?.heldOutput = nil
        stats.unavailable += 1
        let why = local.diskFigures.map { "after \($0.failures) failed disk writes" } ?? ""
        connection.write(ProtocolError(.unavailable, "history on disk could not be written \(why); PUBs without " +
                                       "+OK were not stored; closing").line)
        disconnect(connection, reason: .quit)
    }
}
