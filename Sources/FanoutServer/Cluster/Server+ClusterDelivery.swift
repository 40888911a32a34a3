import FanoutEventLoop
import FanoutMulticast
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
            let receivers = fanout.run.receivers.count &+ fanout.run.adaptedReceivers.count &+ fanout.run.waiting.count
            if !fanout.run.groups.isEmpty {
                // Groups are served once this node's claim of the run comes back (`claimForGroups`).
                if fanout.run.clusterEpoch != delivery.epoch { claimForGroups() }
                fanout.run.clusterEpoch = delivery.epoch
                fanout.run.groupMessages.append((delivery.seq, delivery.payload))
                if fanout.run.groupMessages.count >= 256 { claimForGroups() }
            }
            guard receivers > 0 else { return }
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

    /// Claims the run's messages so far for each of its groups on the subject's shard; for each group whose
    /// claim this node wins, one member per message gets them, chosen when the claim comes back (a member
    /// that vanished meanwhile is not chosen). Messages go in claim order, which is seq order.
    func claimForGroups() {
        guard let node = cluster, !fanout.run.groupMessages.isEmpty else { return }
        let messages = fanout.run.groupMessages
        fanout.run.groupMessages.removeAll()
        let subject = fanout.run.subjectString
        let names = fanout.run.groups.map(\.name)
        for name in names {
            node.engine.claim(subject: subject, group: name, epoch: fanout.run.clusterEpoch,
                              first: messages[0].seq, last: messages[messages.count - 1].seq) { [weak self] claimedAfter in
                guard let claimedAfter, let self, self.cluster === node else {
                    if claimedAfter == nil { node.groupClaimsLost += 1 }
                    return
                }
                node.groupClaimsWon += 1
                self.deliverClaimed(messages.filter { $0.seq > claimedAfter }, subject: subject, group: name)
            }
        }
    }

    /// Hands claimed messages to one member each of `group` on this node, never one that gets the subject
    /// plainly (it has them already).
    private func deliverClaimed(_ messages: [(seq: UInt64, payload: [UInt8])], subject: String, group: String) {
        var groups: [(name: String, members: MulticastGroup<ClientConnection>)] = []
        index.forEachGroup(of: subject) { name, members in if name == group { groups.append((name, members)) } }
        guard !groups.isEmpty else { return }
        index.forEachReceiver(of: subject) { _ in }
        let plainMark = index.lastMark
        let marks = BacklogMarks(configuration.limits)
        var subjectBytes = subject
        subjectBytes.withUTF8 { subjectBuffer in
            for message in messages {
                forEachChosenMember(of: groups, excluding: nil) { member, _ in
                    guard member.deliveryMark != plainMark else { return }
                    var push: [UInt8] = []
                    message.payload.withUnsafeBytes { payload in
                        Encoder.appendPush(subject: UnsafeRawBufferPointer(subjectBuffer), seq: message.seq,
                                           payload: payload, maxLine: configuration.limits.maxLine, to: &push)
                    }
                    deliver(push, to: member)
                    stats.delivered += 1
                    stats.groupDeliveries += 1
                    checkBacklog(of: member, marks: marks)
                }
            }
        }
    }
}
