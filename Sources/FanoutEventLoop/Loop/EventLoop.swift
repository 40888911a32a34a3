import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// One libevent `event_base`: the single thread that calls `run()` owns it and every object made from it.
///
/// None of the loop's objects are `Sendable`: create them, use them and drop them on the loop's thread.
/// Every object made from a loop (socket, listener, timer, signal watcher) holds it strongly, so the
/// `event_base` is freed last whatever order their owners let go in.
public final class EventLoop {
    let base: OpaquePointer
    /// Sockets closing gracefully: the loop is their only owner until their last line is safe or their
    /// deadline passes (see `EventLoop+Lingering.swift`). At most one per connection closed within the grace.
    var lingering: [ObjectIdentifier: BufferedSocket] = [:]
    /// The lingering sockets that have half-closed and wait for the peer to acknowledge their last bytes: a
    /// subset of `lingering`, which owns them.
    var awaitingAcknowledgement: Set<ObjectIdentifier> = []
    /// The one timer that polls them, made on first use and armed only while some wait.
    var acknowledgementPoll: OpaquePointer?
    /// Called when the last lingering socket has closed (shutdown waits for this).
    public var whenLingeringDone: (() -> Void)?
    /// Sockets with output queued since the last flush, in the order they were first written to this pass.
    /// Unretained (`CallbackContext`): a socket freed before the flush clears its entry in `deinit`, so dropping
    /// a socket still discards its unsent output at once.
    var pendingFlush: [CallbackContext<BufferedSocket>?] = []
    private var stopRequested = false
    /// Server-side TLS sockets still in their handshake, whose events run at `handshakePriority`. While any
    /// are, writes are also flushed within a pass (`flushWithinPass`). At most one per accepted TLS connection
    /// (kept here, not in the socket, whose fields fill a 96-byte chunk).
    var handshaking: Set<ObjectIdentifier> = []
    /// A normal-priority event whose callback flushes pending writes, made active by the first socket queued
    /// for a flush while handshakes are in progress (see `EventLoop+Priorities.swift`).
    var flushEvent: OpaquePointer?
    /// Called after each pass's callbacks, before its writes are flushed: for work gathered over a pass
    /// (messages from Redis, fanned out in runs). Nil on a standalone server.
    public var afterEachPass: (() -> Void)?

    public init() throws(SystemError) {
        guard let config = event_config_new() else {
            throw SystemError(errno: errno, operation: "event_config_new")
        }
        defer { event_config_free(config) }
        // One thread owns the base: no libevent locking, and timeouts use the cached monotonic clock.
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_NOLOCK.rawValue))
        // After this many low-priority callbacks libevent polls again and runs the normal-priority ones first.
        event_config_set_max_dispatch_interval(
            config, nil, EventLoop.lowPriorityCallbacksPerTurn, EventLoop.handshakePriority)
        base = try nonNull("event_base_new", { event_base_new_with_config(config) })
        try setUpPriorities()
    }

    deinit {
        lingering.removeAll()
        if let flushEvent { event_free(flushEvent) }
        if let acknowledgementPoll { event_free(acknowledgementPoll) }
        event_base_free(base)
    }

    /// The backend libevent picked (`epoll` on Linux).
    public var backendName: String { String(cString: event_base_get_method(base)) }

    /// Runs until `stop()` is called or no events remain.
    ///
    /// One pass at a time: after the callbacks of each pass, every socket written to during it is flushed
    /// with one direct write, so a subscriber sent many messages in one pass costs one syscall, and the
    /// write event is armed only for output the kernel did not take (see `BufferedSocket.flushQueued`).
    public func run() throws(SystemError) {
        try run(polling: false)
    }

    /// `run()`, or with `polling`, a loop that never sleeps: each pass takes what is ready and the next starts
    /// at once. That burns the core, which only a load generator on a core of its own should do: it answers in
    /// microseconds instead of after a wake-up, which in a virtual machine can cost more than the work itself.
    @_spi(Bench) public func run(polling: Bool) throws(SystemError) {
        stopRequested = false
        while !stopRequested {
            let result = event_base_loop(base, polling ? EVLOOP_NONBLOCK : EVLOOP_ONCE)
            afterEachPass?()
            flushPendingWrites()
            if result < 0 { throw SystemError(errno: errno, operation: "event_base_loop") }
            if result == 1 { return }
        }
    }

    /// Runs one pass of the loop: waits for at least one event when `blocking`, else only handles what is
    /// ready now (flushing writable sockets, for example).
    public func runOnce(blocking: Bool) {
        event_base_loop(base, blocking ? EVLOOP_ONCE : EVLOOP_NONBLOCK)
        afterEachPass?()
        flushPendingWrites()
    }

    /// Makes `run()` return after the callbacks that are running now.
    public func stop() {
        stopRequested = true
        event_base_loopbreak(base)
    }

    /// Writes out what each socket queued during this pass. A flush may call back into the socket's owner
    /// (output drained), which may write to more sockets; they join the list and are flushed in this call.
    func flushPendingWrites() {
        var index = 0
        while index < pendingFlush.count {
            if let entry = pendingFlush[index] {
                pendingFlush[index] = nil
                let socket = entry.object
                socket.flushSlot = nil
                socket.flushQueued()
            }
            index += 1
        }
        pendingFlush.removeAll(keepingCapacity: true)
    }
}

extension Duration {
    /// The duration as a C `timeval`, for libevent's timeout arguments.
    var timeval: timeval {
        let (seconds, attoseconds) = components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}
