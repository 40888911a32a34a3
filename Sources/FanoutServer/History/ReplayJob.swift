import FanoutEngine

/// A RESUME or LAST on its way to the client: the reply, then the replay a slice per loop pass, then the live
/// messages that were published to the connection meanwhile, in that order.
///
/// Worst case: a replay is encoded only as fast as the client reads it: a slice of 64 KiB is encoded while
/// the connection's unsent output is under `Replays.aheadBytes`, and a job whose client has not taken
/// that much waits for its socket to drain, so a client that never reads holds at most that much (plus its
/// kernel send buffer), however long the replay; each loop pass spends at most `Server.turn` on replays. What
/// it has queued counts for the memory bound like any backlog. The live messages that wait behind it count
/// against the connection's output limit: past it the connection is a slow consumer, as it would be without a
/// replay.
final class ReplayJob {
    /// Strong while the job lasts: a connection dropped meanwhile is let go at the next slice (its socket is
    /// nil). The connection refers back to the job until it ends, so `end` must run: every path that drops a
    /// job calls it.
    let connection: ClientConnection
    private(set) var stream: ReplayStream?
    /// Live `MSG` lines for this connection, queued while the replay is being sent.
    var waiting: [UInt8] = []
    /// Whether the job holds the connection's later commands back (released when it ends).
    var holdsCommands = false
    /// Waiting for the client to read what was sent before the next slice is encoded (`socketDidDrain`).
    var awaitingDrain = false

    init(connection: ClientConnection) {
        self.connection = connection
    }

    func start(_ stream: ReplayStream) {
        self.stream = stream
    }

    /// Lets go of the replay and of the connection's reference to the job.
    func end() {
        stream?.finish()
        stream = nil
        if connection.extras?.replayJob === self { connection.extras?.replayJob = nil }
    }
}
