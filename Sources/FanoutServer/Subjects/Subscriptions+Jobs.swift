import FanoutEventLoop
import FanoutProtocol

/// A SUB or UNSUB of more patterns than `Subscriptions.slice`, carried out a slice per loop pass: one line may
/// hold thousands, and each costs a few microseconds.
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

extension Subscriptions {
    /// Patterns added or removed per loop pass: about half a millisecond.
    static let slice = 128

    /// Adds or removes `patterns` now when they are few, else in slices while the connection's later commands
    /// wait; replies `+OK <count held>` when done.
    func change(_ patterns: [String], adding: Bool, group: String? = nil, for connection: ClientConnection) {
        guard patterns.count > Self.slice, host.holdCommands(of: connection) else {
            if adding {
                add(patterns, group: group, for: connection)
            } else {
                remove(patterns, for: connection)
            }
            connection.send(Encoder.ok(String(connection.subscriptions.count)))
            return
        }
        jobs.append(SubscriptionJob(connection: connection, patterns: patterns, adding: adding, group: group))
        scheduleJobs()
    }

    private func scheduleJobs() {
        jobTimer.schedule(on: host.loop) { [unowned self] in self.continueJob() }
    }

    private func continueJob() {
        guard let job = jobs.first else { return }
        if job.connection.socket == nil {
            jobs.removeFirst()
        } else {
            let end = min(job.next + Self.slice, job.patterns.count)
            let slice = Array(job.patterns[job.next..<end])
            if job.adding {
                add(slice, group: job.group, for: job.connection)
            } else {
                remove(slice, for: job.connection)
            }
            job.next = end
            if end == job.patterns.count {
                jobs.removeFirst()
                job.connection.send(Encoder.ok(String(job.connection.subscriptions.count)))
                host.releaseCommands(of: job.connection)
            }
        }
        if !jobs.isEmpty { scheduleJobs() }
    }
}
