import FanoutEngine
import FanoutEventLoop
import FanoutMQTT
import FanoutMulticast
import FanoutProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The fan-out core: every numbered message, whichever engine numbered it, reaches this node's subscribers
/// here, through one publish run at a time (`PublishRun`).
///
/// Its API is small: `deliver` takes each numbered message (from the dispatcher's publish, with what the memory
/// engine numbered at once; from the Redis engine, when a message comes back), and the dispatcher calls
/// `close` at command boundaries and `finish` when a read ends. The core owns what a run needs between those
/// calls: the run, the connections dropped during it, the framing it reuses for other transports, the backlog
/// marks, the flush, and the publishers that backpressure held and released.
///
/// Generic over its host so that the publish path reaches the server's members by direct access once
/// specialized (the server's `Fanout<Server>`), with no call through a witness table per message; what it
/// may reach is `FanoutHost`.
final class Fanout<Host: FanoutHost> {
    /// Set once the server is made (`attach(to:)`). Unretained: the server is its owner and outlives its
    /// fan-out (`Unretained`'s rules), and the publish path reads it per message.
    private var hostReference: Unretained<Host>?
    @inline(__always) var host: Host { hostReference.unsafelyUnwrapped.retained }
    var run = PublishRun()
    /// Connections dropped while a publish run was open, kept alive until it closes: the run refers to its
    /// receivers unretained. An ASK's checks of its receivers keep theirs here too (`isCheckingReceivers`).
    var retired: [ClientConnection] = []
    /// A publish run's lines framed for its receivers over other transports, reused from run to run.
    var framing = RunFraming()
    /// Backpressure: by subscriber id, the publishers (by id) whose reading its backlog paused. Only subscribers
    /// past `backpressure_bytes` have an entry, until they drain or leave. Bound: an entry per connection at
    /// most, each listing a publisher once.
    var heldPublishers: [UInt64: [UInt64]] = [:]
    /// Publishers no longer held back by any subscriber, to be read again on the next pass.
    var releasedPublishers: [UInt64] = []
    var resumeTimer: LoopTimer?
    /// Connections (by id) whose turn ended with commands left, read again on the next pass
    /// (`Fanout+Turns.swift`). Bound: each connection once, as its read gate stops it once.
    var waitingTurns: [UInt64] = []
    var turnTimer = SliceTimer()
    /// The run's bytes are being queued to its receivers: a departure during it (a slow consumer dropped, which
    /// on a clustered node closes the run) must not flush or close the run again from inside.
    var isFlushing = false
    /// A chosen group member's share of the run passed `PublishRun.flushBytes`: flush after this message.
    var needsGroupFlush = false
    /// Turns among the member sets of a group that holds several patterns matching one subject.
    var groupTurn: UInt64 = 0
    /// Whether the engine has group messages claimed across nodes before they are delivered (several nodes).
    var claimsGroups = false
    /// After the engine changed (a reload added or removed the cluster section), the subjects whose
    /// subscribers have heard so: each subject's first message under the new engine comes after a
    /// `RESET ... missed=unknown`, as its numbering is another. Nil until an engine change. Bound: at most
    /// `announcedSubjectsLimit` subjects, after which the announcing ends.
    var announced: Set<[UInt8]>?
    static var announcedSubjectsLimit: Int { 100_000 }
    /// The QoS MQTT receivers take a run of the server's own publishes at (`publishOwn`); QoS 2 otherwise.
    var ownQoS = MQTTQoS.exactlyOnce

    /// Called once, by the server that owns this fan-out, from its `init`.
    func attach(to host: Host) {
        hostReference = Unretained(host)
    }

    /// Sets the connection whose PUBs are numbered next (the dispatcher, before it asks the engine). A run
    /// belongs to one publisher: its replies go out ahead of its lines.
    @inline(__always)
    func publishing(for publisher: ClientConnection) {
        if run.publisher !== publisher {
            close()
            run.publisher = publisher
        }
    }

