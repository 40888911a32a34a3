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
    var listing = PatternListing(limit: Admin.listingLimit)

    init(connection: ClientConnection, filter: String?, cursor: PatternCursor) {
        self.connection = connection
        self.filter = filter
        self.cursor = cursor
    }
}

extension Admin {
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
        guard host.holdCommands(of: connection) else { return }
        scans.append(ChannelsScan(connection: connection, filter: filter, cursor: index.makePatternCursor()))
        scheduleChannelsScan()
    }

    private func mayList(_ pattern: String, by connection: ClientConnection) -> Bool {
        !host.configuration.auth.requiresAuth || connection.permissions?.maySubscribe(pattern) == true
    }

    private func scheduleChannelsScan() {
        scanTimer.schedule(on: host.loop) { [unowned self] in self.continueChannelsScan() }
    }

    /// One slice of the oldest scan; the others wait their turn, so that few cursors are open at once.
    private func continueChannelsScan() {
        guard let scan = scans.first else { return }
        guard scan.connection.socket != nil else {
            scans.removeFirst()
            if !scans.isEmpty { scheduleChannelsScan() }
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
            scans.removeFirst()
            let listed = scan.listing.entries.map { "\($0.pattern)=\($0.subscribers)" }
            scan.connection.send(Encoder.ok(([String(scan.listing.total)] + listed).joined(separator: " ")))
            host.releaseCommands(of: scan.connection)
        }
        if !scans.isEmpty { scheduleChannelsScan() }
    }
}
