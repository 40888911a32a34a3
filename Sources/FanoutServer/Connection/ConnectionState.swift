/// The life of a client connection, kept as an explicit state machine so that it is testable without I/O.
///
/// `open` reads and executes commands. `paused` has stopped reading because its own unsent output is over
/// the pause mark, and resumes when that output drains. `delayed` has stopped reading for a set time (after
/// a failed AUTH) and resumes only when that time is up. `closed` is final: the connection has left the
/// connection table and its socket is gone or lingering on its own.
enum ConnectionState: Equatable, Sendable {
    case open
    case paused
    case delayed
    case closed

    enum Event: Equatable, Sendable {
        /// Unsent output reached the pause mark.
        case outputFull
        /// Unsent output drained below the resume mark.
        case outputDrained
        /// Reading is to stop for a while (a failed AUTH).
        case delay
        /// The delay is over.
        case delayOver
        /// The connection is being closed, for any reason.
        case close
    }

    /// What the connection must do for a transition.
    enum Action: Equatable, Sendable {
        case none
        case stopReading
        case resumeReading
        case tearDown
    }

    /// Applies `event` and returns the action it calls for. Events that do not apply in a state are no-ops.
    mutating func handle(_ event: Event) -> Action {
        switch (self, event) {
        case (.open, .outputFull):
            self = .paused
            return .stopReading
        case (.paused, .outputDrained):
            self = .open
            return .resumeReading
        case (.open, .delay), (.paused, .delay):
            self = .delayed
            return .stopReading
        case (.delayed, .delayOver):
            self = .open
            return .resumeReading
        case (.open, .close), (.paused, .close), (.delayed, .close):
            self = .closed
            return .tearDown
        case (.open, .outputDrained), (.open, .delayOver), (.paused, .outputFull), (.paused, .delayOver),
             (.delayed, .outputFull), (.delayed, .outputDrained), (.delayed, .delay), (.closed, _):
            return .none
        }
    }

    /// Whether commands are executed in this state.
    var isReading: Bool { self == .open }
}
