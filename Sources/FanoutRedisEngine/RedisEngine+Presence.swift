import FanoutEventLoop
import FanoutProtocol
import FanoutRedis

/// Presence across nodes (1.3): every node writes its members into Redis, on each subject's shard
/// (`PresenceScripts`), so that WHO on any node counts and lists them all, and keeps a lease there that its
/// heartbeat renews. A node whose lease expired while it had members is lost: the one survivor whose claim
/// takes it removes its members a page at a time and hands each to `onPresenceLost`, which announces its
/// `leave ...,reason=node-lost` through the normal publish path. Cost: one EVAL per join or leave, O(log n) in
/// Redis; per heartbeat, one renewal and one check per shard, O(nodes).
///
/// After an outage the ledger is the truth: when a shard comes back the node renews its lease, writes its
/// memberships there again (idempotent) and sweeps away those it no longer has. A node that finds it was
/// declared lost meanwhile (its lease had expired and its record was taken) writes its members again as fresh
/// joins, each handed to `onPresenceRejoined` to be announced again: its connections never closed.
extension RedisEngine {
    /// Memberships per write to Redis when a shard's are written again, and lost members taken per page.
    static let presencePage = 256

    /// Starts keeping presence in Redis: the lease and the lost-node check run every heartbeat from now on.
    public func startPresence(loop: EventLoop) {
        guard presence == nil else { return }
        let ledger = PresenceLedger(shards: shards.count)
        presence = ledger
        let now = ContinuousClock.now
        for shard in shards where shard.isUp { ledger.upSince[shard.index] = now }
        ledger.heartbeat = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.presenceHeartbeat() }
        ledger.upkeep = LoopTimer(loop: loop) { [unowned self] in self.presenceUpkeep() }
        ledger.heartbeat?.schedule(after: settings.timing.heartbeat)
        presenceHeartbeat()
    }

    /// Stops the heartbeat's presence work; what Redis holds stays until the lease expires and a survivor
    /// announces it (a node that stops without its members' leaves is a lost node).
    public func stopPresence() {
        presence?.heartbeat?.cancel()
        presence?.upkeep?.cancel()
        presence = nil
    }

    /// The lease: how long a node's members outlive its last renewal.
    var presenceLease: Duration { settings.presenceLease }

    /// A claim on a lost node outlives a stalled claimant by this much before another survivor takes over.
    var presenceClaimMilliseconds: Int64 { max(10_000, 3 * Self.milliseconds(settings.presenceLease)) }

    // MARK: Joins, leaves, WHO

    /// A local connection became a member of `subject`: kept in the ledger, and written to the subject's shard
    /// (or, while it is away, when it comes back).
    /// `ago`: how long it has been a member already (a member carried over to a new engine), zero for a join.
    public func presenceJoined(_ subject: String, connection: UInt64, user: String?, group: String?,
                               ago: Duration = .zero) {
        guard let ledger = presence else { return }
        let index = SubjectKeys.shard(of: subject, count: shards.count)
        let milliseconds = PresenceLedger.wallMilliseconds() - Self.milliseconds(ago)
        let member = PresenceMember(client: "\(nodeID)/\(connection)", user: user, sinceSeconds: 0, group: group)
        let membership = PresenceLedger.Membership(
            subject: subject, connection: connection, score: ledger.nextScore(milliseconds: milliseconds),
            info: "\(milliseconds) \(member.text)")
        ledger.memberships[index][PresenceLedger.key(connection, subject)] = membership
        writeMemberships([membership], on: shards[index])
    }

    /// A local connection is no longer a member of `subject`.
    public func presenceLeft(_ subject: String, connection: UInt64) {
        guard let ledger = presence else { return }
        let index = SubjectKeys.shard(of: subject, count: shards.count)
        let key = PresenceLedger.key(connection, subject)
        guard ledger.memberships[index].removeValue(forKey: key) != nil else { return }
        removeMemberships([(subject, String(connection))], on: shards[index])
    }

    /// The subject's member count on every node and its oldest `limit` members, `<node>/<id>` each, or why
    /// Redis could not say (the subject's shard is away).
    public func presenceWho(_ subject: String, limit: Int,
                            reply: @escaping (Result<(count: Int, members: [PresenceMember]), RedisFailure>) -> Void) {
        let command = RedisCommand.encode(["EVAL", PresenceScripts.who, "2", PresenceScripts.whoKey(subject),
                                           PresenceScripts.whomKey(subject), String(max(0, limit))])
        let refusal = shard(of: subject).send(command) { result in
            switch result {
            case .success(let answer):
                guard let elements = answer.elements, let count = elements.first?.integer else {
                    return reply(.failure(.unavailable("WHO answered \(answer)")))
                }
                let now = PresenceLedger.wallMilliseconds()
                let members = elements.dropFirst().compactMap { $0.text.flatMap { Self.member(info: $0, now: now) } }
                reply(.success((Int(count), members)))
            case .failure(let failure):
                reply(.failure(failure))
            }
        }
        if let refusal { reply(.failure(refusal)) }
    }

    /// A member from its `<join ms> <text>` info, with the whole seconds since it joined.
    static func member(info: String, now: Int64) -> PresenceMember? {
        guard let space = info.firstIndex(of: " "), let joined = Int64(info[..<space]),
              var member = PresenceMember(parsing: info[info.index(after: space)...]) else { return nil }
        member.sinceSeconds = UInt64(max(0, now - joined) / 1000)
        return member
    }

    private func writeMemberships(_ memberships: [PresenceLedger.Membership], on shard: RedisShard) {
        guard !memberships.isEmpty, shard.isUp else { return }
        var arguments = ["EVAL", PresenceScripts.join, "2", PresenceScripts.recordKey(nodeID), PresenceScripts.nodesKey,
                         nodeID]
        for membership in memberships {
            arguments += [membership.subject, String(membership.connection), String(membership.score), membership.info]
        }
        // Not held to max_in_flight, which bounds clients' PUBs: a burst of joins would otherwise lose writes
        // while the shard is up, and nothing makes them again until it goes down. Their number is the node's
        // membership changes, each bounded by a client's command. A write that fails with the shard is made
        // again when it is back (`presenceShardUp`).
        _ = shard.sendBatch(RedisCommand.encode(arguments), weight: 1) { _ in }
    }

    private func removeMemberships(_ memberships: [(subject: String, id: String)], on shard: RedisShard) {
        guard !memberships.isEmpty, shard.isUp else { return }
        var arguments = ["EVAL", PresenceScripts.leave, "1", PresenceScripts.recordKey(nodeID), nodeID]
        for membership in memberships { arguments += [membership.subject, membership.id] }
        // Not held to max_in_flight either (see `writeMemberships`); one that fails is swept when the shard is
        // back.
        _ = shard.sendBatch(RedisCommand.encode(arguments), weight: 1) { _ in }
    }

    // MARK: Outages

    /// The shard is up (again): renew the lease first, then write this node's memberships there again.
    func presenceShardUp(_ shard: RedisShard) {
        guard let ledger = presence else { return }
        ledger.upSince[shard.index] = .now
        renewLease(on: shard, afterOutage: true)
    }

    /// The shard went away: what was under way there starts again when it is back.
    func presenceShardDown(_ shard: RedisShard) {
        guard let ledger = presence else { return }
        ledger.upSince[shard.index] = nil
        ledger.rewriting[shard.index] = ([], false)
        ledger.sweeping[shard.index] = nil
        ledger.taking[shard.index] = []
    }

    private func renewLease(on shard: RedisShard, afterOutage: Bool) {
        let command = RedisCommand.encode(["EVAL", PresenceScripts.renew, "2", PresenceScripts.leaseKey(nodeID),
                                           PresenceScripts.recordKey(nodeID),
                                           String(Self.milliseconds(presenceLease))])
        // Never refused for clients' PUBs in flight: a lease left unrenewed while the shard is busy would have the
        // other nodes announce this node's live members as lost.
        _ = shard.sendBatch(command, weight: 1) { [weak self] result in
            guard let self, let ledger = self.presence, case .success(let reply) = result,
                  let state = reply.integer else { return }
            let index = shard.index
            if state == 3 && !ledger.memberships[index].isEmpty {
                // Declared lost (or the shard lost its data): every membership here is a fresh join.
                self.beginRewrite(on: index, announce: true, sweep: false)
            } else if afterOutage {
                self.beginRewrite(on: index, announce: false, sweep: state != 3)
            }
        }
    }

    private func beginRewrite(on index: Int, announce: Bool, sweep: Bool) {
        guard let ledger = presence else { return }
        // Oldest first, so that a listing keeps join order on the way back too.
        ledger.rewriting[index] = (ledger.memberships[index].values.sorted { $0.score < $1.score }, announce)
        if sweep { ledger.sweeping[index] = "0" }
        ledger.upkeep?.schedule(after: .zero)
    }

    /// One batch of each shard's rewrite, or one page of its sweep once the rewrite is done; again in a later
    /// pass while any remains, so that the loop never stalls on a node with many members.
    private func presenceUpkeep() {
        guard let ledger = presence else { return }
        var more = false
        for shard in shards where shard.isUp {
            let index = shard.index
            if !ledger.rewriting[index].pending.isEmpty {
                let batch = Array(ledger.rewriting[index].pending.prefix(Self.presencePage))
                ledger.rewriting[index].pending.removeFirst(batch.count)
                writeMemberships(batch, on: shard)
                if ledger.rewriting[index].announce {
                    for membership in batch {
                        // A join's since_s is 0: `now` 0 is before any join time.
                        guard let member = Self.member(info: membership.info, now: 0) else { continue }
                        onPresenceRejoined(membership.subject, member)
                    }
                }
                // The sweep follows in a later pass.
                more = more || !ledger.rewriting[index].pending.isEmpty || ledger.sweeping[index] != nil
            } else if let cursor = ledger.sweeping[index] {
                ledger.sweeping[index] = nil
                sweep(shard, from: cursor)
            }
        }
        if more { ledger.upkeep?.schedule(after: .milliseconds(1)) }
    }

    /// Removes from Redis a page of this node's memberships that the ledger no longer has.
    private func sweep(_ shard: RedisShard, from cursor: String) {
        let command = RedisCommand.encode(["ZSCAN", PresenceScripts.recordKey(nodeID), cursor, "COUNT",
                                           String(Self.presencePage)])
        _ = shard.send(command) { [weak self] result in
            guard let self, let ledger = self.presence, shard.isUp, case .success(let reply) = result,
                  let parts = reply.elements, parts.count == 2, let next = parts[0].text,
                  let entries = parts[1].elements else { return }
            var stale: [(subject: String, id: String)] = []
            for entry in stride(from: 0, to: entries.count, by: 2) {
                guard let text = entries[entry].text, ledger.memberships[shard.index][text] == nil,
                      let space = text.firstIndex(of: " ") else { continue }
                stale.append((String(text[text.index(after: space)...]), String(text[..<space])))
            }
            self.removeMemberships(stale, on: shard)
            if next != "0" {
                ledger.sweeping[shard.index] = next
                ledger.upkeep?.schedule(after: .zero)
            }
        }
    }

    // MARK: Lease and lost nodes

    /// Every heartbeat: the lease on each shard that is up, and, on those up a whole lease, the check for nodes
    /// whose lease expired.
    private func presenceHeartbeat() {
        guard let ledger = presence, wantsPresence() || !ledger.isEmpty else { return }
        let now = ContinuousClock.now
        for shard in shards where shard.isUp {
            renewLease(on: shard, afterOutage: false)
            guard let since = ledger.upSince[shard.index], now - since >= presenceLease else { continue }
            claimLostNodes(on: shard)
        }
    }

    private func claimLostNodes(on shard: RedisShard) {
        let command = RedisCommand.encode(["EVAL", PresenceScripts.claimLost, "1", PresenceScripts.nodesKey, nodeID,
                                           String(presenceClaimMilliseconds)])
        _ = shard.send(command) { [weak self] result in
            guard let self, let ledger = self.presence, case .success(let reply) = result,
                  let nodes = reply.elements else { return }
            for case let node? in nodes.map(\.text) where !ledger.taking[shard.index].contains(node) {
                ledger.taking[shard.index].insert(node)
                self.takeLostMembers(of: node, on: shard)
            }
        }
    }

    /// A page of a lost node's members, each announced with `reason=node-lost`; the next page is asked for when
    /// this one is answered, so each pass handles at most one page.
    private func takeLostMembers(of node: String, on shard: RedisShard) {
        let command = RedisCommand.encode([
            "EVAL", PresenceScripts.takeLost, "3", PresenceScripts.goneKey(node), PresenceScripts.claimKey(node),
            PresenceScripts.recordKey(node), nodeID, String(Self.presencePage), String(presenceClaimMilliseconds), node,
        ])
        let refusal = shard.send(command) { [weak self] result in
            guard let self, let ledger = self.presence else { return }
            guard case .success(let reply) = result, let parts = reply.elements, let done = parts.first?.integer,
                  done >= 0 else {
                // The claim is gone, or the shard went away: a later check takes it up again if still ours.
                ledger.taking[shard.index].remove(node)
                return
            }
            let now = PresenceLedger.wallMilliseconds()
            for pair in stride(from: 1, to: parts.count - 1, by: 2) {
                guard let subject = parts[pair].text, let info = parts[pair + 1].text,
                      let member = Self.member(info: info, now: now) else { continue }
                ledger.lostAnnounced += 1
                self.onPresenceLost(subject, member)
            }
            if done == 1 {
                ledger.taking[shard.index].remove(node)
            } else {
                self.takeLostMembers(of: node, on: shard)
            }
        }
        if refusal != nil { presence?.taking[shard.index].remove(node) }
    }

    /// Members of lost nodes this node announced, and memberships it holds (INFO).
    public var presenceLostAnnounced: UInt64 { presence?.lostAnnounced ?? 0 }
    public var presenceMembershipsHeld: Int { presence?.memberships.reduce(0) { $0 + $1.count } ?? 0 }
}
