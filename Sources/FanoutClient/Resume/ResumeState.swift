import FanoutProtocol

/// What a client knows of each concrete subject it receives, so that a reconnect repeats nothing and loses
/// nothing the server still has: the numbering (epoch) the subject's seqs belong to, and the last seq
/// accounted for (delivered to the application, or reported missed). Pure bookkeeping: the client tells it
/// about greetings, `RESUME`/`LAST` replies and messages, and sends what `restorePlan` says.
///
/// Seqs are only compared within one epoch (PROTOCOL.md, History and resume). A server without the extension
/// greets with no epoch: then nothing is dropped as a duplicate (its numbers may restart unannounced) and any
/// seq other than the next one is a gap, as before 1.1.
///
/// Bound: one entry per concrete subject subscribed to or delivered under a live subscription; the entries
/// of subjects that no subscription covers any more are removed by `forget`.
struct ResumeState: Sendable {
    /// What a `RESUME` or `LAST` asked.
    enum Request: Equatable, Sendable {
        /// `RESUME <subject>`: where the subject stands, nothing replayed.
        case position
        /// `RESUME <subject> <epoch> <seq>`: everything after that position.
        case after(epoch: String, seq: UInt64)
        /// `LAST <subject> <count>`.
        case newest(count: UInt64)

        /// The command line, without its LF.
        func line(subject: String) -> String {
            switch self {
            case .position: "RESUME \(subject)"
            case .after(let epoch, let seq): "RESUME \(subject) \(epoch) \(seq)"
            case .newest(let count): "LAST \(subject) \(count)"
            }
        }
    }

    /// What to do with a message.
    enum Observation: Equatable, Sendable {
        case deliver
        /// Seen already in this epoch: drop it, silently.
        case duplicate
        /// Deliver it, but `expected` was due: messages were lost on the way (or, from a server without
        /// epochs, its numbering restarted).
        case gap(expected: UInt64, received: UInt64)
        /// Deliver it; the subject's numbering is not the one last seen (a new epoch), so what came between is
        /// unknown.
        case restarted
    }

    /// What to send after a reconnect, in this order: a `RESUME` per concrete subject, then one `SUB` of the
    /// patterns (only wildcards when the server resumes; everything when it does not).
    struct Plan: Equatable, Sendable {
        struct Resume: Equatable, Sendable {
            let subject: String
            let request: Request
        }

        var resumes: [Resume]
        var patterns: [String]
    }

    private struct Entry {
        /// Nil when learned from a server without epochs.
        var epoch: String?
        var last: UInt64
        /// The connection on which the entry was last confirmed (by a reply or a message).
        var seenOn: UInt64
        /// The connection on which a `RESUME` or `LAST` made it a subscription of its own on the server.
        var subscribedOn: UInt64?
    }

    private var entries: [String: Entry] = [:]
    /// The current connection's epoch, from its greeting; nil for a server without the extension.
    private(set) var epoch: String?
    /// Counts greetings, so that an entry knows whether this connection has confirmed it.
    private var connection: UInt64 = 0

    init() {}

    /// Whether the current connection's server speaks `RESUME` and `LAST`.
    var canResume: Bool { epoch != nil }

    var trackedSubjects: Int { entries.count }

    /// A new connection was greeted, with `epoch=` or without.
    mutating func connected(epoch: String?) {
        connection &+= 1
        self.epoch = epoch
    }

    /// The commands that restore `subscriptions` (patterns in subscription order) after a reconnect.
    func restorePlan(subscriptions: [String]) -> Plan {
        guard canResume else { return Plan(resumes: [], patterns: subscriptions) }
        let wildcards = subscriptions.filter(Subject.isWildcard)
        var subjects = Set(subscriptions.filter { !Subject.isWildcard($0) })
        for subject in entries.keys where Self.covers(wildcards, subject) { subjects.insert(subject) }
        let resumes = subjects.sorted().map { subject in
            // A subject known from a server without epochs has no position this server can use.
            guard let entry = entries[subject], let epoch = entry.epoch else {
                return Plan.Resume(subject: subject, request: .position)
            }
            return Plan.Resume(subject: subject, request: .after(epoch: epoch, seq: entry.last))
        }
        return Plan(resumes: resumes, patterns: wildcards)
    }

