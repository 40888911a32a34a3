import DequeModule
import FanoutEventLoop
import FanoutProtocol
import FanoutSubjects

/// A `CHANNELS` listing under way: the index is scanned in slices across loop passes, so that a million
/// patterns never stop the loop, while the asking connection waits for its reply.
final class ChannelsScan {
    /// Strong while the job lasts: a connection dropped meanwhile is let go at the next slice (its socket is nil).
    let connection: ClientConnection
    let filter: String?
    let cursor: PatternCursor
    var listing = PatternListing(limit: Server.listingLimit)

    init(connection: ClientConnection, filter: String?, cursor: PatternCursor) {
        self.connection = connection
        self.filter = filter
        self.cursor = cursor
    }
}

extension Server {
    /// Patterns a scan looks at per loop pass: a few hundred microseconds.
    static let channelsScanBudget = 1024

    /// `CHANNELS [<pattern>]`: `<count> <subject>=<subscribers> ...`, sorted by subject, only the patterns the
    /// connection may subscribe to. A concrete filter is one lookup; anything else is a scan in slices.
    func listChannels(for connection: ClientConnection, filter: String?) {
        if let filter, !Subject.isWildcard(filter) {
            let live = mayList(filter, by: connection) ? index.liveSubscribers(ofPattern: filter) : 0
            connection.send(Encoder.ok(live > 0 ? "1 \(filter)=\(live)" : "0"))
            return
        }
        guard holdCommands(of: connection) else { return }
        work.channelScans.append(ChannelsScan(connection: connection, filter: filter, cursor: index.makePatternCursor()))
        scheduleChannelsScan()
    }

    private func mayList(_ pattern: String, by connection: ClientConnection) -> Bool {
        !configuration.auth.requiresAuth || connection.permissions?.maySubscribe(pattern) == true
    }

    private func scheduleChannelsScan() {
        work.schedule(\.channelsTimer) { [unowned self] in self.continueChannelsScan() }
    }

    /// One slice of the oldest scan; the others wait their turn, so that few cursors are open at once.
    private func continueChannelsScan() {
        guard let scan = work.channelScans.first else { return }
        guard scan.connection.socket != nil else {
            work.channelScans.removeFirst()
            if !work.channelScans.isEmpty { scheduleChannelsScan() }
            return
        }
        let filter = scan.filter
        let done = index.scanPatterns(from: scan.cursor, budget: Self.channelsScanBudget, where: { pattern in
            (filter.map { Subject.matches(pattern: $0, subject: pattern) } ?? true)
                && mayList(pattern, by: scan.connection)
        }) { pattern, subscribers in
            scan.listing.add(pattern, subscribers: subscribers)
        }
        if done {
            work.channelScans.removeFirst()
            let listed = scan.listing.entries.map { "\($0.pattern)=\($0.subscribers)" }
            scan.connection.send(Encoder.ok(([String(scan.listing.total)] + listed).joined(separator: " ")))
            releaseCommands(of: scan.connection)
        }
        if !work.channelScans.isEmpty { scheduleChannelsScan() }
    }

    /// Keeps the index's memory in step with departures: a slice of the sweep every 10 ms while anything is
    /// stale, instead of a whole sweep on the spot. Entries that went stale during a cycle may lie behind its
    /// cursor, so a cycle ends the sweeping only if nothing went stale since it began.
    func scheduleSweep() {
        guard work.staleSubscriptions > 0 else { return }
        work.schedule(\.sweepTimer, after: .milliseconds(10)) { [unowned self] in
            guard self.index.sweepStep(budget: Self.channelsScanBudget) else { return self.scheduleSweep() }
            self.work.staleSubscriptions -= self.work.staleAtCycleStart
            self.work.staleAtCycleStart = self.work.staleSubscriptions
            self.scheduleSweep()
        }
    }
}
