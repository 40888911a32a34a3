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
public final class FanoutClient: BufferedSocketDelegate {
    public let address: SocketAddress
    public let options: ClientOptions
    private let loop: EventLoop

    /// Connection events: connected, lost, reconnecting, resumed subjects, gaps in a subject's sequence.
    public var onEvent: ((ClientEvent) -> Void)?
    /// Every pushed message (after per-subject handlers), when set.
    public var onMessage: ((Message) -> Void)?
    /// Called after each batch of lines read from the socket: a moment to flush output built per message.
    public var afterReadBatch: (() -> Void)?

    private enum Phase { case idle, connecting, ready, waitingToReconnect, closed }
    private var phase = Phase.idle
    private var socket: BufferedSocket?
    private var framer: LineFramer
    private var pending = Deque<PendingReply>()
    /// Commands issued before the connection was ready, sent once it is: they must follow AUTH and the
    /// restored subscriptions, which are written when the greeting comes.
    private var held: [(send: () -> Void, fail: (ClientError) -> Void)] = []
    private var connectStartedAt = ContinuousClock.now
    private var connectCompletion: ((Result<String, ClientError>) -> Void)?
    private var hasConnected = false
    private var attempt = 0
    private var watchdog: LoopTimer?
    /// Replies received so far, and the watchdog's last look at that count: for the reply deadline.
    private var repliesReceived: UInt64 = 0
    private var replyProgressMark: (replies: UInt64, at: ContinuousClock.Instant)?
    private var reconnectTimer: LoopTimer?
    private var scratch: [UInt8] = []
    private var generator = SystemRandomNumberGenerator()
    private var tlsContext: TLSContext?

    /// Patterns the server confirmed, in subscription order (restored after a reconnect).
    public private(set) var subscriptions: [String] = []
    private var handlers: [(pattern: String, handler: (Message) -> Void)] = []
    private var resumeState = ResumeState()
    /// Replies still due for the commands that restore subscriptions after a reconnect, and the patterns
    /// restored so far (reported together when the last reply comes).
    private var restoring: (remaining: Int, restored: Int) = (0, 0)
    /// The server's name from its greeting.
    public private(set) var serverName: String?

    public init(loop: EventLoop, address: SocketAddress, options: ClientOptions = ClientOptions()) {
        self.loop = loop
        self.address = address
        self.options = options
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
    public func connect(completion: @escaping (Result<String, ClientError>) -> Void) {
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

    // MARK: Commands

    /// Subscribes to `patterns`; `handler`, if given, gets every message matching one of them.
    ///
    /// With `last`, each concrete subject starts with its newest `last` retained messages (`LAST`, protocol
    /// 1.1) before the live ones; wildcard patterns are subscribed as usual. The completion gets the server's
    /// subscription count once every pattern is answered, or the first failure.
    public func subscribe(
        _ patterns: [String], last: Int? = nil, handler: ((Message) -> Void)? = nil,
        completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        if let handler { for pattern in patterns { handlers.append((pattern, handler)) } }
        whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
            self.sendSubscribe(patterns, last: last.map { UInt64(max($0, 0)) }, completion: completion)
        }
    }

    /// Unsubscribes from `patterns` (all when empty).
    public func unsubscribe(_ patterns: [String] = [], completion: ((Result<Int, ClientError>) -> Void)? = nil) {
        whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
            self.sendUnsubscribe(patterns, completion: completion)
        }
    }

