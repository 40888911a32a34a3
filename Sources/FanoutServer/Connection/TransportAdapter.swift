import FanoutEventLoop
import FanoutMQTT

/// A transport that is not the line protocol itself (WebSocket frames, Server-Sent Events, an HTTP request),
/// composed into the connection that uses it as a pipeline handler is: it decodes the connection's input into
/// protocol lines, frames its output lines, frames a publish run once for all its receivers of the same kind,
/// and says goodbye its own way. The rest of the server sees protocol lines only. A plain, TLS or unix
/// connection has no adapter: its lines are its bytes, and the publish path's fast path checks for that.
class TransportAdapter {
    /// Takes a chunk of input, handing each complete protocol line to `connection.take(_:turn:)`; returns how
    /// many bytes it consumed, and consumes what is left of a chunk once reading stops.
    func consume(_ chunk: UnsafeRawBufferPointer, for connection: ClientConnection, turn: inout ReadTurn) -> Int {
        chunk.count
    }

    /// Runs input the adapter took in an earlier read and still holds (the rest of a WebSocket message whose
    /// reading stopped), before the socket's input; false when reading stops again before it is all run.
    func consumeHeld(for connection: ClientConnection, turn: inout ReadTurn) -> Bool { true }

    /// After a read: what the input decided besides lines (a WebSocket close ends the connection).
    func finishRead(of connection: ClientConnection) {}

    /// Queues protocol lines (LF-ended) in this transport's framing.
    func write(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection) {}

    /// Queues a publish run's lines to one of its receivers; `framing` is shared by the run's receivers, so
    /// that framing done once serves them all.
    func writeRun(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection, socket: BufferedSocket,
                  framing: inout RunFraming) {
        write(lines, to: connection)
    }

    /// Queues what the client is told when the server lets it go. False when nothing is worth flushing: a slow
    /// consumer's backlog cannot be cut at a frame or event boundary, so it is dropped unflushed.
    func farewell(_ reason: DisconnectReason, to connection: ClientConnection) -> Bool { false }

    /// The connection has left the table (any reason): what the transport keeps beyond it (an MQTT session,
    /// its will) is settled here. Called once, after its subscriptions are gone.
    func connectionClosed(_ connection: ClientConnection, reason: DisconnectReason) {}

    /// Bytes the transport holds for the connection beyond its socket's output (MQTT messages sent but not yet
    /// acknowledged): counted in its pending bytes, so the slow-consumer limit and max_memory weigh them.
    var heldBytes: Int { 0 }

    /// The QoS of this connection's publishes, for MQTT receivers (`PublishRun.mqttQoS`): an MQTT client's
    /// PUBLISH QoS; nil (QoS 2) for every other transport.
    var publishQoS: MQTTQoS? { nil }

    /// The setting named when the connection is closed for saying nothing (MQTT's `keepalive`); nil for the
    /// server's own (`idle_timeout`, `idle_unsubscribed_timeout`).
    var idleSetting: String? { nil }
}

/// A publish run's lines framed for one kind of transport, done once per flush and shared by its receivers.
struct RunFraming {
    /// One event of the run as an event stream carries it: where its text lies in `eventBodies`, and the seq
    /// that a stream's position of the run's subject moves to (a message, or a RESET).
    struct Event {
        let body: Range<Int>
        let seq: UInt64
        /// A message, which a stream with resumable subjects precedes with its `id:` line.
        let isMessage: Bool
    }

    /// The run's subject (every line of a run is of one subject).
    var subject = ""
    /// The run's events' text (`data:` lines, `event: reset`), encoded once for every event stream.
    var eventBodies: [UInt8] = []
    var events: [Event] = []
    var eventsEncoded = false
    /// The events with their `id:` lines for streams of the run's subject alone, under `idEpoch`: the same
    /// text for all of them, so encoded once and shared like a WebSocket run's frames.
    var eventsWithIDs: [UInt8] = []
    var idEpoch: String?
    var sharedEventsWithIDs: SharedBuffer?
    /// The run's lines as WebSocket text frames, reused from run to run.
    var webSocketFrames: [UInt8] = []
    var webSocketFramed = false
    /// The frames as one buffer that several WebSocket receivers' output chains share, when large.
    var sharedFrames: SharedBuffer?
    /// The events as one buffer that several event streams without ids share, when large.
    var sharedEvents: SharedBuffer?
    /// How many receivers over this kind of transport the run has: sharing pays only for several.
    var receivers = 0
    /// The run as MQTT receivers take it (`MQTTTransport.writeRun`): done once per run.
    var mqttEncoded = false
    /// The run's subject as an MQTT topic; nil when it has none (its messages are not sent over MQTT).
    var mqttTopic: String?
    /// The run's payloads, shared by every QoS 1 and 2 receiver's unacknowledged copy.
    var mqttPayloads: [[UInt8]] = []
    /// The run's messages as QoS 0 PUBLISH packets, the same bytes for every QoS 0 receiver.
    var mqttPackets: [UInt8] = []
    var sharedMQTT: SharedBuffer?
    /// The run's messages, when its subject has no topic: what each MQTT receiver counts as unmappable.
    var mqttUnmappable = 0
    /// The QoS the run was published at (`PublishRun.mqttQoS`).
    var mqttQoS = MQTTQoS.exactlyOnce

    /// Queues `bytes`, text a run's `receivers` of one kind share, to `socket`: by reference to one buffer,
    /// made on first use and kept in `shared`, when several receivers take a large text; copied when small (a
    /// copy into a chain's free space beats a reference's allocation), as a TCP run's lines are.
    static func write(_ bytes: [UInt8], receivers: Int, sharedAs shared: inout SharedBuffer?,
                      to socket: BufferedSocket) {
        guard receivers > 1 && bytes.count >= 4096 else { return bytes.withUnsafeBytes { socket.write($0) } }
        if shared == nil {
            let made = SharedBuffer()
            bytes.withUnsafeBytes { made.append($0) }
            shared = made
        }
        socket.write(sharing: shared!)
    }

    mutating func reset(receivers: Int, subject: String) {
        webSocketFramed = false
        eventsEncoded = false
        mqttEncoded = false
        sharedMQTT = nil
        idEpoch = nil
        sharedFrames = nil
        sharedEvents = nil
        sharedEventsWithIDs = nil
        self.receivers = receivers
        self.subject = subject
    }
}
