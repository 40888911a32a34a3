import FanoutEventLoop
import FanoutEngine
import FanoutMulticast
import FanoutProtocol
import FanoutRedisEngine

/// Groups across several nodes: a message of a group reaches one member cluster-wide. Each node gathers a
/// run's messages and claims them for each of the run's groups on the subject's shard; the node whose claim
/// wins hands them to one member each (`RedisEngine+Groups.swift`).
extension Fanout {
    /// Keeps a delivered message for the run's group claim: a claim per epoch, and per 64 messages at most, so that
    /// the nodes' turns (`RedisEngine.claim`) spread even a short burst over them.
    func gatherForClaims(_ message: NumberedMessage, epoch: String) {
        if run.clusterEpoch != epoch { claimForGroups() }
        run.clusterEpoch = epoch
        run.groupMessages.append((message.seq, Array(message.payload)))
        if run.groupMessages.count >= 64 { claimForGroups() }
    }

    /// Claims the run's messages so far for each of its groups on the subject's shard; for each group whose
    /// claim this node wins, one member per message gets them, chosen when the claim comes back (a member
    /// that vanished meanwhile is not chosen). Messages go in claim order, which is seq order. A claim carries
    /// the node's member count for the group, by which the shard takes turns between nodes (`RedisEngine.claim`).
    func claimForGroups() {
        guard let node = host.cluster, !run.groupMessages.isEmpty else { return }
        let messages = run.groupMessages
        run.groupMessages.removeAll()
        let subject = run.subjectString
        let epoch = run.clusterEpoch
        // Only for groups with a member alive here: a claim this node won for members that had all left would
        // take the messages from another node's live members. Cost: a scan of the group's member sets until
        // a live member, per claim (per run), which a sweep keeps short. Members that leave while the claim is
        // on its way are the hand-back's case.
        for group in run.groups where group.sets.contains(where: { $0.hasLiveMember }) {
            // Members stored, O(1) per set: dead ones not yet swept count until the sweep, which is near enough
            // for a weight.
            let members = group.sets.reduce(0) { $0 + $1.storedCount }
            claim(messages, subject: subject, group: group.name, epoch: epoch, members: members, takingOver: false,
                  node: node)
        }
    }

    /// Claims `messages` for group `name`; told to wait for another node's turn, claims them again after
    /// `RedisEngine.turnWaitMilliseconds`, taking whatever that node has not taken; behind a run that waits,
    /// claims them again soon.
    private func claim(_ messages: [(seq: UInt64, payload: [UInt8])], subject: String, group name: String,
                       epoch: String, members: Int, takingOver: Bool, node: ClusterNode) {
        node.engine.claim(subject: subject, group: name, epoch: epoch, first: messages[0].seq,
                          last: messages[messages.count - 1].seq, members: members,
                          takingOver: takingOver) { [weak self] outcome in
            guard let self, self.host.cluster === node else { return }
            switch outcome {
            case .lost:
                node.groupClaimsLost += 1
            case .wait, .behind:
                node.groupClaimsWaited += 1
                let number = node.nextTurnRetry
                node.nextTurnRetry &+= 1
                let turn = outcome == .wait
                let timer = LoopTimer(loop: self.host.loop) { [weak self, weak node] in
                    guard let node else { return }
                    node.turnRetries[number] = nil
                    guard let self, self.host.cluster === node else { return }
                    self.claim(messages, subject: subject, group: name, epoch: epoch, members: members,
                               takingOver: turn || takingOver, node: node)
                }
                node.turnRetries[number] = timer
                timer.schedule(after: .milliseconds(turn ? RedisEngine.turnWaitMilliseconds
                                                         : RedisEngine.behindMilliseconds))
            case .won(let claimedAfter):
                node.groupClaimsWon += 1
                let unplaced = self.deliverClaimed(messages.filter { $0.seq > claimedAfter }, subject: subject,
                                                   group: name)
                for message in unplaced {
                    self.handBack(.init(subject: subject, group: name, epoch: epoch, seq: message.seq, attempt: 0,
                                        payload: message.payload), node: node)
                }
            }
        }
    }

    /// A message another node claimed and could not place: this node claims it too when it holds a live member
    /// of the group, and the node whose claim wins delivers it.
    func receiveHandedBack(_ message: RedisEngine.HandedBack) {
        guard let node = host.cluster else { return }
        var live = false
        host.index.forEachGroup(of: message.subject) { name, members in
            if name == message.group && members.hasLiveMember { live = true }
        }
        guard live else { return }
        node.engine.claimHandedBack(message) { [weak self] won in
            guard won, let self, self.host.cluster === node else { return }
            node.groupHandBacksTaken += 1
            let unplaced = self.deliverClaimed([(message.seq, message.payload)], subject: message.subject,
                                               group: message.group)
            if !unplaced.isEmpty {
                self.handBack(.init(subject: message.subject, group: message.group, epoch: message.epoch,
                                    seq: message.seq, attempt: message.attempt + 1, payload: message.payload),
                              node: node)
            }
        }
    }

    /// Hands a claimed message this node cannot place back to the other nodes, or counts it lost once it has
    /// been handed back `RedisEngine.handBackAttempts` times (or when the first shard cannot take it).
    ///
    /// The member that takes a handed-back message may have had later messages of the subject meanwhile: it then
    /// sees this one after them. A member's messages are otherwise an increasing subsequence of the subject's;
    /// here delivery wins over order, as the message would be lost otherwise.
    private func handBack(_ message: RedisEngine.HandedBack, node: ClusterNode) {
        guard message.attempt < RedisEngine.handBackAttempts, node.engine.handBack(message) else {
            node.groupHandBacksDropped += 1
            return
        }
        node.groupHandBacks += 1
    }

    /// Hands claimed messages to one member each of `group` on this node, never one that gets the subject
    /// plainly (it has them already), and returns those no member here could take (the group's members here
    /// all left).
    private func deliverClaimed(_ messages: [(seq: UInt64, payload: [UInt8])], subject: String,
                                group: String) -> [(seq: UInt64, payload: [UInt8])] {
        let index = host.index
        var groups: [(name: String, members: MulticastGroup<ClientConnection>)] = []
        index.forEachGroup(of: subject) { name, members in if name == group { groups.append((name, members)) } }
        guard !groups.isEmpty else { return messages }
        index.forEachReceiver(of: subject) { _ in }
        let plainMark = index.lastMark
        let marks = BacklogMarks(host.configuration.limits)
        let maxLine = host.configuration.limits.maxLine
        var unplaced: [(seq: UInt64, payload: [UInt8])] = []
        var subjectBytes = subject
        subjectBytes.withUTF8 { subjectBuffer in
            for message in messages {
                var placed = false
                forEachChosenMember(of: groups, excluding: nil, subject: subject) { member, _ in
                    placed = true
                    guard member.deliveryMark != plainMark else { return }
                    var push: [UInt8] = []
                    message.payload.withUnsafeBytes { payload in
                        Encoder.appendPush(subject: UnsafeRawBufferPointer(subjectBuffer), seq: message.seq,
                                           payload: payload, maxLine: maxLine, to: &push)
                    }
                    deliver(push, to: member)
                    host.stats.delivered += 1
                    host.stats.groupDeliveries += 1
                    checkBacklog(of: member, marks: marks)
                }
                if !placed { unplaced.append(message) }
            }
        }
        return unplaced
    }
}
