import FanoutEngine
import FanoutEventLoop
import FanoutSubjects

/// What the fan-out reaches in the server that owns it, and nothing else: the subject index it resolves runs
/// from, the limits and counters of a delivery, the engines' answers about history, and the server's own work
/// that a backlog or a departure sets off (the memory bound's watch, holding output for the disk, a drop).
///
/// `Server` is the one host; `Fanout` is generic over it so that these are direct accesses on the publish path
/// once specialized.
protocol FanoutHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var stats: ServerStats { get set }
    var index: SubjectIndex<ClientConnection> { get }
    /// Connections by id: publishers held back by backpressure are kept by id.
    var connections: ConnectionTable { get }
    var loop: EventLoop { get }
    /// Whether any user may not see some subjects: a run's receivers are then checked one by one.
    var auth: Authenticator { get }
    /// Whether metrics are on: a receiver's pending output is timed then.
    var metrics: ServerMetrics? { get }
    /// The engine in use, whose `+OK`s may wait for the disk.
    var engine: any Engine { get }
    /// This process's history: epochs, and whether its records are synced before they are seen.
    var localHistory: any LocalHistory { get }
    /// Several nodes: groups' claims.
    var cluster: ClusterNode? { get }
    /// Which groups a member that drained belongs to.
    var subscriptions: Subscriptions { get }
    /// MQTT sessions of clients that are away, which receive what their filters match.
    var mqttSessions: MQTTSessions { get }

    /// The memory bound, which watches a receiver whose backlog passed `BacklogWatch.mark`.
    var memory: MemoryGuard! { get }
    /// Holds what is sent to a connection until the records so far are synced.
    var durable: DurableAcknowledgements! { get }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}
