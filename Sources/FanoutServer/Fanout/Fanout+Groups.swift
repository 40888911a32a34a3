import FanoutEngine
import FanoutMulticast
import FanoutProtocol

/// A publish's second shape: one member per group (QSUB). The groups are looked up once per run, like the
/// plain receivers, and a member is chosen per message, so that a run's messages spread over the members.
/// What a chosen member gets is queued in the run (`PublishRun.groupDeliveries`) and written after the
/// run's other lines, so that a publisher's `+OK` still comes before the message it published.
extension Fanout {
    /// Looks up the groups holding a pattern that matches the run's subject: one `RunGroup` per group name,
    /// with the member sets of every pattern it holds.
    func gatherGroups() {
        var found: [(name: String, members: MulticastGroup<ClientConnection>)] = []
        host.index.forEachGroup(of: run.subjectString) { name, members in found.append((name, members)) }
        if found.count > 1 { found.sort { $0.name < $1.name } }
        var start = 0
        while start < found.count {
            var end = start + 1
            while end < found.count && found[end].name == found[start].name { end += 1 }
            run.groups.append(RunGroup(name: found[start].name, sets: found[start..<end].map(\.members)))
            start = end
        }
        if !claimsGroups { paceGroups() }
    }

    /// Starts each of the run's groups' pacing: how many members the run is spread over (`GroupPacing`).
    private func paceGroups() {
        let now = ContinuousClock.now
        for group in run.groups.indices {
            let spread = run.groups[group].sets[0].pacing.beginRun(at: now)
            guard spread != GroupPacing.everyMember else { continue }
            run.groups[group].spread = spread
            host.stats.groupPacedRuns &+= 1
        }
    }

    /// Ends the run's groups' pacing with the bytes each took, when the run closes.
    func endGroupPacing() {
        let now = ContinuousClock.now
        for group in run.groups.indices {
            run.groups[group].sets[0].pacing.endRun(at: now, bytes: run.groups[group].bytes)
        }
    }

    /// Queues the message to the next member of each group's rotation, unless that member is a plain receiver
    /// of the run (the group counts as served) or another group chose it for this message too. Returns how
    /// many connections it queued the message to. O(groups) per message, with no retain.
    func deliverToGroups(_ message: NumberedMessage) -> Int {
        var delivered = 0
        let several = run.groups.count > 1
        var chosenSlots: [Int] = []
        for group in run.groups.indices {
            guard let choice = nextChoice(in: group), !choice.isPlainReceiver else { continue }
            if several {
                if chosenSlots.contains(choice.slot) { continue }
                chosenSlots.append(choice.slot)
            }
            let before = run.groupDeliveries[choice.slot].bytes.count
            if message.anyBytes {
                Encoder.appendPush(subject: message.subject, seq: message.seq, payload: message.payload,
                                   maxLine: host.configuration.limits.maxLine,
                                   to: &run.groupDeliveries[choice.slot].bytes)
            } else {
                Encoder.appendMessage(subject: message.subject, seq: message.seq, payload: message.payload,
                                      to: &run.groupDeliveries[choice.slot].bytes)
            }
            run.groups[group].bytes &+= run.groupDeliveries[choice.slot].bytes.count &- before
            // A paced run widens as it outgrows its turns (unpaced, `spread` is already every member).
            if run.groups[group].spread != GroupPacing.everyMember {
                run.groups[group].spread = max(run.groups[group].spread,
                                               GroupPacing.spread(forBytes: run.groups[group].bytes))
            }
            delivered += 1
            if run.groupDeliveries[choice.slot].bytes.count >= PublishRun.flushBytes { needsGroupFlush = true }
        }
        host.stats.groupDeliveries += UInt64(delivered)
        return delivered
    }

    /// The member of group `group`'s rotation that takes the next message: the next in the rotation while it
    /// grows to the run's `spread` (unpaced: until it holds every member the group gives, so that a burst to an
    /// idle group goes message by message to all its members), then each in turn, a member that left or is busy
    /// being replaced by the group's next choice. Nil when the group has no member that may take it.
    private func nextChoice(in group: Int) -> RunGroup.Choice? {
        let count = run.groups[group].chosen.count
        if count < run.groups[group].spread && !run.groups[group].isComplete {
            if let fresh = chooseMember(for: group, replacing: nil) { return fresh }
            run.groups[group].isComplete = true
        }
        let busyMark = host.configuration.limits.groupBusyBytes
        var tries = run.groups[group].chosen.count
        while tries > 0 {
            tries -= 1
            let position = run.groups[group].next % run.groups[group].chosen.count
            run.groups[group].next &+= 1
            let choice = run.groups[group].chosen[position]
            // As `groupLoad` sees it, with what the run holds for it counted: a member that turned busy during
            // the run (its earlier share flushed, and the kernel refused some) gives way to the group's next choice.
            if choice.isConnected, choice.socket.with({
                !$0.waitsForKernel && $0.outputCount + run.groupDeliveries[choice.slot].bytes.count <= busyMark
            }) {
                return choice
            }
            if let replacement = chooseMember(for: group, replacing: position) { return replacement }
        }
        return nil
    }

