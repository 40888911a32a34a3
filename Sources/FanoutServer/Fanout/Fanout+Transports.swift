import FanoutEngine
import FanoutEventLoop

extension Fanout {
    /// Queues the run's lines to its receivers over other transports, each through its adapter. The run's
    /// framing is shared, so that WebSocket receivers take the lines framed once (and the same bytes shared
    /// when large), as TCP receivers share the unframed lines; event streams build their own events.
    func flushToOtherTransports() {
        let marks = BacklogMarks(host.configuration.limits)
        let receivers = run.framedReceivers
        framing.reset(receivers: receivers.count, subject: run.subjectString)
        framing.mqttQoS = run.mqttQoS
        let now = host.metrics != nil ? ContinuousClock.now : nil
        for receiver in receivers where receiver.isConnected {
            // Retained: its write and marks may drop it (`Unretained`'s rules).
            let connection = receiver.connection.retained
            guard let adapter = connection.extras?.adapter else { continue }
            if let now {
                if connection.extras?.pendingSince == nil { connection.madeExtras.pendingSince = now }
                receiver.socket.reportsDirectDrains = true
            }
            let before = receiver.socket.outputCount
            run.bytes.withUnsafeBytes {
                adapter.writeRun($0, to: connection, socket: receiver.socket, framing: &framing)
            }
            host.stats.bytesOut += UInt64(receiver.socket.outputCount - before)
            // An MQTT receiver's unacknowledged messages count in its backlog (`pendingBytes`).
            if connection.transport.isMQTT {
                checkBacklog(of: connection, marks: marks)
            } else {
                checkBacklog(of: receiver, marks: marks)
            }
        }
    }

    /// Queues a publish run's lines behind the replays of the connections that are being sent one. They count
    /// as the connection's pending output, for the same marks as any backlog: the memory bound's watch,
    /// backpressure on the publisher, and the slow-consumer limit. The replay's own unsent part does not count:
    /// it is not encoded yet, and goes out as fast as the loop's turns allow, however fast the client reads.
    func queueBehindReplays(_ bytes: [UInt8], jobs: [ReplayJob]) {
        let marks = BacklogMarks(host.configuration.limits)
        for job in jobs where job.connection.socket != nil && job.connection.extras?.replayJob === job {
            job.waiting.append(contentsOf: bytes)
            checkBacklog(of: job.connection, marks: marks)
        }
    }

    /// Queues pushes to one connection outside a run: behind a replay under way (so they never land inside
    /// it), else as its transport frames them.
    func deliver(_ bytes: [UInt8], to connection: ClientConnection) {
        if let job = connection.extras?.replayJob, connection.gate.stops.contains(.commandsHeld) {
            job.waiting.append(contentsOf: bytes)
        } else {
            connection.send(bytes)
        }
    }

    /// Under `history_fsync: always`: a run whose messages are recorded reaches every receiver once their
    /// records are synced, as their publisher's `+OK` does (`DurableAcknowledgements`), so that a crash can
    /// never number again a message somebody saw. Each receiver's output is held from here, in order, and framed
    /// when released. A run of a subject without history goes out at once, unless the receiver has output held
    /// already: then it waits behind it, keeping the order of what the connection is sent.
    func flushHeldForDisk() {
        let marks = BacklogMarks(host.configuration.limits)
        host.stats.bytesOut += UInt64(run.bytes.count * (run.receivers.count + run.framedReceivers.count))
        for receiver in run.receivers + run.framedReceivers where receiver.isConnected {
            // Retained: its write and marks may drop it (`Unretained`'s rules).
            let connection = receiver.connection.retained
            if run.retains { host.durable.hold(connection, acknowledging: false) }
            connection.write(run.bytes)
            checkBacklog(of: connection, marks: marks)
        }
        if run.retains {
            for job in run.waiting where job.connection.socket != nil {
                host.durable.hold(job.connection, acknowledging: false)
            }
        }
        if !run.waiting.isEmpty { queueBehindReplays(run.bytes, jobs: run.waiting) }
        if !run.groupDeliveries.isEmpty { flushGroupDeliveries() }
        run.bytes.removeAll(keepingCapacity: true)
    }
}
