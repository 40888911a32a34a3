import FanoutEventLoop

/// What the server keeps of a connection authenticated by an application token, beside its `Session`: the
/// timer that acts on the token's expiry. Made only for token connections; a connection that authenticated
/// with a users-file token, or needs none, has no such object.
final class TokenSession {
    /// Whether the token's grant has subscribe-deny patterns (counted in `withholdingTokenConnections`).
    var withholds: Bool
    /// The token's `exp` (unix seconds), or nil for a token without one.
    var expiresAt: Int64?
    /// Fires at the token's `exp` (push, then the grace), and again at the grace's end (close). Nil for a
    /// token without `exp`.
    var timer: LoopTimer?
    /// Between the expiry push and a fresh AUTH or the close.
    var inGrace = false

    init(withholds: Bool) {
        self.withholds = withholds
    }

    /// The longest a timer is set for: an `exp` years away would overflow the timer's arithmetic, so a far
    /// expiry is reached in steps of this.
    static let longestWait: Int64 = 30 * 86_400

    /// Seconds from `now` until the timer should next fire for an expiry at `expiresAt`.
    static func wait(until expiresAt: Int64, from now: Int64) -> Int64 {
        min(max(0, expiresAt - now), longestWait)
    }
}