    /// Asks the group's member sets (taking turns when it holds several patterns) for their next member, and
    /// puts it in the rotation, at `position` or at its end; a member already there is returned as it is.
    private func chooseMember(for group: Int, replacing position: Int?) -> RunGroup.Choice? {
        let sets = run.groups[group].sets
        // Kept across runs, so that a run of one message still takes the sets in turn.
        let turn = sets.count > 1 ? Int(groupTurn % UInt64(sets.count)) : 0
        if sets.count > 1 { groupTurn &+= 1 }
        let withholds = host.auth.anyUserWithholds
        let subject = run.subjectString
        for offset in 0..<sets.count {
            let members = sets[(turn + offset) % sets.count]
            // A member whose user may not see the subject is passed over, not chosen and skipped: the message
            // goes to a member that may take it.
            guard let member = members.pick(passingOver: { withholds && $0.permissions?.withholds(subject) == true },
                                            load: groupLoad),
                  let socket = member.socket else { continue }
            let id = ObjectIdentifier(member)
            if let existing = run.groups[group].position(of: id) {
                // The sets came round: the rotation holds every member they give.
                if position == nil { run.groups[group].isComplete = true }
                return run.groups[group].chosen[existing]
            }
            let slot: Int
            if let known = run.groupDeliverySlots[id] {
                slot = known
            } else {
                slot = run.groupDeliveries.count
                run.groupDeliveries.append(.init(connection: member, socket: socket, members: members))
                run.groupDeliverySlots[id] = slot
            }
            let choice = RunGroup.Choice(connection: Unretained(member), socket: Unretained(socket), id: id,
                                         slot: slot, isPlainReceiver: member.deliveryMark == host.index.lastMark)
            if let position {
                run.groups[group].replace(at: position, with: choice)
            } else {
                run.groups[group].append(choice)
            }
            return choice
        }
        return nil
    }

    /// Calls `body` with one member per group name among the run's groups (`excluded` never chosen, nor a
    /// member whose user may not see `subject`): the next in turn that is not busy, from the group's first
    /// pattern that has one.
    func forEachChosenMember(of groups: [(name: String, members: MulticastGroup<ClientConnection>)],
                             excluding excluded: ClientConnection?, subject: String,
                             _ body: (ClientConnection, MulticastGroup<ClientConnection>) -> Void) {
        let withholds = host.auth.anyUserWithholds
        var start = 0
        while start < groups.count {
            var end = start + 1
            while end < groups.count && groups[end].name == groups[start].name { end += 1 }
            var choice: (ClientConnection, MulticastGroup<ClientConnection>)?
            // A group holding several matching patterns has a member set per pattern: they take turns first.
            let sets = end - start
            let first = sets == 1 ? 0 : Int(groupTurn % UInt64(sets))
            if sets > 1 { groupTurn &+= 1 }
            for offset in 0..<sets {
                let position = start + (first + offset) % sets
                let passingOver = { (member: ClientConnection) in
                    withholds && member.permissions?.withholds(subject) == true
                }
                if let member = groups[position].members.pick(excluding: excluded, passingOver: passingOver,
                                                              load: groupLoad) {
                    choice = (member, groups[position].members)
                    break
                }
            }
            if let choice, choice.0.socket != nil { body(choice.0, choice.1) }
            start = end
        }
    }

    /// How loaded a group member is (`MemberLoad`): busy when its queued output is over the busy mark or the
    /// kernel refused part of it (its peer reads slower than it is written to). A group chooses a ready member
    /// while it has one, then a busy one, and last a stalled one (busy while other members came back from busy,
    /// `MulticastGroup.stallAfterComebacks`): so a member that stopped reading is handed no more work while any
    /// other member takes it, and what it holds is about what it took before it was found busy (docs/shapes.md).
    /// A member found busy is told when a write of its output drains (`groupMemberDrained`). Cost: a few loads.
    func groupLoad(_ member: ClientConnection) -> MemberLoad {
        guard let socket = member.socket else { return .stalled }
        let mark = host.configuration.limits.groupBusyBytes
        guard socket.waitsForKernel || member.pendingBytes > mark else { return .ready }
        if !member.waitsForGroupDrain {
            member.waitsForGroupDrain = true
            socket.setWriteLowWatermark(mark)
            socket.reportsDirectDrains = true
        }
        return .busy
    }

    /// A member that was busy drained under the mark, or the kernel took more of it: its groups may choose it
    /// again.
    func groupMemberDrained(_ member: ClientConnection) {
        member.waitsForGroupDrain = false
        for (pattern, group) in host.subscriptions.groupedPatterns(of: member) {
            host.index.group(group, of: pattern)?.markReady(member)
        }
    }

    /// Queues what the run chose for group members: behind a replay under way, framed by an adapter, or as
    /// lines; then the usual marks.
    func flushGroupDeliveries() {
        let marks = BacklogMarks(host.configuration.limits)
        let deliveries = run.groupDeliveries
        run.groupDeliveries.removeAll(keepingCapacity: true)
        run.groupDeliverySlots.removeAll(keepingCapacity: true)
        // The rotations name slots of what was just written: they start again, where each group's order is.
        for group in run.groups.indices { run.groups[group].restart() }
        needsGroupFlush = false
        for delivery in deliveries {
            var connection = delivery.connection
            if connection.socket == nil {
                // The member left during the run (a slow consumer dropped): another member of the group that
                // chose it takes its messages, so that none of the group's messages is lost while one is alive.
                let subject = run.subjectString
                let withholds = host.auth.anyUserWithholds
                guard let other = delivery.members.pick(excluding: connection, passingOver: {
                          withholds && $0.permissions?.withholds(subject) == true
                      }, load: groupLoad),
                      other.socket != nil, other.deliveryMark != host.index.lastMark else { continue }
                connection = other
            }
            // Under `history_fsync: always`, as the run's other receivers (`flushHeldForDisk`).
            if run.retains && host.localHistory.holdsAcknowledgements {
                host.durable.hold(connection, acknowledging: false)
            }
            deliver(delivery.bytes, to: connection)
            checkBacklog(of: connection, marks: marks)
        }
    }

}
