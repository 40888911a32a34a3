/// Counters since start, owned by the loop thread.
struct ServerStats {
    /// Messages accepted by PUB.
    var published: UInt64 = 0
    /// Message copies queued to subscribers, replays included.
    var delivered: UInt64 = 0
    /// Retained messages replayed by RESUME and LAST.
    var replayed: UInt64 = 0
    /// Connections dropped because they did not read their output.
    var slowConsumers: UInt64 = 0
    /// Times a publisher was paused by backpressure (backpressure_bytes).
    var backpressurePauses: UInt64 = 0
    /// Connections refused or commands refused by a limit.
    var limitRefusals: UInt64 = 0
    /// Connections accepted.
    var accepted: UInt64 = 0
    /// Bytes read from clients.
    var bytesIn: UInt64 = 0
    /// Bytes queued to clients (replies and messages).
    var bytesOut: UInt64 = 0
    /// Message copies queued to a group's chosen member (in `delivered` too).
    var groupDeliveries: UInt64 = 0
    /// Group runs spread over fewer members than they could be, the group being under sustained load.
    var groupPacedRuns: UInt64 = 0
    /// RESET pushes made: a subject's numbering restarted, or messages were lost to this node.
    var resets: UInt64 = 0
    /// Publishes an engine refused or lost (several nodes), and those whose outcome is unknown.
    var unavailable: UInt64 = 0
    var outcomeUnknown: UInt64 = 0
    /// Messages accepted by BPUB (in `published` too).
    var binaryPublished: UInt64 = 0
    /// Questions accepted by ASK, answers taken, and questions closed by their timeout.
    var questions: UInt64 = 0
    var answers: UInt64 = 0
    var askTimeouts: UInt64 = 0
    /// Token connections told their token expired, AUTHs that renewed a connection's token, and tokens refused.
    var tokensExpired: UInt64 = 0
    var tokenRefreshes: UInt64 = 0
    var tokenFailures: UInt64 = 0
}
