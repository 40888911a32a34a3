import FanoutEventLoop
import FanoutProtocol
import FanoutRedisEngine

/// Messages from Redis to this node's subscribers, in runs: consecutive messages of one subject within one
/// loop pass (hiredis hands a read's messages over one by one) are built into one buffer and written to each
/// receiver once, as a local publish run is. The run is written out at the end of the pass, when another
/// subject's message comes, at 64 KiB, and before anything that could change who receives it (any command,
/// a subscription change, a departure), so a connection gets exactly the messages that arrived while it was
/// subscribed.
extension Server {
    /// Cost: one index lookup per run, then one append per message and one write per receiver per run.
    /// Remote publishers cannot be held back, so a receiver past max_pending_bytes is dropped as a slow
    /// consumer.
    func deliverFromCluster(_ delivery: RedisEngine.Delivery) {
        guard let node = cluster else { return }
        if node.runSubject != delivery.subject {
            flushClusterRun()
            node.runSubject = delivery.subject
            let withholds = anyUserWithholds
            index.forEachReceiver(of: delivery.subject) { connection in
                guard connection.socket != nil else { return }
                if withholds && connection.permissions?.withholds(delivery.subject) == true { return }
                node.runReceivers.append(connection)
            }
        }
        guard !node.runReceivers.isEmpty else { return }
        stats.delivered += UInt64(node.runReceivers.count)
        var subject = delivery.subject
        subject.withUTF8 { subjectBytes in
            delivery.payload.withUnsafeBytes { payload in
                Encoder.appendMessage(subject: UnsafeRawBufferPointer(subjectBytes), seq: delivery.seq,
                                      payload: payload, to: &node.runBytes)
            }
        }
        if node.runBytes.count >= PublishRun.flushBytes { writeClusterRun(node) }
    }

    /// Writes out the run and forgets it.
    func flushClusterRun() {
        // A drop while the run is written (a slow consumer) asks again: that write is already going on.
        guard let node = cluster, node.runSubject != nil, !node.writingRun else { return }
        writeClusterRun(node)
        node.runSubject = nil
        node.runReceivers.removeAll(keepingCapacity: true)
    }

    /// Writes the run's bytes to each receiver still connected. The receivers are held strongly (two slow
    /// retains of a weakly referenced object per receiver per run, not per message), since the run may
    /// outlive other callbacks of the pass.
    private func writeClusterRun(_ node: ClusterNode) {
        guard !node.runBytes.isEmpty, !node.writingRun else { return }
        node.writingRun = true
        defer { node.writingRun = false }
        let limit = configuration.limits.maxPendingBytes
        stats.bytesOut += UInt64(node.runBytes.count * node.runReceivers.count)
        var dropped: [ClientConnection] = []
        node.runBytes.withUnsafeBytes { bytes in
            for connection in node.runReceivers {
                guard let socket = connection.socket else { continue }
                socket.write(bytes)
                if socket.outputCount > limit { dropped.append(connection) }
            }
        }
        node.runBytes.removeAll(keepingCapacity: true)
        for connection in dropped {
            let pending = connection.pendingBytes
            disconnect(connection, reason: .slowConsumer("\(pending) bytes pending, max_pending_bytes=\(limit)"))
        }
    }
}
