import FanoutEventLoop
import FanoutProtocol

/// A SUB or UNSUB of more patterns than `Server.subscriptionSlice`, carried out a slice per loop pass: one
/// line may hold thousands, and each costs a few microseconds.
final class SubscriptionJob {
    /// Strong while the job lasts: a connection dropped meanwhile is let go at the next slice (its socket is nil).
    let connection: ClientConnection
    let patterns: [String]
    let adding: Bool
    /// The group the patterns join (QSUB), nil for plain.
    let group: String?
    var next = 0

    init(connection: ClientConnection, patterns: [String], adding: Bool, group: String?) {
        self.connection = connection
        self.patterns = patterns
        self.adding = adding
        self.group = group
    }
}

extension Server {
    /// Patterns added or removed per loop pass: about half a millisecond.
    static let subscriptionSlice = 128

    /// Adds or removes `patterns` now when they are few, else in slices while the connection's later commands
    /// wait; replies `+OK <count held>` when done.
    func changeSubscriptions(_ patterns: [String], adding: Bool, group: String? = nil, for connection: ClientConnection) {
        guard patterns.count > Self.subscriptionSlice, holdCommands(of: connection) else {
            if adding {
                addSubscriptions(patterns, group: group, for: connection)
            } else {
                removeSubscriptions(patterns, for: connection)
            }
            connection.send(Encoder.ok(String(connection.subscriptions.count)))
            return
        }
        work.subscriptionJobs.append(SubscriptionJob(connection: connection, patterns: patterns, adding: adding,
                                                     group: group))
        scheduleSubscriptionJobs()
    }

    private func scheduleSubscriptionJobs() {
        work.schedule(\.subscriptionTimer) { [unowned self] in self.continueSubscriptionJob() }
    }

    private func continueSubscriptionJob() {
        guard let job = work.subscriptionJobs.first else { return }
        if job.connection.socket == nil {
            work.subscriptionJobs.removeFirst()
        } else {
            let end = min(job.next + Self.subscriptionSlice, job.patterns.count)
            let slice = Array(job.patterns[job.next..<end])
            if job.adding {
                addSubscriptions(slice, group: job.group, for: job.connection)
            } else {
                removeSubscriptions(slice, for: job.connection)
            }
            job.next = end
            if end == job.patterns.count {
                work.subscriptionJobs.removeFirst()
                job.connection.send(Encoder.ok(String(job.connection.subscriptions.count)))
                releaseCommands(of: job.connection)
            }
        }
        if !work.subscriptionJobs.isEmpty { scheduleSubscriptionJobs() }
    }
}
