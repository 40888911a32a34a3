import FanoutProtocol

/// Commands: each is sent at once when the connection is ready, held in issue order while it connects, and
/// failed otherwise; its reply is matched by `PendingReply`, in order (see `FanoutClient+Replies.swift`).
extension FanoutClient {
    /// Subscribes to `patterns`; `handler`, if given, gets every message matching one of them.
    ///
    /// With `last`, each concrete subject starts with its newest `last` retained messages (`LAST`, protocol
    /// 1.1) before the live ones; wildcard patterns are subscribed as usual. The completion gets the server's
    /// subscription count once every pattern is answered, or the first failure.
    public func subscribe(
        _ patterns: [String], last: Int? = nil, handler: ((Message) -> Void)? = nil,
        completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try Self.checkSubscribing(patterns) }) {
            completion?(.failure(refused))
            return
        }
        if let handler { for pattern in patterns { handlers.append((pattern, handler)) } }
        whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
            self.sendSubscribe(patterns, last: last.map { UInt64(max($0, 0)) }, completion: completion)
        }
    }

    /// Unsubscribes from `patterns` (all when empty).
    public func unsubscribe(_ patterns: [String] = [], completion: ((Result<Int, ClientError>) -> Void)? = nil) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkPatterns(patterns) }) {
            completion?(.failure(refused))
            return
        }
        whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
            self.sendUnsubscribe(patterns, completion: completion)
        }
    }

    /// RESUME (or LAST) per concrete subject when the server has them, then one SUB of the rest.
    func sendSubscribe(_ patterns: [String], last: UInt64?, completion: ((Result<Int, ClientError>) -> Void)?) {
        guard !patterns.isEmpty, last != nil || resumeState.canResume else {
            send("SUB " + patterns.joined(separator: " "),
                 .subscription(patterns: patterns, group: nil, subscribing: true, completion))
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
                 .subscription(patterns: wildcards, group: nil, subscribing: true, replies.take))
        }
    }

    func sendUnsubscribe(_ patterns: [String], completion: ((Result<Int, ClientError>) -> Void)?) {
        guard !patterns.isEmpty else {
            send("UNSUB", .subscription(patterns: [], group: nil, subscribing: false, completion))
            return
        }
        // Subjects a restore resumed because they came through these patterns hold subscriptions of their
        // own on the server: they go first, in lines well under any server's max_line.
        let remaining = subscriptions.filter { !patterns.contains($0) }
        var batch: [String] = []
        var length = 0
        func flush() {
            guard !batch.isEmpty else { return }
            send("UNSUB " + batch.joined(separator: " "),
                 .subscription(patterns: batch, group: nil, subscribing: false, nil))
            batch = []
            length = 0
        }
        for subject in resumeState.implicitSubscriptions(droppingPatterns: patterns, keeping: remaining) {
            if length + subject.utf8.count > 4000 { flush() }
            batch.append(subject)
            length += subject.utf8.count + 1
        }
        flush()
        send("UNSUB " + patterns.joined(separator: " "),
             .subscription(patterns: patterns, group: nil, subscribing: false, completion))
    }

    /// Publishes `payload` to `subject`; the completion, if any, gets the receivers count. A payload that a line
    /// cannot carry (an LF in it, or a CR at its end, which the server would take for a line end) goes as
    /// `BPUB` (protocol 1.2), so every payload arrives as it was.
    public func publish(
        _ subject: String, payload: UnsafeRawBufferPointer, completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkSubject(subject) }) {
            completion?(.failure(refused))
            return
        }
        guard Self.lineCarries(payload) else {
            publishBinary(subject, payload: payload, completion: completion)
            return
        }
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
    /// The line must be one line (no LF, no CR): its words are the caller's to choose.
    public func request(_ line: String, completion: @escaping (Result<String, ClientError>) -> Void) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkLine(line) }) {
            return completion(.failure(refused))
        }
        send(line, .text(completion))
    }

    /// A subscription's patterns: at least one, each valid.
    static func checkSubscribing(_ patterns: [String]) throws(ClientError) {
        guard !patterns.isEmpty else { throw .invalid("subscribing needs at least one subject pattern") }
        try CommandWords.checkPatterns(patterns)
    }

    static let pubPrefix: [UInt8] = Array("PUB ".utf8)

    /// Whether `payload` can be the last field of a command line: no LF in it, and no CR at its end (a CR
    /// right before the LF is stripped by the server's framer).
    public static func lineCarries(_ payload: UnsafeRawBufferPointer) -> Bool {
        !payload.contains(0x0A) && payload.last != 0x0D
    }

    /// Sends `prefix`, `payload` and a LF as one command line (ASK, ANSWER), holding a copy of the payload
    /// while the connection is not ready.
    func send(prefix: String, payload: UnsafeRawBufferPointer, _ kind: PendingReply.Kind) {
        guard phase == .ready else {
            let copy = Array(payload)
            whenReady(failing: { PendingReply(kind: kind).fail($0) }) { [unowned self] in
                copy.withUnsafeBytes { self.send(prefix: prefix, payload: $0, kind) }
            }
            return
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: prefix.utf8)
        scratch.append(contentsOf: payload)
        scratch.append(UInt8(ascii: "\n"))
        socket?.write(scratch)
        pending.append(PendingReply(kind: kind))
    }

    func send(_ line: String, _ kind: PendingReply.Kind) {
        guard phase == .ready else {
            whenReady(failing: { PendingReply(kind: kind).fail($0) }) { [unowned self] in self.send(line, kind) }
            return
        }
        socket?.write(line + "\n")
        pending.append(PendingReply(kind: kind))
    }

    /// Runs `body` now when ready, later (in issue order) while connecting, else fails.
    func whenReady(failing fail: @escaping (ClientError) -> Void, _ body: @escaping () -> Void) {
        switch phase {
        case .ready: body()
        case .connecting: held.append((body, fail))
        case .idle: fail(.disconnected("not connected"))
        case .waitingToReconnect: fail(.disconnected("reconnecting"))
        case .closed: fail(kickedReason.map(ClientError.kicked) ?? .closed)
        }
    }
}
