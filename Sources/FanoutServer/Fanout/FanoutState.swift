import FanoutEventLoop

/// The publish path's state between commands: the open publish run, the connections it must keep alive,
/// the framing it reuses for other transports, and the publishers that backpressure released.
struct FanoutState {
    var run = PublishRun()
    /// Connections dropped while a publish run was open, kept alive until it closes: the run refers to its
    /// receivers unretained.
    var retired: [ClientConnection] = []
    /// A publish run's lines framed for its adapted receivers, reused from run to run.
    var framing = RunFraming()
    /// Publishers no longer held back by any subscriber, to be read again on the next pass.
    var releasedPublishers: [UInt64] = []
    var resumeTimer: LoopTimer?
    /// The run's bytes are being queued to its receivers: a departure during it (a slow consumer dropped, which
    /// on a clustered node closes the run) must not flush or close the run again from inside.
    var isFlushing = false
    /// A chosen group member's share of the run passed `PublishRun.flushBytes`: flush after this message.
    var needsGroupFlush = false
    /// Turns among the member sets of a group that holds several patterns matching one subject.
    var groupTurn: UInt64 = 0

    mutating func tearDown() {
        resumeTimer = nil
        releasedPublishers.removeAll()
    }
}
