import FanoutProtocol

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

/// The messages of a replay, encoded a slice at a time: a replay may hold as many messages as the connection's
/// output limit has room for (hundreds of thousands of short ones), and the server sends one slice per loop
/// pass, so that it never holds the loop for long.
public protocol ReplayStream: AnyObject {
    /// Appends the pushes of the next messages, oldest first, until `bytes` has grown by `limit` or more or
    /// none are left: `MSG` lines, or `BMSG` for a payload a line of `maxLine` cannot carry, the form each was
    /// first pushed in (`Encoder.appendPush`). Returns whether messages are left.
    func encode(into bytes: inout [UInt8], limit: Int, maxLine: Int) -> Bool

    /// Lets go of what the replay holds: called once, when it has ended or its connection has gone.
    func finish()
}

extension ReplayStream {
    /// `encode(into:limit:maxLine:)` with no line limit: only payloads with an LF become `BMSG`.
    public func encode(into bytes: inout [UInt8], limit: Int) -> Bool {
        encode(into: &bytes, limit: limit, maxLine: .max)
    }
}

/// An engine's answer to a `ReplayRequest`: the reply's figures and the replayed messages.
public struct ReplayAnswer {
    /// The subject's epoch.
    public var epoch: String
    /// The last seq assigned on the subject (0 if none).
    public var lastSeq: UInt64
    /// How many messages `stream` holds.
    public var replayed: Int
    /// Messages after the client's position that are gone for good (nil: unknown).
    public var missed: UInt64?
    /// The replayed messages (nil when none), and the bytes their `MSG` lines take in all.
    public var stream: ReplayStream?
    public var bytes: Int

    public init(epoch: String, lastSeq: UInt64, replayed: Int, missed: UInt64?, stream: ReplayStream? = nil,
                bytes: Int = 0) {
        self.epoch = epoch
        self.lastSeq = lastSeq
        self.replayed = replayed
        self.missed = missed
        self.stream = stream
        self.bytes = bytes
    }
}

/// A replay of messages an engine has already fetched (the Redis engine reads them from a stream), encoded a
/// slice at a time like any other.
public final class FetchedReplay: ReplayStream {
    public let subject: String
    /// The messages not yet encoded, oldest first.
    public private(set) var messages: ArraySlice<(seq: UInt64, payload: [UInt8])>

    public init(subject: String, messages: [(seq: UInt64, payload: [UInt8])]) {
        self.subject = subject
        self.messages = messages[...]
    }

    public func encode(into bytes: inout [UInt8], limit: Int, maxLine: Int) -> Bool {
        let stop = bytes.count.addingReportingOverflow(limit)
        let end = stop.overflow ? Int.max : stop.partialValue
        var name = subject
        name.withUTF8 { subjectBytes in
            while bytes.count < end, let message = messages.first {
                messages.removeFirst()
                message.payload.withUnsafeBytes { payload in
                    Encoder.appendPush(subject: UnsafeRawBufferPointer(subjectBytes), seq: message.seq,
                                       payload: payload, maxLine: maxLine, to: &bytes)
                }
            }
        }
        return !messages.isEmpty
    }

    public func finish() {
        messages = []
    }
}