    /// RESUME (or LAST) per concrete subject when the server has them, then one SUB of the rest.
    private func sendSubscribe(_ patterns: [String], last: UInt64?, completion: ((Result<Int, ClientError>) -> Void)?) {
        guard !patterns.isEmpty, last != nil || resumeState.canResume else {
            send("SUB " + patterns.joined(separator: " "), .subscription(patterns: patterns, subscribing: true, completion))
            return
        }
        let wildcards = patterns.filter(Subject.isWildcard)
        let subjects = patterns.filter { !Subject.isWildcard($0) }
        let replies = SubscribeReplies(expecting: subjects.count + (wildcards.isEmpty ? 0 : 1), completion: completion)
        for subject in subjects {
            let request = last.map { ResumeState.Request.newest(count: $0) } ?? .position
            send(request.line(subject: subject),
                 .resume(subject: subject, request: request, restoring: false, replies.take))
        }
        if !wildcards.isEmpty {
            send("SUB " + wildcards.joined(separator: " "),
                 .subscription(patterns: wildcards, subscribing: true, replies.take))
        }
    }

    private func sendUnsubscribe(_ patterns: [String], completion: ((Result<Int, ClientError>) -> Void)?) {
        guard !patterns.isEmpty else {
            send("UNSUB", .subscription(patterns: [], subscribing: false, completion))
            return
        }
        // Subjects a restore resumed because they came through these patterns hold subscriptions of their
        // own on the server: they go first, in lines well under any server's max_line.
        let remaining = subscriptions.filter { !patterns.contains($0) }
        var batch: [String] = []
        var length = 0
        func flush() {
            guard !batch.isEmpty else { return }
            send("UNSUB " + batch.joined(separator: " "), .subscription(patterns: batch, subscribing: false, nil))
            batch = []
            length = 0
        }
        for subject in resumeState.implicitSubscriptions(droppingPatterns: patterns, keeping: remaining) {
            if length + subject.utf8.count > 4000 { flush() }
            batch.append(subject)
            length += subject.utf8.count + 1
        }
        flush()
        send("UNSUB " + patterns.joined(separator: " "), .subscription(patterns: patterns, subscribing: false, completion))
    }