    /// A message numbered here (the memory engine): no reset, no epoch.
    func deliver(_ message: NumberedMessage) -> Int {
        deliver(message, reset: nil, epoch: "")
    }

    /// Queues a numbered message to every connection subscribed to a matching pattern (and one member per
    /// group), and returns how many connections that is. Cost: one index lookup per run, then one append per
    /// message and one write per receiver per run.
    @inline(__always)
    func deliver(_ message: NumberedMessage, reset: NumberingReset?, epoch: String) -> Int {
        if !run.isOpen || message.run != run.engineRun || (message.run == 0 && !run.isRun(of: message.subject)) {
            close()
            run.open(subject: message.subject, engineRun: message.run, retains: message.recorded)
            run.mqttQoS = run.publisher?.extras?.adapter?.publishQoS ?? ownQoS
            gatherReceivers()
            if announced != nil { noteEngineChange(for: message.subject) }
        }
        run.seq = message.seq
        if !run.parked.isEmpty {
            host.mqttSessions.queue(message, epoch: epoch, topic: run.parkedTopic, qos: run.mqttQoS, to: run.parked)
        }
        let plain = run.receivers.count &+ run.framedReceivers.count &+ run.waiting.count
        var receivers = plain
        if !run.groups.isEmpty {
            if claimsGroups {
                gatherForClaims(message, epoch: epoch)
            } else {
                receivers &+= deliverToGroups(message)
                if needsGroupFlush { flushLines() }
            }
        }
        guard receivers > 0 else { return 0 }
        host.stats.delivered &+= UInt64(receivers)
        guard plain > 0 else { return receivers }
        if let reset {
            // In the run, so every receiver hears it right before the message, on every transport.
            Encoder.appendReset(subject: message.subject, epoch: reset.epoch, seq: reset.seq, missed: reset.missed,
                                to: &run.bytes)
            host.stats.resets &+= 1
            run.announcesEngineChange = false
        } else if run.announcesEngineChange {
            run.announcesEngineChange = false
            let subjectEpoch = epoch.isEmpty ? host.localHistory.epoch(ofSubject: run.subjectString) : epoch
            Encoder.appendReset(subject: message.subject, epoch: subjectEpoch, seq: message.seq &- 1, missed: nil,
                                to: &run.bytes)
            host.stats.resets &+= 1
        }
        if message.anyBytes {
            Encoder.appendPush(subject: message.subject, seq: message.seq, payload: message.payload,
                               maxLine: host.configuration.limits.maxLine, to: &run.bytes)
        } else {
            Encoder.appendMessage(subject: message.subject, seq: message.seq, payload: message.payload, to: &run.bytes)
        }
        if run.bytes.count >= PublishRun.flushBytes { flushLines() }
        return receivers
    }

    /// Resolves the open run's receivers from the subject index, once per run: line receivers, receivers over
    /// other transports, and receivers being sent a replay (their lines wait behind it).
    private func gatherReceivers() {
        let withholds = host.auth.anyUserWithholds
        let subject = run.subjectString
        host.index.forEachReceiver(of: subject) { connection in
            guard let socket = connection.socket else { return }
            if withholds && connection.permissions?.withholds(subject) == true { return }
            if connection.gate.stops.contains(.commandsHeld), let job = connection.extras?.replayJob {
                run.waiting.append(job)
                return
            }
            if connection.transport.writesLines {
                run.receivers.append(.init(connection: Unretained(connection), socket: socket))
            } else {
                run.framedReceivers.append(.init(connection: Unretained(connection), socket: socket))
            }
        }
        if host.index.hasGroups { gatherGroups() }
        // MQTT sessions of clients that are away keep what their filters match: one stored Bool while none is.
        if host.mqttSessions.hasParked { run.parkedTopic = host.mqttSessions.gather(subject, into: &run.parked) }
    }

    /// Adds the publisher's `+OK <receivers>` to the run's replies, written ahead of the run's lines.
    @inline(__always)
    func reply(receivers: Int) {
        run.appendReply(receivers: receivers)
        if run.replies.count >= PublishRun.flushReplyBytes { flushReplies() }
    }

