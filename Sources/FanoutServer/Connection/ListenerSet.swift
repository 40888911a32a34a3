import FanoutEventLoop

/// The protocol's listeners: plain and unix ones from `listen`, TLS ones with their context, or those that
/// socket activation handed over; and what an accept failure leaves behind.
struct ListenerSet {
    /// Bound from `configuration.listeners.listen`, by the address text that asked for them.
    var plain: [String: Listener] = [:]
    /// Bound from `configuration.tls.listen`, and the context their connections get.
    var tls: [String: Listener] = [:]
    var tlsContext: TLSContext?
    /// Handed over by socket activation; while there are any, `listen` is not bound.
    var inherited: [Listener] = []
    /// Re-enables accepting after the process ran out of descriptors.
    var acceptRetryTimer: LoopTimer?
    /// Refused connections, logged once per interval at most.
    var refusalLog: LogThrottle?

    var all: [Listener] { inherited + plain.values + tls.values }

    mutating func tearDown() {
        plain.removeAll()
        tls.removeAll()
        inherited.removeAll()
        acceptRetryTimer = nil
        refusalLog = nil
    }
}
