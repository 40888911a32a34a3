import FanoutEventLoop
import FanoutProtocol

extension Server {
    /// Assigns the message its seq, queues it for every connection subscribed to a matching pattern, and
    /// returns how many connections that is.
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from publisher: ClientConnection,
                 anyBytes: Bool = false) -> Int {
        if !fanout.run.isRun(of: subject) || fanout.run.publisher !== publisher {
            closeRun()
            fanout.run.open(subject: subject, numberedBy: engine)
            if fanout.run.publisher !== publisher { fanout.run.publisher = publisher }
            gatherRunReceivers()
        }
        fanout.run.seq += 1
        stats.published += 1
        if fanout.run.retains, let position = fanout.run.position {
            engine.retain(position, seq: fanout.run.seq, payload: payload)
        }
        let plain = fanout.run.receivers.count &+ fanout.run.adaptedReceivers.count &+ fanout.run.waiting.count
        var receivers = plain
        if !fanout.run.groups.isEmpty {
            receivers &+= deliverToGroups(subject: subject, seq: fanout.run.seq, payload: payload, anyBytes: anyBytes)
            if fanout.needsGroupFlush { flushRunBytes() }
        }
        guard receivers > 0 else { return 0 }
        stats.delivered += UInt64(receivers)
        guard plain > 0 else { return receivers }
        if anyBytes {
            Encoder.appendPush(subject: subject, seq: fanout.run.seq, payload: payload,
                               maxLine: configuration.limits.maxLine, to: &fanout.run.bytes)
        } else {
            Encoder.appendMessage(subject: subject, seq: fanout.run.seq, payload: payload, to: &fanout.run.bytes)
        }
        if fanout.run.bytes.count >= PublishRun.flushBytes { flushRunBytes() }
        return receivers
    }

    /// Resolves the open run's receivers from the subject index, once per run: line receivers, receivers
    /// whose transport adapts lines, and receivers being sent a replay (their lines wait behind it).
    func gatherRunReceivers() {
        let withholds = auth.anyUserWithholds
        index.forEachReceiver(of: fanout.run.subjectString) { connection in
            guard let socket = connection.socket else { return }
            if withholds && connection.permissions?.withholds(fanout.run.subjectString) == true { return }
            if connection.gate.stops.contains(.commandsHeld), let job = connection.extras?.replayJob {
                fanout.run.waiting.append(job)
                return
            }
            if !connection.transport.writesLines {
                fanout.run.adaptedReceivers.append(.init(connection: .passUnretained(connection), socket: socket))
            } else {
                fanout.run.receivers.append(.init(connection: .passUnretained(connection), socket: socket))
            }
        }
        if index.hasGroups { gatherRunGroups() }
    }

    /// Closes the run and lets go of its publisher too: when a read ends, or the server does.
    func finishRuns() {
        closeRun()
        fanout.run.publisher = nil
    }

    /// Writes out the run and forgets its receivers, releasing the strong references it took.
    func closeRun() {
        guard fanout.run.isOpen, !fanout.isFlushing else { return }
        flushRunReplies()
        flushRunBytes()
        if !fanout.run.groupMessages.isEmpty { claimForGroups() }
        let subject = fanout.run.subjectString
        if let position = fanout.run.position {
            engine.closeRun(subject: subject, at: position, lastSeq: fanout.run.seq)
        }
        fanout.run.close()
        if !fanout.retired.isEmpty { fanout.retired.removeAll() }
    }

    /// Writes the publisher's replies to the run so far: before the run's lines, as when each was written at
    /// once, and before anything else is sent to the publisher (every other command closes the run first).
    func flushRunReplies() {
        guard !fanout.run.replies.isEmpty else { return }
        if fanout.run.retains && engine.holdsAcknowledgements, let publisher = fanout.run.publisher {
            holdUntilDurable(publisher)
        }
        if let publisher = fanout.run.publisher, publisher.socket != nil { publisher.send(fanout.run.replies) }
        fanout.run.replies.removeAll(keepingCapacity: true)
    }

    /// Queues the run's lines to each receiver still connected: shared by reference when several receivers
    /// take a large batch, copied when small (a copy into a chain's free space beats a reference's allocation).
    func flushRunBytes() {
        guard !fanout.run.bytes.isEmpty || !fanout.run.groupDeliveries.isEmpty, !fanout.isFlushing else { return }
        fanout.isFlushing = true
        defer { fanout.isFlushing = false }
        flushRunReplies()
        if !fanout.run.waiting.isEmpty { queueBehindReplays(fanout.run.bytes, jobs: fanout.run.waiting) }
        if !fanout.run.adaptedReceivers.isEmpty { flushAdapted() }
        if !fanout.run.groupDeliveries.isEmpty { flushGroupDeliveries() }
        let marks = BacklogMarks(configuration.limits)
        stats.bytesOut += UInt64(fanout.run.bytes.count * fanout.run.receivers.count)
        if metrics != nil {
            let now = ContinuousClock.now
            for receiver in fanout.run.receivers where receiver.isConnected {
                receiver.connection._withUnsafeGuaranteedRef {
                    if $0.extras?.pendingSince == nil { $0.madeExtras.pendingSince = now }
                }
                receiver.socket.reportsDirectDrains = true
            }
        }
        if fanout.run.receivers.count > 1 && fanout.run.bytes.count >= 4096 {
            let shared = SharedBuffer()
            fanout.run.bytes.withUnsafeBytes { shared.append($0) }
            for receiver in fanout.run.receivers where receiver.isConnected {
                receiver.socket.write(sharing: shared)
                checkBacklog(of: receiver, marks: marks)
            }
        } else {
            fanout.run.bytes.withUnsafeBytes { bytes in
                for receiver in fanout.run.receivers where receiver.isConnected {
                    receiver.socket.write(bytes)
                    checkBacklog(of: receiver, marks: marks)
                }
            }
        }
        fanout.run.bytes.removeAll(keepingCapacity: true)
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
        if pending > marks.holdAbove { holdBack(fanout.run.publisher, for: connection) }
        if pending > marks.limit { dropSlowConsumer(connection, pending: pending) }
    }

    /// The same check for a connection written to outside a run (a replay's waiting lines, a group's share, a
    /// question or an answer), whose unsent output includes what waits behind a replay.
    func checkBacklog(of connection: ClientConnection, marks: BacklogMarks) {
        let pending = connection.pendingBytes
        guard pending > marks.watchAbove else { return }
        applyBacklogMarks(marks, to: connection, pending: pending)
    }

    func dropSlowConsumer(_ connection: ClientConnection, pending: Int) {
        disconnect(connection, reason: .slowConsumer(
            "\(pending) bytes pending, max_pending_bytes=\(configuration.limits.maxPendingBytes)"))
    }
}
