/// What a RESUME or LAST asks of an engine about one subject.
public struct ReplayRequest: Sendable {
    public enum Kind: Sendable, Equatable {
        /// RESUME with no position: where the subject stands, nothing replayed.
        case position
        /// RESUME from where a client stands: every retained message after it, in its epoch.
        case after(epoch: String, seq: UInt64)
        /// LAST: the newest `count` retained messages.
        case newest(count: UInt64)
    }

    public let subject: String
    public let kind: Kind
    /// Bytes of `MSG` lines the replay may take at most (what the connection's output limit leaves).
    public let budget: Int

    public init(subject: String, kind: Kind, budget: Int) {
        self.subject = subject
        self.kind = kind
        self.budget = budget
    }
}

/// An engine's answer to a `ReplayRequest`: the reply's figures and the replay's `MSG` lines, encoded.
public struct ReplayAnswer: Sendable {
    /// The subject's epoch.
    public var epoch: String
    /// The last seq assigned on the subject (0 if none).
    public var lastSeq: UInt64
    /// How many messages `lines` holds.
    public var replayed: Int
    /// Messages after the client's position that are gone for good (nil: unknown).
    public var missed: UInt64?
    /// The replayed messages as `MSG` lines, oldest first.
    public var lines: [UInt8]

    public init(epoch: String, lastSeq: UInt64, replayed: Int, missed: UInt64?, lines: [UInt8]) {
        self.epoch = epoch
        self.lastSeq = lastSeq
        self.replayed = replayed
        self.missed = missed
        self.lines = lines
    }
}
