import FanoutEventLoop
import FanoutProtocol

extension Server {
    /// Assigns the message its seq, queues it for every connection subscribed to a matching pattern, and
    /// returns how many connections that is.
    func publish(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from publisher: ClientConnection) -> Int {
        if !publishRun.isRun(of: subject) || publishRun.publisher !== publisher {
            closeRun()
            publishRun.open(subject: subject, numberedBy: sequences)
            if publishRun.publisher !== publisher { publishRun.publisher = publisher }
            index.collectReceivers(of: publishRun.subjectString, into: &publishRun.receivers)
            if anyUserWithholds {
                let subject = publishRun.subjectString
                publishRun.receivers.removeAll { $0.permissions?.withholds(subject) == true }
            }
        }
        publishRun.seq += 1
        stats.published += 1
        let receivers = publishRun.receivers.count
        guard receivers > 0 else { return 0 }
        stats.delivered += UInt64(receivers)
        Encoder.appendMessage(subject: subject, seq: publishRun.seq, payload: payload, to: &publishRun.bytes)
        if publishRun.bytes.count >= PublishRun.flushBytes { flushRunBytes() }
        return receivers
    }

    /// Closes the run and lets go of its publisher too: when a read ends, or the server does.
    func finishRuns() {
        closeRun()
        publishRun.publisher = nil
    }

    /// Writes out the run and forgets its receivers, releasing the strong references it took.
    func closeRun() {
        guard publishRun.isOpen else { return }
        flushRunBytes()
        let subject = publishRun.subjectString
        sequences.store(publishRun.seq, for: subject, at: publishRun.sequenceSlot) { [index] in
            index.hasReceivers(for: $0)
        }
        publishRun.close()
    }

    /// Queues the run's lines to each receiver still connected: shared by reference when several receivers
    /// take a large batch, copied when small (a copy into a chain's free space beats a reference's allocation).
    private func flushRunBytes() {
        guard !publishRun.bytes.isEmpty else { return }
        let limit = configuration.maxPendingBytes
        let holdAbove = configuration.backpressureBytes > 0 ? configuration.backpressureBytes : Int.max
        stats.bytesOut += UInt64(publishRun.bytes.count * publishRun.receivers.count)
        if metrics != nil {
            let now = ContinuousClock.now
            for receiver in publishRun.receivers where receiver.pendingSince == nil { receiver.pendingSince = now }
        }
        if publishRun.receivers.count > 1 && publishRun.bytes.count >= 4096 {
            let shared = SharedBuffer()
            publishRun.bytes.withUnsafeBytes { shared.append($0) }
            for receiver in publishRun.receivers {
                guard let socket = receiver.socket else { continue }
                socket.write(sharing: shared)
                if socket.outputCount > holdAbove { holdBack(publishRun.publisher, for: receiver) }
                if socket.outputCount > limit { dropSlowConsumer(receiver, pending: socket.outputCount) }
            }
        } else {
            publishRun.bytes.withUnsafeBytes { bytes in
                for receiver in publishRun.receivers {
                    guard let socket = receiver.socket else { continue }
                    socket.write(bytes)
                    if socket.outputCount > holdAbove { holdBack(publishRun.publisher, for: receiver) }
                    if socket.outputCount > limit { dropSlowConsumer(receiver, pending: socket.outputCount) }
                }
            }
        }
        publishRun.bytes.removeAll(keepingCapacity: true)
    }

    private func dropSlowConsumer(_ connection: ClientConnection, pending: Int) {
        disconnect(connection, reason: .slowConsumer(
            "\(pending) bytes pending, max_pending_bytes=\(configuration.maxPendingBytes)"))
    }
}
