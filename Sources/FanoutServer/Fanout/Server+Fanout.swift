import FanoutEventLoop
import FanoutProtocol

extension Server {
    /// Assigns the message its seq, queues it for every connection subscribed to a matching pattern, and
    /// returns how many connections that is.
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from publisher: ClientConnection) -> Int {
        if !publishRun.isRun(of: subject) || publishRun.publisher !== publisher {
            closeRun()
            publishRun.open(subject: subject, numberedBy: engine)
            if publishRun.publisher !== publisher { publishRun.publisher = publisher }
            gatherRunReceivers()
        }
        publishRun.seq += 1
        stats.published += 1
        if publishRun.retains, let position = publishRun.position {
            engine.retain(position, seq: publishRun.seq, payload: payload)
        }
        let receivers = publishRun.receivers.count &+ publishRun.adaptedReceivers.count &+ publishRun.waiting.count
        guard receivers > 0 else { return 0 }
        stats.delivered += UInt64(receivers)
        Encoder.appendMessage(subject: subject, seq: publishRun.seq, payload: payload, to: &publishRun.bytes)
        if publishRun.bytes.count >= PublishRun.flushBytes { flushRunBytes() }
        return receivers
    }

    /// Resolves the open run's receivers from the subject index, once per run: line receivers, receivers
    /// whose transport adapts lines, and receivers being sent a replay (their lines wait behind it).
    func gatherRunReceivers() {
        let withholds = anyUserWithholds
        index.forEachReceiver(of: publishRun.subjectString) { connection in
            guard let socket = connection.socket else { return }
            if withholds && connection.permissions?.withholds(publishRun.subjectString) == true { return }
            if connection.state == .delayed, let job = connection.replayJob {
                publishRun.waiting.append(job)
                return
            }
            if !connection.transport.writesLines {
                publishRun.adaptedReceivers.append(.init(connection: .passUnretained(connection), socket: socket))
            } else {
                publishRun.receivers.append(.init(connection: .passUnretained(connection), socket: socket))
            }
        }
    }

    /// Closes the run and lets go of its publisher too: when a read ends, or the server does.
    func finishRuns() {
        closeRun()
        publishRun.publisher = nil
    }

    /// Writes out the run and forgets its receivers, releasing the strong references it took.
    func closeRun() {
        guard publishRun.isOpen else { return }
        flushRunReplies()
        flushRunBytes()
        let subject = publishRun.subjectString
        if let position = publishRun.position {
            engine.closeRun(subject: subject, at: position, lastSeq: publishRun.seq)
        }
        publishRun.close()
        if !retiredDuringRun.isEmpty { retiredDuringRun.removeAll() }
    }

    /// Writes the publisher's replies to the run so far: before the run's lines, as when each was written at
    /// once, and before anything else is sent to the publisher (every other command closes the run first).
    func flushRunReplies() {
        guard !publishRun.replies.isEmpty else { return }
        if let publisher = publishRun.publisher, publisher.socket != nil { publisher.send(publishRun.replies) }
        publishRun.replies.removeAll(keepingCapacity: true)
    }

    /// Queues the run's lines to each receiver still connected: shared by reference when several receivers
    /// take a large batch, copied when small (a copy into a chain's free space beats a reference's allocation).
    func flushRunBytes() {
        guard !publishRun.bytes.isEmpty else { return }
        flushRunReplies()
        if !publishRun.waiting.isEmpty { queueBehindReplays(publishRun.bytes, jobs: publishRun.waiting) }
        if !publishRun.adaptedReceivers.isEmpty { flushAdapted() }
        let marks = BacklogMarks(configuration.limits)
        stats.bytesOut += UInt64(publishRun.bytes.count * publishRun.receivers.count)
        if metrics != nil {
            let now = ContinuousClock.now
            for receiver in publishRun.receivers where receiver.isConnected {
                receiver.connection._withUnsafeGuaranteedRef { if $0.pendingSince == nil { $0.pendingSince = now } }
                receiver.socket.reportsDirectDrains = true
            }
        }
        if publishRun.receivers.count > 1 && publishRun.bytes.count >= 4096 {
            let shared = SharedBuffer()
            publishRun.bytes.withUnsafeBytes { shared.append($0) }
            for receiver in publishRun.receivers where receiver.isConnected {
                receiver.socket.write(sharing: shared)
                checkBacklog(of: receiver, marks: marks)
            }
        } else {
            publishRun.bytes.withUnsafeBytes { bytes in
                for receiver in publishRun.receivers where receiver.isConnected {
                    receiver.socket.write(bytes)
                    checkBacklog(of: receiver, marks: marks)
                }
            }
        }
        publishRun.bytes.removeAll(keepingCapacity: true)
    }

    /// Checks a receiver's backlog after a write: one comparison on the fast path, below every mark.
    @inline(__always)
    func checkBacklog(of receiver: PublishRun.Receiver, marks: BacklogMarks) {
        let pending = receiver.socket.outputCount
        guard pending > marks.watchAbove else { return }
        applyBacklogMarks(marks, to: receiver.connection.takeUnretainedValue(), pending: pending)
    }

    /// Has the server-wide memory bound watch `connection` once its backlog is past `BacklogWatch.mark`,
    /// holds the run's publisher back past `backpressure_bytes`, and drops the connection past the limit.
    func applyBacklogMarks(_ marks: BacklogMarks, to connection: ClientConnection, pending: Int) {
        if pending > BacklogWatch.mark { watchBacklog(of: connection) }
        if pending > marks.holdAbove { holdBack(publishRun.publisher, for: connection) }
        if pending > marks.limit { dropSlowConsumer(connection, pending: pending) }
    }

    func dropSlowConsumer(_ connection: ClientConnection, pending: Int) {
        disconnect(connection, reason: .slowConsumer(
            "\(pending) bytes pending, max_pending_bytes=\(configuration.limits.maxPendingBytes)"))
    }
}