    /// Publishes `payload` to `subject`; the completion, if any, gets the receivers count.
    public func publish(
        _ subject: String, payload: UnsafeRawBufferPointer, completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        guard phase == .ready else {
            let copy = Array(payload)
            whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
                copy.withUnsafeBytes { self.publish(subject, payload: $0, completion: completion) }
            }
            return
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: Self.pubPrefix)
        scratch.append(contentsOf: subject.utf8)
        scratch.append(UInt8(ascii: " "))
        scratch.append(contentsOf: payload)
        scratch.append(UInt8(ascii: "\n"))
        socket?.write(scratch)
        pending.append(PendingReply(kind: .publish(completion)))
    }

    public func publish(_ subject: String, _ payload: String, completion: ((Result<Int, ClientError>) -> Void)? = nil) {
        var payload = payload
        payload.withUTF8 { publish(subject, payload: UnsafeRawBufferPointer($0), completion: completion) }
    }

    /// Sends PING and reports the round-trip time.
    public func ping(completion: @escaping (Result<Duration, ClientError>) -> Void) {
        send("PING", .ping(completion))
    }

    /// Sends any command line and returns the text of its `+` reply after the first word
    /// (`INFO` gives `version=... uptime_s=...`).
    public func request(_ line: String, completion: @escaping (Result<String, ClientError>) -> Void) {
        send(line, .text(completion))
    }

    private static let pubPrefix: [UInt8] = Array("PUB ".utf8)

    private func send(_ line: String, _ kind: PendingReply.Kind) {
        guard phase == .ready else {
            whenReady(failing: { PendingReply(kind: kind).fail($0) }) { [unowned self] in self.send(line, kind) }
            return
        }
        socket?.write(line + "\n")
        pending.append(PendingReply(kind: kind))
    }

    /// Runs `body` now when ready, later (in issue order) while connecting, else fails.
    private func whenReady(failing fail: @escaping (ClientError) -> Void, _ body: @escaping () -> Void) {
        switch phase {
        case .ready: body()
        case .connecting: held.append((body, fail))
        case .idle: fail(.disconnected("not connected"))
        case .waitingToReconnect: fail(.disconnected("reconnecting"))
        case .closed: fail(.closed)
        }
    }

    // MARK: Connection management

    private func openSocket() {
        phase = .connecting
        serverName = nil
        connectStartedAt = .now
        framer = LineFramer(maxLine: options.maxLine)
        do {
            if let settings = options.tls, tlsContext == nil {
                tlsContext = try TLSContext(serverCA: settings.serverCA, certificate: settings.certificate,
                                            privateKey: settings.privateKey)
            }
            let serverName = options.tls.map { $0.serverName ?? address.host }
            let socket = try BufferedSocket(loop: loop, connectingTo: address, tls: tlsContext, serverName: serverName)
            socket.delegate = self
            socket.enableReading()
            self.socket = socket
        } catch {
            connectionLost(reason: error.reason)
        }
    }

    public func socketDidConnect(_ socket: BufferedSocket) {
        socket.disableNagle()
    }

    public func socketDidRead(_ socket: BufferedSocket) {
        socket.readAvailable()
        socket.readInput { chunk in
            framer.feed(chunk) { event in
                switch event {
                case .line(let line): handleLine(line)
                case .tooLong: connectionLost(reason: "server line longer than \(options.maxLine) bytes")
                }
                return self.socket === socket
            }
        }
        afterReadBatch?()
    }

    public func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd) {
        switch reason {
        case .eof: connectionLost(reason: "closed by server")
        case .error(let errno):
            let text = SystemError(errno: errno, operation: "").reason
            connectionLost(reason: errno == 0 && phase == .connecting ? "connection refused" : text)
        case .readTimeout, .writeTimeout: connectionLost(reason: "\(reason)")
        case .tls(let text): connectionLost(reason: "TLS: \(text)")
        }
    }

    private func connectionLost(reason: String) {
        guard phase != .closed, phase != .waitingToReconnect else { return }
        let wasConnecting = phase == .connecting
        socket?.delegate = nil
        socket = nil
        failPending(.disconnected(reason))
        if wasConnecting && !hasConnected {
            phase = .closed
            watchdog = nil
            let completion = connectCompletion
            connectCompletion = nil
            completion?(.failure(.cannotConnect(address: address.description, reason: reason)))
            return
        }
        onEvent?(.disconnected(reason: reason))
        guard options.reconnect.enabled else {
            phase = .closed
            watchdog = nil
            return
        }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        phase = .waitingToReconnect
        attempt += 1
        let delay = options.reconnect.delay(forAttempt: attempt, random: Double.random(in: 0..<1, using: &generator))
        onEvent?(.reconnecting(attempt: attempt, delay: delay))
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.reconnectTimer = nil
            self.openSocket()
        }
        timer.schedule(after: delay)
        reconnectTimer = timer
    }

    private func failPending(_ error: ClientError) {
        let failed = pending
        pending.removeAll()
        for entry in failed { entry.fail(error) }
        let waiting = held
        held.removeAll()
        for entry in waiting { entry.fail(error) }
    }

    /// Checks connect and reply deadlines a few times per timeout period.
    private func startWatchdog() {
        let timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.checkDeadlines() }
        timer.schedule(after: min(options.timeout / 4, .milliseconds(250)))
        watchdog = timer
    }

    private func checkDeadlines() {
        let now = ContinuousClock.now
        if phase == .connecting && now - connectStartedAt > options.timeout {
            connectionLost(reason: "no greeting within \(options.timeout)")
        } else if phase == .ready && !pending.isEmpty {
            // No reply for `timeout` while commands wait: the mark moves whenever a reply arrives.
            guard let mark = replyProgressMark, mark.replies == repliesReceived else {
                replyProgressMark = (repliesReceived, now)
                return
            }
            if now - mark.at > options.timeout {
                let error = ClientError.timeout("waiting for a reply from \(address)")
                failPending(error)
                connectionLost(reason: "no reply within \(options.timeout)")
            }
        } else {
            replyProgressMark = nil
        }
    }

    // MARK: Lines from the server

    private func handleLine(_ line: UnsafeRawBufferPointer) {
        if MessageLine.looksLikeMessage(line) {
            handleMessage(line)
            return
        }
        guard let parsed = ServerLine.parse(line) else {
            connectionLost(reason: ClientError.protocolViolation(String(decoding: line.prefix(80), as: UTF8.self)).description)
            return
        }
        switch parsed {
        case .hello(let name, let fields):
            greeted(serverName: name, epoch: fields["epoch"])
        case .failure(let error) where phase == .connecting && serverName != nil:
            completeHead(.failure(.server(error)))
        case .failure(let error) where phase == .connecting:
            // Refused at accept, e.g. -ERR limit (max_connections).
            connectionLost(reason: "\(error.code) \(error.text)")
        case .failure(let error) where [.slowConsumer, .shuttingDown, .idleTimeout].contains(error.code):
            onEvent?(.serverClosing(error))
        case .failure(let error) where error.revokedPatterns != nil:
            recordSubscription(error.revokedPatterns ?? [], subscribing: false)
            onEvent?(.revoked(error))
        case .failure(let error):
            completeHead(.failure(.server(error)))
        case .reset(let subject, let epoch, let seq, let missed):
            resumeState.reset(subject: subject, epoch: epoch, seq: seq)
            onEvent?(.reset(subject: subject, epoch: epoch, seq: seq, missed: missed.map(MissedMessages.count) ?? .unknown))
        case .success(_, let text):
            completeHead(.success(text))
        case .message:
            break
        }
    }

    private func greeted(serverName name: String, epoch: String?) {
        serverName = name
        resumeState.connected(epoch: epoch)
        if let token = options.token {
            // AUTH goes ahead of anything queued since the connect; the connection is ready once it succeeds.
            socket?.write("AUTH \(token)\n")
            pending.prepend(PendingReply(kind: .authenticate))
            return
        }
        becomeReady()
    }

    private func becomeReady() {
        guard let name = serverName else { return }
        phase = .ready
        replyProgressMark = nil
        let reconnect = hasConnected
        hasConnected = true
        attempt = 0
        if reconnect { restoreSubscriptions() }
        let waiting = held
        held.removeAll()
        for entry in waiting { entry.send() }
        onEvent?(.connected(serverName: name, reconnect: reconnect))
        if let completion = connectCompletion {
            connectCompletion = nil
            completion(.success(name))
        }
    }

    /// Sends what `ResumeState` plans after a reconnect. Nothing but AUTH (answered by now) was written on
    /// this connection, and what was issued meanwhile is held until after this, so these replies come first.
    private func restoreSubscriptions() {
        let plan = resumeState.restorePlan(subscriptions: subscriptions)
        restoring = (plan.resumes.count + (plan.patterns.isEmpty ? 0 : 1), 0)
        var lines = ""
        for resume in plan.resumes {
            lines += resume.request.line(subject: resume.subject) + "\n"
            pending.append(PendingReply(kind: .resume(subject: resume.subject, request: resume.request,
                                                      restoring: true, nil)))
        }
        if !plan.patterns.isEmpty {
            lines += "SUB " + plan.patterns.joined(separator: " ") + "\n"
            pending.append(PendingReply(kind: .resubscribe(patterns: plan.patterns)))
        }
        if !lines.isEmpty { socket?.write(lines) }
    }

    /// One restoring reply is in; `restored` patterns came back with it.
    private func restoreStepDone(restored: Int) {
        restoring.remaining -= 1
        restoring.restored += restored
        if restoring.remaining == 0 { onEvent?(.resubscribed(count: restoring.restored)) }
    }

    private func completeHead(_ result: Result<String, ClientError>) {
        guard let head = pending.popFirst() else {
            connectionLost(reason: "reply with no command waiting for it")
            return
        }
        repliesReceived &+= 1
        switch head.kind {
        case .publish(let completion):
            let count = result.flatMap { text in
                Int(text).map { .success($0) } ?? .failure(.protocolViolation("+OK \(text)"))
            }
            completion?(count)
        case .subscription(let patterns, let subscribing, let completion):
            if case .success = result { recordSubscription(patterns, subscribing: subscribing) }
            completion?(result.flatMap { Int($0).map { .success($0) } ?? .failure(.protocolViolation("+OK \($0)")) })
        case .ping(let completion):
            completion(result.map { _ in ContinuousClock.now - (head.sentAt ?? .now) })
        case .text(let completion):
            completion(result)
        case .resume(let subject, let request, let restoring, let completion):
            resumeAnswered(subject: subject, request: request, restoring: restoring, result, completion)
        case .resubscribe(let patterns):
            if case .failure(let error) = result { onEvent?(.resubscribeFailed(patterns: patterns, error: error)) }
            restoreStepDone(restored: (try? result.get()) == nil ? 0 : patterns.count)
        case .authenticate:
            switch result {
            case .success:
                becomeReady()
            case .failure(let error):
                failPending(error)
                let completion = connectCompletion
                connectCompletion = nil
                close()
                completion?(.failure(error))
                onEvent?(.disconnected(reason: "\(error)"))
            }
        }
    }

    private func resumeAnswered(
        subject: String, request: ResumeState.Request, restoring: Bool, _ result: Result<String, ClientError>,
        _ completion: ((Result<Int, ClientError>) -> Void)?
    ) {
        let reply: ResumeReply
        switch result {
        case .success(let text):
            guard let parsed = ResumeReply(text) else {
                let error = ClientError.protocolViolation("+OK \(text)")
                completion?(.failure(error))
                connectionLost(reason: error.description)
                return
            }
            reply = parsed
        case .failure(let error):
            if restoring {
                onEvent?(.resubscribeFailed(patterns: [subject], error: error))
                restoreStepDone(restored: 0)
            }
            completion?(.failure(error))
            return
        }
        if !restoring { recordSubscription([subject], subscribing: true) }
        if let report = resumeState.answered(subject: subject, request: request, reply: reply) {
            onEvent?(.resumed(subject: report.subject, recovered: report.recovered, missed: report.missed))
        }
        if restoring { restoreStepDone(restored: subscriptions.contains(subject) ? 1 : 0) }
        completion?(.success(reply.subscriptions))
    }

    private func recordSubscription(_ patterns: [String], subscribing: Bool) {
        if subscribing {
            for pattern in patterns where !subscriptions.contains(pattern) { subscriptions.append(pattern) }
            return
        }
        let dropped = patterns.isEmpty ? subscriptions : patterns
        subscriptions.removeAll { dropped.contains($0) }
        handlers.removeAll { dropped.contains($0.pattern) }
        resumeState.forget(keeping: subscriptions)
    }

    private func handleMessage(_ line: UnsafeRawBufferPointer) {
        guard let parsed = MessageLine(line) else {
            connectionLost(reason: ClientError.protocolViolation(String(decoding: line.prefix(80), as: UTF8.self)).description)
            return
        }
        let seq = parsed.seq
        let subject = String(decoding: parsed.subject, as: UTF8.self)
        switch resumeState.observe(subject: subject, seq: seq) {
        case .deliver: break
        case .duplicate: return
        case .gap(let expected, let received): onEvent?(.gap(subject: subject, expected: expected, received: received))
        case .restarted: onEvent?(.resumed(subject: subject, recovered: 0, missed: .unknown))
        }
        let message = Message(subject: subject, seq: seq, payload: Array(parsed.payload))
        for entry in handlers where Subject.matches(pattern: entry.pattern, subject: message.subject) {
            entry.handler(message)
        }
        onMessage?(message)
    }
}
