import FanoutEventLoop
import FanoutProtocol
import FanoutRedisEngine

extension Server {
    /// A message from Redis, to this node's subscribers of its subject: one `MSG` line, written to each.
    ///
    /// Cost: one index lookup and one write per receiver, as for a local publish. Remote publishers cannot
    /// be held back, so a receiver past max_pending_bytes is dropped as a slow consumer.
    func deliverFromCluster(_ delivery: RedisEngine.Delivery) {
        guard let node = cluster else { return }
        node.receivers.removeAll(keepingCapacity: true)
        let withholds = anyUserWithholds
        index.forEachReceiver(of: delivery.subject) { connection in
            guard let socket = connection.socket else { return }
            if withholds && connection.permissions?.withholds(delivery.subject) == true { return }
            node.receivers.append(.init(connection: .passUnretained(connection), socket: socket))
        }
        guard !node.receivers.isEmpty else { return }
        node.line.removeAll(keepingCapacity: true)
        var subject = delivery.subject
        subject.withUTF8 { subjectBytes in
            delivery.payload.withUnsafeBytes { payload in
                Encoder.appendMessage(subject: UnsafeRawBufferPointer(subjectBytes), seq: delivery.seq,
                                      payload: payload, to: &node.line)
            }
        }
        let limit = configuration.limits.maxPendingBytes
        stats.delivered += UInt64(node.receivers.count)
        stats.bytesOut += UInt64(node.line.count * node.receivers.count)
        // The connections are not retained (see `PublishRun.Receiver`): the connection table keeps them
        // alive, and a drop below frees only the one dropped, which is not touched again.
        for receiver in node.receivers where receiver.isConnected {
            let socket = receiver.socket
            node.line.withUnsafeBytes { socket.write($0) }
            if socket.outputCount > limit {
                disconnect(receiver.connection.takeUnretainedValue(),
                           reason: .slowConsumer("\(socket.outputCount) bytes pending, max_pending_bytes=\(limit)"))
            }
        }
        node.receivers.removeAll(keepingCapacity: true)
    }
}
