import FanoutMulticast
import FanoutProtocol

/// A publish's second shape: one member per group (QSUB). The groups are looked up once per run, like the
/// plain receivers, and a member is chosen per message, so that a run's messages spread over the members.
/// What a chosen member gets is queued in the run (`PublishRun.groupDeliveries`) and written after the
/// run's other lines, so that a publisher's `+OK` still comes before the message it published.
extension Server {
    /// Looks up the groups holding a pattern that matches the run's subject, sorted by name so that the
    /// patterns one group holds lie together.
    func gatherRunGroups() {
        index.forEachGroup(of: fanout.run.subjectString) { name, members in
            fanout.run.groups.append((name, members))
        }
        if fanout.run.groups.count > 1 { fanout.run.groups.sort { $0.name < $1.name } }
    }

    /// Chooses one member of each group for the message and queues it there, unless that member is a plain
    /// receiver of the run already (the group counts as served) or another group chose it too. Returns how
    /// many connections it queued the message to. O(groups) per message: each choice is O(1) amortised.
    func deliverToGroups(subject: UnsafeRawBufferPointer, seq: UInt64, payload: UnsafeRawBufferPointer,
                         anyBytes: Bool) -> Int {
        let runMark = index.lastMark
        var delivered = 0
        var chosen: [ObjectIdentifier] = []
        forEachChosenMember(of: fanout.run.groups, excluding: nil) { member, members in
            // A plain receiver of this run got the message with everyone else.
            if member.deliveryMark == runMark { return }
            let id = ObjectIdentifier(member)
            if chosen.contains(id) { return }
            chosen.append(id)
            if permissionsWithhold(fanout.run.subjectString, from: member) { return }
            let slot: Int
            if let existing = fanout.run.groupDeliverySlots[id] {
                slot = existing
            } else {
                slot = fanout.run.groupDeliveries.count
                fanout.run.groupDeliveries.append(.init(connection: member, members: members))
                fanout.run.groupDeliverySlots[id] = slot
            }
            Encoder.appendPush(subject: subject, seq: seq, payload: payload, maxLine: configuration.limits.maxLine,
                               to: &fanout.run.groupDeliveries[slot].bytes)
            delivered += 1
            if fanout.run.groupDeliveries[slot].bytes.count >= PublishRun.flushBytes { fanout.needsGroupFlush = true }
        }
        stats.groupDeliveries += UInt64(delivered)
        return delivered
    }

    /// Calls `body` with one member per group name among the run's groups (`excluded` never chosen): the
    /// next in turn that is not busy, from the group's first pattern that has one.
    func forEachChosenMember(of groups: [(name: String, members: MulticastGroup<ClientConnection>)],
                             excluding excluded: ClientConnection?,
                             _ body: (ClientConnection, MulticastGroup<ClientConnection>) -> Void) {
        var start = 0
        while start < groups.count {
            var end = start + 1
            while end < groups.count && groups[end].name == groups[start].name { end += 1 }
            var choice: (ClientConnection, MulticastGroup<ClientConnection>)?
            // A group holding several matching patterns has a member set per pattern: they take turns first.
            let sets = end - start
            let first = sets == 1 ? 0 : Int(fanout.groupTurn % UInt64(sets))
            if sets > 1 { fanout.groupTurn &+= 1 }
            for offset in 0..<sets {
                let position = start + (first + offset) % sets
                if let member = groups[position].members.pick(excluding: excluded, isBusy: isBusyInGroups) {
                    choice = (member, groups[position].members)
                    break
                }
            }
            if let choice, choice.0.socket != nil { body(choice.0, choice.1) }
            start = end
        }
    }

    /// Whether a group member's queued output is over the busy mark: then another member is chosen while one
    /// is under it. A member found busy is told when it drains (`groupMemberDrained`).
    func isBusyInGroups(_ member: ClientConnection) -> Bool {
        guard let socket = member.socket else { return true }
        let mark = configuration.limits.groupBusyBytes
        guard member.pendingBytes > mark else { return false }
        if !member.waitsForGroupDrain {
            member.waitsForGroupDrain = true
            socket.setWriteLowWatermark(mark)
            socket.reportsDirectDrains = true
        }
        return true
    }

    /// A member that was busy drained under the mark: its groups may choose it again.
    func groupMemberDrained(_ member: ClientConnection) {
        member.waitsForGroupDrain = false
        for (pattern, group) in member.groupOfPattern {
            index.group(group, of: pattern)?.markReady(member)
        }
    }

    private func permissionsWithhold(_ subject: String, from member: ClientConnection) -> Bool {
        auth.anyUserWithholds && member.permissions?.withholds(subject) == true
    }

    /// Queues what the run chose for group members: behind a replay under way, framed by an adapter, or as
    /// lines; then the usual marks.
    func flushGroupDeliveries() {
        let marks = BacklogMarks(configuration.limits)
        let deliveries = fanout.run.groupDeliveries
        fanout.run.groupDeliveries.removeAll(keepingCapacity: true)
        fanout.run.groupDeliverySlots.removeAll(keepingCapacity: true)
        fanout.needsGroupFlush = false
        for delivery in deliveries {
            var connection = delivery.connection
            if connection.socket == nil {
                // The member left during the run (a slow consumer dropped): another member of the group that
                // chose it takes its messages, so that none of the group's messages is lost while one is alive.
                guard let other = delivery.members.pick(excluding: connection, isBusy: isBusyInGroups),
                      other.socket != nil, other.deliveryMark != index.lastMark else { continue }
                connection = other
            }
            deliver(delivery.bytes, to: connection)
            let pending = connection.pendingBytes
            if pending > marks.watchAbove { applyBacklogMarks(marks, to: connection, pending: pending) }
        }
    }

    /// Queues pushes to one connection: behind a replay under way (so they never land inside it), else as its
    /// transport frames them.
    func deliver(_ bytes: [UInt8], to connection: ClientConnection) {
        if let job = connection.replayJob, connection.gate.stops.contains(.commandsHeld) {
            job.waiting.append(contentsOf: bytes)
        } else {
            connection.send(bytes)
        }
    }
}
