import DequeModule
@_spi(Bench) import FanoutEventLoop
import FanoutProtocol

/// A connection to `fanoutd` on an `EventLoop`: subscribe with callbacks, publish, ping, and plain commands.
///
/// Everything happens on the loop's thread: create the client there, call it there, and its callbacks run
/// there. Commands may be issued right after `connect`; they are held until the server has greeted (and
/// accepted the token), then sent in order.
/// After a lost connection the client reconnects with backoff (see `ReconnectPolicy`) and restores every
/// subscription before anything issued meanwhile; commands in flight when the connection was lost fail with
/// `.disconnected`.
///
/// With a server that keeps history (protocol 1.1, `epoch=` in its greeting) nothing is lost or repeated
/// across reconnects while the history covers the outage: concrete subjects are subscribed with `RESUME`,
/// every concrete subject received is resumed from its last delivered seq after a reconnect (ahead of the
/// wildcard `SUB`s), duplicates are dropped, and `.resumed` events say what came back and what did not (see
/// `ResumeState`). A server without it gets `SUB`, and sequence gaps are reported as `.gap` events.
///
/// This file holds the state; each concern is an extension in a file of its own: `+Commands` (issuing),
/// `+Connecting` (the connection's life), `+Reading` (lines from the server), `+Replies` (matching replies
/// to commands), `+Restore` (subscriptions after a reconnect), `+Watchdog` (deadlines), `+Presence` (WHO,
/// KICK and joins and leaves) and `+Kicked` (the end of a kicked connection). The state is internal rather than
/// private so that those files share it; the module is the boundary.
public final class FanoutClient: BufferedSocketDelegate {
    public let address: SocketAddress
    public let options: ClientOptions
    let loop: EventLoop

    /// Connection events: connected, lost, reconnecting, resumed subjects, gaps in a subject's sequence.
    public var onEvent: ((ClientEvent) -> Void)?
    /// Every pushed message (after per-subject handlers), when set.
    public var onMessage: ((Message) -> Void)?
    /// Every question put to this connection (protocol 1.2); answer with `answer(_:payload:completion:)`. A
    /// question is delivered whether or not a subscription's handler matches its subject.
    public var onQuestion: ((Question) -> Void)?
    /// Called after each batch of lines read from the socket: a moment to flush output built per message.
    public var afterReadBatch: (() -> Void)?

    enum Phase { case idle, connecting, ready, waitingToReconnect, closed }
    var phase = Phase.idle
    var socket: BufferedSocket?
    var framer: LineFramer
    var pending = Deque<PendingReply>()
    /// Commands issued before the connection was ready, sent once it is: they must follow AUTH and the
    /// restored subscriptions, which are written when the greeting comes.
    var held: [(send: () -> Void, fail: (ClientError) -> Void)] = []
    var connectStartedAt = ContinuousClock.now
    var connectCompletion: ((Result<String, ClientError>) -> Void)?
    var hasConnected = false
    var attempt = 0
    var watchdog: LoopTimer?
    /// Replies received so far, and the watchdog's last look at that count: for the reply deadline.
    var repliesReceived: UInt64 = 0
    var replyProgressMark: (replies: UInt64, at: ContinuousClock.Instant)?
    var reconnectTimer: LoopTimer?
    var scratch: [UInt8] = []
    var generator = SystemRandomNumberGenerator()
    var tlsContext: TLSContext?

    /// Patterns the server confirmed, in subscription order (restored after a reconnect).
    public internal(set) var subscriptions: [String] = []
    /// The group of each pattern held as a group member (QSUB, protocol 1.2); the others are plain.
    public internal(set) var groups: [String: String] = [:]
    /// Questions this client asked that are still open, by id. Bound: the server's `max_asks` per connection
    /// (default 1000), since it refuses an ASK beyond it.
    var questions: [String: OpenQuestion] = [:]
    /// The `BMSG` whose payload the framer reads next.
    var binaryHeader: (subject: String, seq: UInt64)?
    var handlers: [(pattern: String, handler: (Message) -> Void)] = []
    var resumeState = ResumeState()
    /// Replies still due for the commands that restore subscriptions after a reconnect, and the patterns
    /// restored so far (reported together when the last reply comes).
    var restoring: (remaining: Int, restored: Int) = (0, 0)
    /// The server's name from its greeting.
    public internal(set) var serverName: String?
    /// The token last sent with AUTH (from `options.token`, or `options.tokenSource`).
    public internal(set) var token: String?
    /// The retry of a failed token refresh, and how many failed in a row (for its backoff).
    var tokenRetry: LoopTimer?
    var tokenFailures = 0
    /// The reason the server gave when it kicked this connection (`-ERR kicked <reason>`); nil until then. A
    /// kicked client stays closed: see `FanoutClient+Kicked.swift`.
    public internal(set) var kickedReason: String?

    public init(loop: EventLoop, address: SocketAddress, options: ClientOptions = ClientOptions()) {
        self.loop = loop
        self.address = address
        self.options = options
        self.token = options.token
        self.framer = LineFramer(maxLine: options.maxLine)
        scratch.reserveCapacity(256)
    }

    deinit {
        socket?.delegate = nil
    }

    /// Commands sent and not yet answered, or waiting for the connection to be ready.
    public var inFlight: Int { pending.count + held.count }

    /// Whether the connection is up and greeted.
    public var isReady: Bool { phase == .ready }

    /// Connects; `completion` gets the server's name once greeted, or why it could not connect.
    /// A first connection that fails is not retried: retries are for connections that were up.
    /// A token that `AUTH` cannot carry fails the connect at once, before any connection is made.
    public func connect(completion: @escaping (Result<String, ClientError>) -> Void) {
        if let token = options.token,
           let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkAuthToken(token) }) {
            return completion(.failure(refused))
        }
        connectCompletion = completion
        startWatchdog()
        openSocket()
    }

    /// Stops reading from the server (and so hearing anything from it), keeping the connection open: a
    /// subscriber that has stalled, as load tests need. Only `close` undoes it.
    @_spi(Bench) public func stopReading() {
        socket?.delegate = nil
        socket?.disableReading()
        watchdog = nil
    }

    /// Closes the connection for good; commands in flight fail with `.closed`.
    public func close() {
        phase = .closed
        reconnectTimer = nil
        tokenRetry = nil
        watchdog = nil
        socket?.delegate = nil
        socket = nil
        failPending(.closed)
    }

    /// Ends the client but keeps the connection: returns its fd, which the caller now owns, and the bytes
    /// read but not yet handled. For load generators that read deliveries with no protocol layer.
    /// Nil when not connected.
    @_spi(Bench) public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        guard let socket, phase != .closed else { return nil }
        var released = socket.releaseDescriptor()
        // A line cut in two at the end of the last read is still in the framer.
        released.unread = framer.pendingBytes + released.unread
        socket.delegate = nil
        self.socket = nil
        phase = .closed
        reconnectTimer = nil
        watchdog = nil
        failPending(.closed)
        return released
    }
}
