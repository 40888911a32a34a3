import FanoutEngine

/// A RESUME or LAST on its way to the client: the reply, then the replay a slice per loop pass, then the live
/// messages that were published to the connection meanwhile, in that order.
///
/// Worst case: a replay holds at most what the connection's output limit leaves (`max_pending_bytes`), and
/// each loop pass sends it at most `Server.turn` of work in 64 KiB slices. The live messages that wait behind
/// it count against the same limit: past it the connection is a slow consumer, as it would be without a replay.
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
        if connection.replayJob === self { connection.replayJob = nil }
    }
}