    /// Closes the run and lets go of its publisher too: when a read ends, or the server does.
    func finish() {
        close()
        run.publisher = nil
    }

    /// Writes out the run and forgets its receivers, releasing the strong references it took.
    func close() {
        guard run.isOpen || !run.replies.isEmpty, !isFlushing else { return }
        flushReplies()
        flushLines()
        if !run.groupMessages.isEmpty { claimForGroups() }
        if !run.groups.isEmpty && !claimsGroups { endGroupPacing() }
        run.close()
        if !retired.isEmpty { retired.removeAll() }
    }

    /// Writes the publisher's replies to the run so far: before the run's lines, as when each was written at
    /// once, and before anything else is sent to the publisher (every other command closes the run first).
    func flushReplies() {
        guard !run.replies.isEmpty else { return }
        if run.retains && host.engine.holdsAcknowledgements, let publisher = run.publisher {
            host.durable.hold(publisher, acknowledging: true)
        }
        if let publisher = run.publisher, publisher.socket != nil { publisher.send(run.replies) }
        run.replies.removeAll(keepingCapacity: true)
    }

    /// Queues the run's lines to each receiver still connected: shared by reference when several receivers
    /// take a large batch, copied when small (a copy into a chain's free space beats a reference's allocation).
    func flushLines() {
        guard !run.bytes.isEmpty || !run.groupDeliveries.isEmpty, !isFlushing else { return }
        isFlushing = true
        defer { isFlushing = false }
        flushReplies()
        // Under `history_fsync: always`, every run takes the path that respects held output: a run of a subject
        // without history must not overtake what a connection has waiting for the disk.
        if host.localHistory.holdsAcknowledgements { return flushHeldForDisk() }
        if !run.waiting.isEmpty { queueBehindReplays(run.bytes, jobs: run.waiting) }
        if !run.framedReceivers.isEmpty { flushToOtherTransports() }
        if !run.groupDeliveries.isEmpty { flushGroupDeliveries() }
        let marks = BacklogMarks(host.configuration.limits)
        host.stats.bytesOut += UInt64(run.bytes.count * run.receivers.count)
        if host.metrics != nil {
            let now = ContinuousClock.now
            for receiver in run.receivers where receiver.isConnected {
                receiver.connection.with { if $0.extras?.pendingSince == nil { $0.madeExtras.pendingSince = now } }
                receiver.socket.reportsDirectDrains = true
            }
        }
        if run.receivers.count > 1 && run.bytes.count >= 4096 {
            let shared = SharedBuffer()
            run.bytes.withUnsafeBytes { shared.append($0) }
            for receiver in run.receivers where receiver.isConnected {
                receiver.socket.write(sharing: shared)
                checkBacklog(of: receiver, marks: marks)
            }
        } else {
            run.bytes.withUnsafeBytes { bytes in
                for receiver in run.receivers where receiver.isConnected {
                    receiver.socket.write(bytes)
                    checkBacklog(of: receiver, marks: marks)
                }
            }
        }
        run.bytes.removeAll(keepingCapacity: true)
    }

    /// The engine changed: from now on, each subject's first message announces it (`announced`).
    func engineChanged() {
        close()
        announced = []
    }

    /// Marks the run to announce the engine change, the first time `subject` is delivered since.
    private func noteEngineChange(for subject: UnsafeRawBufferPointer) {
        guard announced!.insert(Array(subject)).inserted else { return }
        run.announcesEngineChange = true
        if announced!.count >= Self.announcedSubjectsLimit { announced = nil }
    }

    func tearDown() {
        finish()
        resumeTimer = nil
        turnTimer.tearDown()
        waitingTurns.removeAll()
        heldPublishers.removeAll()
        releasedPublishers.removeAll()
    }
}


/// The Redis engine hands back what it numbered through this conformance, declared for the server's fan-out
/// alone so that its witness calls the specialized `deliver`, as the dispatcher's publish does.
extension Fanout: EngineDeliveries where Host == Server {}
