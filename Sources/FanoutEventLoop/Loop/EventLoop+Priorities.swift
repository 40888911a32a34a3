import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// Fairness against expensive connection setup: a crowd's TLS handshakes (about 0.45 ms of CPU each, ECDHE and a
/// signature) must not hold up the answers to clients already connected.
///
/// libevent runs one pass's ready callbacks in priority order and, once a priority has run, polls again before
/// running lower ones. Sockets in their server-side handshake run at `handshakePriority`, below everything
/// else (`normalPriority`, which every event gets by default), and at most `lowPriorityCallbacksPerTurn` of
/// them run before libevent polls again, so a bystander's PING read meanwhile is handled within a few
/// handshakes, not after all of them. A pass still ends only when nothing is active, so while handshakes are in
/// progress the writes it queues are flushed by `flushEvent` within the pass rather than after it.
extension EventLoop {
    /// Three priorities (0 highest): libevent gives every event the middle one, so the loop's own events,
    /// hiredis's and every bufferevent's run at 1 without being told, and 2 is below them all.
    static let priorityCount: Int32 = 3
    /// The default priority of every event on the loop (libevent's `npriorities / 2`).
    static let normalPriority: Int32 = 1
    /// The priority of a socket's events during its server-side TLS handshake.
    static let handshakePriority: Int32 = 2
    /// Handshakes run before libevent polls again and runs normal-priority callbacks first: ~2 ms of CPU.
    static let lowPriorityCallbacksPerTurn: Int32 = 4

    func setUpPriorities() throws(SystemError) {
        guard event_base_priority_init(base, EventLoop.priorityCount) == 0 else {
            throw SystemError(errno: errno, operation: "event_base_priority_init")
        }
        // Unretained: the loop frees the event in its deinit (`CallbackContext`).
        flushEvent = try nonNull("event_new") {
            event_new(base, -1, 0, { _, _, context in
                CallbackContext<EventLoop>(context!).object.flushPendingWrites()
            }, CallbackContext(self).pointer)
        }
    }

    /// Makes the loop flush pending writes before it runs more low-priority callbacks, when the first socket
    /// is queued for a flush while handshakes are in progress. (Otherwise the flush after the pass suffices.)
    func flushWithinPass() {
        if let flushEvent { event_active(flushEvent, 0, 0) }
    }

    /// Puts a server-side TLS socket's events below the normal priority until its handshake is done.
    func handshakeBegan(_ socket: BufferedSocket) {
        fanout_bufferevent_set_event_priority(socket.bev, EventLoop.handshakePriority)
        handshaking.insert(ObjectIdentifier(socket))
    }

    /// The handshake is `done`, or the socket is going away. Back to the normal priority: libevent re-assigns
    /// an OpenSSL bufferevent's events when its handshake completes (which gives the default), and this says
    /// so explicitly whatever the version.
    func handshakeEnded(_ socket: BufferedSocket, done: Bool) {
        guard handshaking.remove(ObjectIdentifier(socket)) != nil else { return }
        if done { fanout_bufferevent_set_event_priority(socket.bev, EventLoop.normalPriority) }
    }
}
