import FanoutEngine
import FanoutEventLoop
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
            gatherReceivers()
            if announced != nil { noteEngineChange(for: message.subject) }
        }
        run.seq = message.seq
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

/// Consecutive publishes to one subject within one read callback, fanned out together.
///
/// The receivers are resolved from the weak subscriber sets once per run instead of once per message, and
/// the run's `MSG` lines are built once into `bytes` and then queued to every receiver in one write each.
/// A run ends at any other command or subject, so a connection's messages keep their order across subjects.
/// `receivers` holds their sockets strongly only until the run is flushed, at the end of the callback at most.
struct PublishRun {
    /// One connection the run goes to. The connection is not retained: retaining an object that is weakly
    /// referenced takes the runtime's slow path, twice per receiver per run. Its owner is the connection
    /// table, and for one dropped during the run `Fanout.retired` until the run closes. Its socket is held
    /// strongly, which is cheap.
    struct Receiver {
        let connection: Unretained<ClientConnection>
        let socket: BufferedSocket

        /// False once the connection was dropped during the run: nothing more is queued to it.
        var isConnected: Bool { connection.with { $0.socket != nil } }
    }

    /// The messages a run queues to one chosen group member.
    struct GroupDelivery {
        let connection: ClientConnection
        /// Held for the run, so that the rotation's unretained reference to it stays valid.
        let socket: BufferedSocket
        /// The member set that chose it, to choose another if it leaves before the run is written.
        let members: MulticastGroup<ClientConnection>
        var bytes: [UInt8] = []
    }

    private(set) var subject: [UInt8] = []
    private(set) var subjectString = ""
    var receivers: [Receiver] = []
    /// Receivers being sent a replay: the run's lines wait in their job, behind the replay.
    var waiting: [ReplayJob] = []
    /// Receivers whose transport frames lines its own way (WebSocket frames, Server-Sent Events): see
    /// `flushToOtherTransports`.
    var framedReceivers: [Receiver] = []
    /// Who publishes the run, for backpressure. Kept from run to run within one read (retaining and
    /// releasing a weakly referenced object takes the slow path) and let go when the read ends.
    var publisher: ClientConnection?
    var bytes: [UInt8] = []
    /// The groups (QSUB) holding a pattern that matches the run's subject, sorted by name, from the lookup that
    /// opened the run: each message goes to one member per group name, chosen per message.
    var groups: [RunGroup] = []
    /// What the run's messages queue to the group members chosen for them, flushed after `bytes`.
    var groupDeliveries: [GroupDelivery] = []
    var groupDeliverySlots: [ObjectIdentifier: Int] = [:]
    /// A delivered run's messages waiting for this node's claim for its groups (several nodes), and their epoch.
    var groupMessages: [(seq: UInt64, payload: [UInt8])] = []
    var clusterEpoch = ""
    /// The publisher's `+OK <receivers>` replies to the run's PUBs, written in one piece ahead of the run's
    /// lines: a write per reply cost a third of a publish without subscribers.
    var replies: [UInt8] = []
    var seq: UInt64 = 0
    /// The engine's numbering run the messages belong to (`NumberedMessage.run`; 0: compare subjects).
    private(set) var engineRun: UInt64 = 0
    /// Whether the engine records the run's messages in history (a publisher's `+OK` may wait for the disk).
    private(set) var retains = false
    /// The run's first message is the subject's first since the engine changed: a RESET goes before it.
    var announcesEngineChange = false
    private(set) var isOpen = false

    /// Bytes after which a run's lines are written out early, bounding the run's memory.
    static let flushBytes = 64 * 1024
    /// Bytes of replies after which they are written out early.
    static let flushReplyBytes = 4096

    @inline(__always)
    func isRun(of candidate: UnsafeRawBufferPointer) -> Bool {
        guard isOpen, candidate.count == subject.count else { return false }
        // memcmp: a generic elementsEqual over the bytes cost ten times as much.
        return subject.withUnsafeBytes { run in
            guard let mine = run.baseAddress, let theirs = candidate.baseAddress else { return candidate.isEmpty }
            return memcmp(mine, theirs, candidate.count) == 0
        }
    }

    /// Adds `+OK <receivers>\n` to the replies.
    mutating func appendReply(receivers: Int) {
        replies.append(UInt8(ascii: "+"))
        replies.append(UInt8(ascii: "O"))
        replies.append(UInt8(ascii: "K"))
        replies.append(UInt8(ascii: " "))
        DecimalDigits.append(UInt64(receivers), to: &replies)
        replies.append(UInt8(ascii: "\n"))
    }

    /// Starts a run of `candidate`'s messages, numbered in the engine's run `engineRun`.
    mutating func open(subject candidate: UnsafeRawBufferPointer, engineRun: UInt64, retains: Bool) {
        subject.removeAll(keepingCapacity: true)
        subject.append(contentsOf: candidate)
        subjectString = String(decoding: candidate, as: UTF8.self)
        self.engineRun = engineRun
        self.retains = retains
        seq = 0
        isOpen = true
    }

    mutating func close() {
        receivers.removeAll(keepingCapacity: true)
        if !groups.isEmpty { groups.removeAll() }
        if !waiting.isEmpty { waiting.removeAll(keepingCapacity: true) }
        if !framedReceivers.isEmpty { framedReceivers.removeAll(keepingCapacity: true) }
        if !groupMessages.isEmpty { groupMessages.removeAll() }
        bytes.removeAll(keepingCapacity: true)
        retains = false
        announcesEngineChange = false
        isOpen = false
    }
}
