import FanoutEngine
import FanoutEventLoop
import FanoutMQTT
import FanoutMulticast
import FanoutProtocol
import Glibc

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
    /// The QoS the run's messages were published at, for MQTT receivers (they get the lower of it and their
    /// subscription's): an MQTT publisher's PUBLISH QoS, set by its transport for its publishes; every other
    /// message (a fanout client's, HTTP's, another node's) counts as QoS 2, and the server's own (a will) goes at
    /// the QoS `Fanout.publishOwn` was given.
    var mqttQoS = MQTTQoS.exactlyOnce
    /// MQTT sessions of clients that are away whose filters match the run's subject (`MQTTSessions.gather`):
    /// each message is kept for each. Held strongly until the run closes.
    var parked: [ParkedDelivery] = []
    /// The run's subject as an MQTT topic for them; nil when it has none.
    var parkedTopic: String?

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
        if !parked.isEmpty { parked.removeAll(keepingCapacity: true) }
        bytes.removeAll(keepingCapacity: true)
        retains = false
        announcesEngineChange = false
        isOpen = false
    }
}
