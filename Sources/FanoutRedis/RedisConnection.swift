import CHiredis
import DequeModule
import FanoutEventLoop

/// One hiredis asynchronous connection on the server's loop: commands with reply closures in order, or
/// (on a subscription connection) a stream of pushed messages.
///
/// Lifetime: the hiredis context points back here unretained (`data`, a `CallbackContext`, whose rules hold);
/// `close()` and deinit clear that pointer before freeing the context, so no callback reaches a dead object.
/// hiredis frees the context itself after a failed connect or a drop, which `connectionEnded` records.
final class RedisConnection {
    enum Event {
        case connected
        /// The connect failed, or the connection dropped: the context is gone.
        case ended(String)
    }

    typealias ReplyHandler = (Result<RedisReply, RedisFailure>) -> Void

    private let loop: EventLoop
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// Reply closures of commands sent, oldest first, with what each counts in flight: Redis answers in order,
    /// so each reply takes the first.
    private var waiting = Deque<(handler: ReplyHandler, weight: Int)>()
    /// The weights of the commands in `waiting`: a batch of PUBs counts as its messages.
    private(set) var inFlight = 0
    private(set) var isConnected = false
    var onEvent: (Event) -> Void = { _ in }
    /// Messages and (un)subscription confirmations on a subscription connection.
    var onPush: (RedisReply) -> Void = { _ in }
    /// Sees each push first, as hiredis's reply, and returns true when it took it (a message, decoded
    /// without building a `RedisReply`: the delivery path); the rest go to `onPush`.
    var onMessage: (UnsafeMutablePointer<redisReply>) -> Bool = { _ in false }
    /// When the last reply to a command came.
    private(set) var lastReply = ContinuousClock.now

    /// Starts connecting (non-blocking); the result comes as an `Event`. Throws when hiredis cannot even
    /// start (no descriptor, bad address).
    init(loop: EventLoop, host: String, port: Int) throws(RedisFailure) {
        self.loop = loop
        guard let context = redisAsyncConnect(host, Int32(port)) else {
            throw .unavailable("cannot allocate a Redis connection")
        }
        if context.pointee.err != 0 {
            let text = context.pointee.errstr.map { String(cString: $0) } ?? "error \(context.pointee.err)"
            redisAsyncFree(context)
            throw .unavailable("\(host):\(port): \(text)")
        }
        self.context = context
        context.pointee.data = CallbackContext(self).pointer
        redisLibeventAttach(context, loop.opaqueEventBase)
        redisAsyncSetConnectCallback(context) { context, status in
            guard let connection = RedisConnection.owner(of: context) else { return }
            if status == REDIS_OK {
                connection.isConnected = true
                connection.onEvent(.connected)
            } else {
                connection.connectionEnded(RedisConnection.errorText(of: context))
            }
        }
        redisAsyncSetDisconnectCallback(context) { context, status in
            guard let connection = RedisConnection.owner(of: context) else { return }
            connection.connectionEnded(status == REDIS_OK ? "closed" : RedisConnection.errorText(of: context))
        }
    }

    deinit {
        close(reason: "connection released")
    }

    /// Sends a command already in wire format; `reply` gets its answer, or a failure when the connection
    /// ends first. False (and `reply` not called) when there is no connection to send it on. `weight` is
    /// what it counts in `inFlight` until answered.
    @discardableResult
    func send(_ command: [UInt8], weight: Int = 1, reply: @escaping ReplyHandler) -> Bool {
        guard let context else { return false }
        let status = Self.terminated(command) { text, length in
            redisAsyncFormattedCommand(context, { context, reply, _ in
                guard let context, let connection = RedisConnection.owner(of: context) else { return }
                connection.replied(reply)
            }, nil, text, length)
        }
        guard status == REDIS_OK else { return false }
        waiting.append((reply, weight))
        inFlight += weight
        return true
    }

    /// Sends SUBSCRIBE, PSUBSCRIBE or their opposites (in wire format): what they bring comes to `onPush`.
    @discardableResult
    func sendSubscription(_ command: [UInt8]) -> Bool {
        guard let context else { return false }
        let status = Self.terminated(command) { text, length in
            redisAsyncFormattedCommand(context, { context, reply, _ in
                guard let context, let connection = RedisConnection.owner(of: context), let reply else { return }
                let raw = reply.assumingMemoryBound(to: redisReply.self)
                if connection.onMessage(raw) { return }
                if let decoded = RedisReply(reply) { connection.onPush(decoded) }
            }, nil, text, length)
        }
        return status == REDIS_OK
    }

    /// Calls `body` with the command as a C string and its length without the terminator. hiredis scans a
    /// formatted command with `strchr` (for the subscription verbs, past the last argument too), so it must
    /// end with a NUL byte. A command built with `RedisCommand.terminate` already does (no copy); any other
    /// is copied once with one added.
    private static func terminated(_ command: [UInt8], _ body: (UnsafePointer<CChar>, Int) -> Int32) -> Int32 {
        if command.last == 0 {
            return command.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count - 1) }
        }
        var copy = command
        copy.append(0)
        return copy.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count - 1) }
    }

    /// Drops the connection now: unanswered commands fail with an unknown outcome; no event follows.
    func close(reason: String) {
        guard let context else { return }
        context.pointee.data = nil
        self.context = nil
        isConnected = false
        failWaiting(reason)
        redisAsyncFree(context)
    }

    private func replied(_ reply: UnsafeMutableRawPointer?) {
        guard let (handler, weight) = waiting.popFirst() else { return }
        inFlight -= weight
        if let decoded = RedisReply(reply) {
            lastReply = .now
            handler(.success(decoded))
        } else {
            handler(.failure(.outcomeUnknown("connection lost")))
        }
    }

    /// hiredis is about to free the context (after a failed connect or a drop).
    private func connectionEnded(_ reason: String) {
        context?.pointee.data = nil
        context = nil
        isConnected = false
        failWaiting(reason)
        onEvent(.ended(reason))
    }

    private func failWaiting(_ reason: String) {
        inFlight = 0
        while let (handler, _) = waiting.popFirst() { handler(.failure(.outcomeUnknown(reason))) }
    }

    private static func owner(of context: UnsafePointer<redisAsyncContext>?) -> RedisConnection? {
        guard let data = context?.pointee.data else { return nil }
        return CallbackContext<RedisConnection>(data).object
    }

    private static func owner(of context: UnsafeMutablePointer<redisAsyncContext>) -> RedisConnection? {
        owner(of: UnsafePointer(context))
    }

    private static func errorText(of context: UnsafePointer<redisAsyncContext>?) -> String {
        guard let context, let text = context.pointee.errstr else { return "connection failed" }
        return String(cString: text)
    }
}
