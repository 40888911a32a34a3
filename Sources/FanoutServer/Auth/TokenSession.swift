import FanoutEventLoop

/// What the server keeps of a connection authenticated by an application token, beside its `Session`: the
/// timer that acts on the token's expiry. Made only for token connections; a connection that authenticated
/// with a users-file token, or needs none, has no such object.
final class TokenSession {
    /// Whether the token's grant has subscribe-deny patterns (counted in `withholdingTokenConnections`).
    var withholds: Bool
    /// Fires at the token's `exp` (push, then the grace), and again at the grace's end (close). Nil for a
    /// token without `exp`.
    var timer: LoopTimer?
    /// Between the expiry push and a fresh AUTH or the close.
    var inGrace = false

    init(withholds: Bool) {
        self.withholds = withholds
    }
}
