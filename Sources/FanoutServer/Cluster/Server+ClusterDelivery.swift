import FanoutEventLoop
import FanoutProtocol
import FanoutRedisEngine

/// Messages from Redis to this node's subscribers go through the same publish run as local publishes:
/// consecutive messages of one subject within one loop pass (hiredis hands a read's messages over one by one)
/// are built into one buffer and queued to each receiver once, shared by reference when large, framed once
/// for WebSocket receivers, behind a replay for a connection being sent one, and under the same marks
/// (memory bound, slow-consumer limit). The run is closed at the end of the pass, when another subject's
/// message comes, at 64 KiB, and before anything that could change who receives it (any command, a
/// subscription change, a departure), so a connection gets exactly the messages that arrived while it was
/// subscribed.
extension Server {
    /// Cost: one index lookup per run, then one append per message and one write per receiver per run.
    /// Remote publishers cannot be held back, so a receiver past max_pending_bytes is dropped as a slow
    /// consumer.
    func deliverFromCluster(_ delivery: RedisEngine.Delivery) {
        guard let node = cluster else { return }
        var subject = delivery.subject
        subject.withUTF8 { raw in
            let subjectBytes = UnsafeRawBufferPointer(raw)
            if !fanout.run.isDelivered || !fanout.run.isRun(of: subjectBytes) {
                closeRun()
                fanout.run.openDelivered(subject: subjectBytes)
                gatherRunReceivers()
            }
            fanout.run.seq = delivery.seq
            let plain = fanout.run.receivers.count &+ fanout.run.adaptedReceivers.count &+ fanout.run.waiting.count
            var receivers = plain
            if !fanout.run.groups.isEmpty {
                // One member per group on this node: the choice is not yet made across nodes.
                receivers &+= delivery.payload.withUnsafeBytes { payload in
                    deliverToGroups(subject: subjectBytes, seq: delivery.seq, payload: payload, anyBytes: true)
                }
                if fanout.needsGroupFlush { flushRunBytes() }
            }
            guard plain > 0 else {
                stats.delivered += UInt64(receivers)
                return
            }
            stats.delivered += UInt64(receivers)
            if let reset = delivery.reset {
                // In the run, so every receiver hears it right before the message, on every transport.
                Encoder.appendReset(subject: subjectBytes, epoch: reset.epoch, seq: reset.seq, missed: reset.missed,
                                    to: &fanout.run.bytes)
                node.resets += 1
            }
            delivery.payload.withUnsafeBytes { payload in
                // Any bytes pass through Redis unchanged: a payload a line cannot carry is pushed as BMSG.
                Encoder.appendPush(subject: subjectBytes, seq: delivery.seq, payload: payload,
                                   maxLine: configuration.limits.maxLine, to: &fanout.run.bytes)
            }
            if fanout.run.bytes.count >= PublishRun.flushBytes { flushRunBytes() }
        }
    }

    /// Writes out a run of messages from Redis and forgets it.
    func flushClusterRun() {
        if fanout.run.isDelivered { closeRun() }
    }
}