    /// Takes in a message and says what to do with it. One hash lookup: the entry is changed where it lies.
    mutating func observe(subject: String, seq: UInt64) -> Observation {
        guard let index = entries.index(forKey: subject) else {
            // Joining mid-stream: the first seq is taken as given. A subject met through a wildcard has the
            // greeting's epoch, the one the server gives every subject whose numbering never restarted.
            entries[subject] = Entry(epoch: epoch, last: seq, seenOn: connection)
            return .deliver
        }
        if entries.values[index].seenOn != connection {
            // Not resumed on this connection (its RESUME failed, or the server has no epochs).
            entries.values[index].seenOn = connection
            if let epoch, entries.values[index].epoch != epoch {
                entries.values[index] = Entry(epoch: epoch, last: seq, seenOn: connection)
                return .restarted
            }
            entries.values[index].epoch = epoch
        }
        let last = entries.values[index].last
        if seq <= last && entries.values[index].epoch != nil { return .duplicate }
        entries.values[index].last = seq
        let expected = last &+ 1
        return seq == expected ? .deliver : .gap(expected: expected, received: seq)
    }

    /// Takes in a `RESET`: the subject's position moves to `seq` in `epoch`, so its next message, `seq + 1`,
    /// is neither a duplicate nor a gap.
    mutating func reset(subject: String, epoch: String, seq: UInt64) {
        let subscribedOn = entries[subject]?.subscribedOn
        entries[subject] = Entry(epoch: epoch, last: seq, seenOn: connection, subscribedOn: subscribedOn)
    }

    /// Takes in the reply to a `RESUME` or `LAST` of `subject`; returns what to report, for a `RESUME` that
    /// gave a position (the others only say where the subject stands).
    mutating func answered(subject: String, request: Request, reply: ResumeReply) -> ResumeReport? {
        // The replay is the messages right before the subject's last seq, so it starts after `start`.
        let start = reply.seq >= reply.replayed ? reply.seq - reply.replayed : 0
        let fresh = Entry(epoch: reply.epoch, last: start, seenOn: connection, subscribedOn: connection)
        let known = entries[subject].flatMap { entry in
            // Same numbering, and not behind what was delivered (else it restarted without saying so).
            entry.epoch == reply.epoch && entry.last <= reply.seq ? entry : nil
        }
        var entry = fresh
        if let known { entry.last = max(known.last, start) }
        switch request {
        case .position, .newest:
            entries[subject] = entry
            return nil
        case .after(let epoch, _):
            guard let missed = reply.missed, reply.epoch == epoch, known != nil else {
                // The position meant nothing there: duplicates are tracked afresh in the subject's epoch.
                entries[subject] = fresh
                return ResumeReport(subject: subject, recovered: Int(reply.replayed), missed: .unknown)
            }
            entries[subject] = entry
            return ResumeReport(subject: subject, recovered: Int(reply.replayed), missed: .count(missed))
        }
    }

    /// Subjects that hold a subscription of their own on this connection only because a restore resumed
    /// them (they were met through a wildcard), and that dropping `dropped` leaves with no reason to be: the
    /// client unsubscribes from them along with the patterns. `remaining` is what stays subscribed.
    func implicitSubscriptions(droppingPatterns dropped: [String], keeping remaining: [String]) -> [String] {
        entries.compactMap { subject, entry in
            guard entry.subscribedOn == connection, !remaining.contains(subject), !dropped.contains(subject),
                  Self.covers(dropped, subject), !Self.covers(remaining, subject) else { return nil }
            return subject
        }.sorted()
    }

    /// Forgets the subjects that `remaining` no longer covers (after an UNSUB or a revocation): their next
    /// message, if they are subscribed again, is a first one.
    mutating func forget(keeping remaining: [String]) {
        entries = entries.filter { Self.covers(remaining, $0.key) }
    }

    private static func covers(_ patterns: [String], _ subject: String) -> Bool {
        patterns.contains { $0 == subject || Subject.matches(pattern: $0, subject: subject) }
    }
}
