/// Whether a connection reads commands: the one value that every reason to stop reading goes through.
///
/// Reasons are independent, and reading resumes only once the last one is lifted: its own output over the
/// pause mark, a command that takes several loop passes or a failed AUTH's pause (later commands wait, so
/// that replies keep their order), a turn used up, PUBs waiting on a shard past the pipeline limit, and, as a
/// count, the subscribers whose backlogs hold it back as a publisher. `closed` is final. Pure, and tested
/// without a socket; `ClientConnection.stopReading` and `resumeReading` apply it.
struct ReadGate: Equatable, Sendable {
    struct Stops: OptionSet, Equatable, Sendable {
        let rawValue: UInt8

        /// Its own unsent output reached the pause mark; lifted when it drains to half.
        static let outputFull = Stops(rawValue: 1 << 0)
        /// A command in progress over several loop passes, or the pause after a failed AUTH.
        static let commandsHeld = Stops(rawValue: 1 << 1)
        /// Its turn in this loop pass is over; lifted on the next pass.
        static let turnOver = Stops(rawValue: 1 << 2)
        /// Its PUBs wait on a shard (several nodes), or a command waits behind them.
        static let engineHold = Stops(rawValue: 1 << 3)
        /// The connection is closed: final.
        static let closed = Stops(rawValue: 1 << 4)
    }

    /// The stops in the low 5 bits, and above them the count of subscribers whose backlog holds this connection
    /// back as a publisher (backpressure; at most one per connection, far below 2^27): 4 bytes in the
    /// connection, where separate fields took 5 and the connection's padding another 8.
    private var bits: UInt32 = 0

    private static let holdUnit: UInt32 = 1 << 5

    var stops: Stops { Stops(rawValue: UInt8(truncatingIfNeeded: bits & (Self.holdUnit - 1))) }
    var holds: UInt32 { bits / Self.holdUnit }

    var isOpen: Bool { bits == 0 }
    var isClosed: Bool { bits & UInt32(Stops.closed.rawValue) != 0 }

    /// Adds `stop`; false when it was there already or the gate is closed.
    mutating func add(_ stop: Stops) -> Bool {
        guard !isClosed, !stops.contains(stop) else { return false }
        bits |= UInt32(stop.rawValue)
        return true
    }

    /// Lifts `stop`; false when it was not there (or the gate is closed).
    mutating func lift(_ stop: Stops) -> Bool {
        guard !isClosed, stops.contains(stop) else { return false }
        bits &= ~UInt32(stop.rawValue)
        return true
    }

    /// One more subscriber holds the publisher back.
    mutating func hold() {
        guard !isClosed else { return }
        bits += Self.holdUnit
    }

    /// A subscriber let go; false when none held it.
    mutating func release() -> Bool {
        guard holds > 0 else { return false }
        bits -= Self.holdUnit
        return true
    }
}

/// One loop pass's reading of a connection: since when, how many lines, and whether its turn is over.
struct ReadTurn {
    let started = ContinuousClock.now
    /// The connection's unsent output at which it stops reading (read_pause_bytes).
    let pauseBytes: Int
    var lines = 0
    var isOver = false
}
