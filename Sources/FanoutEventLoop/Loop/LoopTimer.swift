import CLibevent

/// A timer on an `EventLoop`, calling its closure on the loop thread. Freed (and cancelled) on deinit.
public final class LoopTimer {
    /// Strong: the event_base must outlive the event made from it.
    private let loop: EventLoop
    private var event: OpaquePointer?
    private let action: () -> Void
    private let repeating: Bool

    /// - Parameter repeating: when true the timer fires every `interval` once scheduled.
    public init(loop: EventLoop, repeating: Bool = false, action: @escaping () -> Void) {
        self.loop = loop
        self.action = action
        self.repeating = repeating
        // Whoever holds this timer keeps it alive, and deinit frees the event (`CallbackContext`).
        let flags = Int16(repeating ? EV_PERSIST : 0)
        event = event_new(loop.base, -1, flags, { _, _, context in
            CallbackContext<LoopTimer>(context!).object.action()
        }, CallbackContext(self).pointer)
    }

    deinit {
        if let event { event_free(event) }
    }

    /// Arms the timer to fire after `interval` (and every `interval` after that when repeating).
    public func schedule(after interval: Duration) {
        guard let event else { return }
        var tv = interval.timeval
        event_add(event, &tv)
    }

    /// Makes the timer fire in this loop pass, after the callbacks already due in it (those of sockets that
    /// were ready together): work gathered from all of them is then done once. Calling it again before it
    /// fires changes nothing.
    public func fireAtEndOfPass() {
        guard let event else { return }
        event_active(event, Int32(EV_TIMEOUT), 1)
    }

    /// Disarms the timer; it can be scheduled again.
    public func cancel() {
        guard let event else { return }
        event_del(event)
    }

    public var isScheduled: Bool {
        guard let event else { return false }
        return event_pending(event, Int16(EV_TIMEOUT), nil) != 0
    }
}
