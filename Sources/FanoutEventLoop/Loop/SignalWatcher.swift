import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// Delivers a Unix signal to a closure on the loop thread, through libevent's self-pipe.
public final class SignalWatcher {
    /// Strong: the event_base must outlive the event made from it.
    private let loop: EventLoop
    private var event: OpaquePointer?
    private let action: (Int32) -> Void

    public init(loop: EventLoop, signal number: Int32, action: @escaping (Int32) -> Void) throws(SystemError) {
        self.loop = loop
        self.action = action
        // The owner keeps the watcher alive, and deinit frees the event (`CallbackContext`).
        event = event_new(loop.base, number, Int16(EV_SIGNAL | EV_PERSIST), { signal, _, context in
            CallbackContext<SignalWatcher>(context!).object.action(signal)
        }, CallbackContext(self).pointer)
        guard let event else { throw SystemError(errno: errno, operation: "event_new(signal \(number))") }
        try syscall("event_add(signal \(number))") { event_add(event, nil) }
        // A parent may have started us with this signal blocked (masks survive exec); a watched signal that
        // is blocked on the loop thread could never stop the daemon.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    deinit {
        if let event { event_free(event) }
    }

    /// Ignores SIGPIPE for the process: a peer that resets must give EPIPE, not kill the daemon.
    public static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }
}

/// Signal numbers, so that code outside this module needs no C headers.
public enum SignalNumber {
    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let hangup = SIGHUP
}
