/// What one connection may hold, and how much the server keeps for everyone.
public struct Limits: Sendable, Equatable {
    /// Longest accepted line in bytes (LF and a CR before it excluded).
    public var maxLine = 65_536
    /// Connections served at once; one more is answered `-ERR limit` and closed.
    public var maxConnections = 10_000
    /// Connections one client address may hold; nil means no per-address limit.
    public var maxConnectionsPerIP: Int?
    /// Subscriptions one connection may hold.
    public var maxSubscriptions = 10_000
    /// Unsent output above which a connection is dropped as a slow consumer.
    public var maxPendingBytes = 32 * 1024 * 1024
    /// `SO_SNDBUF` for client sockets (Linux keeps twice this); 0 leaves the kernel's autotuning, which lets a
    /// socket that is never read hold up to `net.ipv4.tcp_wmem`'s maximum (4 MiB on Debian) on top of
    /// `maxPendingBytes`, copied into cold memory while everyone else waits. Above the cap a stalled reader's
    /// backlog is shared references in user space, which cost next to nothing.
    public var sendBufferBytes = 512 * 1024
    /// Publisher backpressure: unsent output on a subscriber above which the publishers feeding it stop being
    /// read until it drains to half. 0 turns it off; slow consumers are then only dropped.
    public var backpressureBytes = 0
    /// Server-wide bound on queued output plus the subject index, in bytes; 0 turns it off. Over it, the
    /// connections with the largest backlogs are dropped as slow consumers and new subscriptions refused.
    public var maxMemory = 1 << 30
    /// How many subjects' sequence numbers are remembered; see `SequenceTable`.
    public var maxTrackedSubjects = 1_000_000

    /// Largest `BPUB` payload in bytes (independent of `maxLine`).
    public var maxPayload = 1_048_576
    /// Open questions (ASK) one connection may have.
    public var maxAsks = 1000
    /// Longest timeout an ASK may ask for, in milliseconds.
    public var maxAskTimeoutMilliseconds = 60_000
    /// Open questions on the whole server.
    public var maxOpenQuestions = 100_000

    public init() {}

    /// Queued output over which a group member is busy: another member is chosen while one is under it. The
    /// mark at which the server stops reading a connection's own commands.
    public var groupBusyBytes: Int { readPauseBytes }

    /// Unsent output at which the server stops reading a connection's commands until it drains to half:
    /// a client that floods commands without reading replies cannot grow its output without bound.
    public var readPauseBytes: Int { max(4096, min(256 * 1024, maxPendingBytes / 2)) }

    /// With max_pending_bytes not set: the default, or a quarter of a smaller max_memory (the least it allows),
    /// so that a file that set only a small max_memory, valid when the default was 8 MiB, still is; and never
    /// less than a set max_payload needs, so that a file that raised only max_payload sends what it accepts.
    public mutating func sizePendingBytes(payloadSet: Bool) {
        pendingBytesSized = true
        if maxMemory > 0 {
            maxPendingBytes = min(Limits().maxPendingBytes, max(maxMemory / 4, Self.plusHeadroom(maxLine)))
        }
        if payloadSet { maxPendingBytes = max(maxPendingBytes, Self.plusHeadroom(maxPayload)) }
    }

    /// With max_payload not set: the default, or what a smaller max_pending_bytes leaves room for, so that a
    /// file that lowered only max_pending_bytes still starts, with payloads its subscribers can be sent.
    public mutating func sizePayloadToPendingBytes() {
        maxPayload = max(0, min(Limits().maxPayload, maxPendingBytes &- Self.pushHeadroom))
    }

    /// The most open questions one connection reaches alone under the fair share (no more than the pool has
    /// left free): half the pool, rounded up.
    public static func loneAskerShare(of maxOpenQuestions: Int) -> Int { maxOpenQuestions / 2 + maxOpenQuestions % 2 }

    /// Whether max_pending_bytes was sized by `sizePendingBytes` rather than read: its problems say so.
    public var pendingBytesSized = false

    /// `value` plus `pushHeadroom`, saturating: the values come from a file and may be anything.
    static func plusHeadroom(_ value: Int) -> Int {
        let (sum, overflow) = value.addingReportingOverflow(pushHeadroom)
        return overflow ? Int.max : sum
    }

    /// Room for what a push adds to a payload (`MSG`/`BMSG`, a subject of up to 255 bytes, a seq, a length):
    /// a payload of `maxLine` or `maxPayload` bytes plus this must fit under `maxPendingBytes`.
    static let pushHeadroom = 512

    func problems() -> [String] {
        var found: [String] = []
        // Ranges first: the cross-checks below add and multiply these, which must not overflow.
        if maxLine < 64 || maxLine > 64 * 1024 * 1024 { found.append("max_line: must be 64 ... 67108864") }
        if maxPendingBytes < 0 || maxPendingBytes > 1 << 40 {
            found.append("max_pending_bytes: must be 0 ... 1099511627776")
        }
        if maxPayload < 0 || maxPayload > 1 << 30 { found.append("max_payload: must be 0 ... 1073741824") }
        if maxMemory < 0 || maxMemory > 1 << 50 { found.append("max_memory: must be 0 (off) ... 1125899906842624") }
        if !found.isEmpty { return found }
        let sized = pendingBytesSized ? " (max_pending_bytes not set: sized from max_memory and max_payload)" : ""
        if maxConnections < 1 { found.append("max_connections: must be at least 1") }
        if let maxConnectionsPerIP, maxConnectionsPerIP < 1 {
            found.append("max_connections_per_ip: must be at least 1, or 0 for off")
        }
        if maxSubscriptions < 1 { found.append("max_subscriptions: must be at least 1") }
        if maxPendingBytes < maxLine + Self.pushHeadroom {
            found.append("max_pending_bytes: must be more than max_line + \(Self.pushHeadroom)" + sized)
        }
        if sendBufferBytes < 0 || sendBufferBytes > 1 << 30 {
            found.append("send_buffer_bytes: must be 0 (the kernel's autotuning) ... 1073741824")
        }
        if backpressureBytes < 0 || (backpressureBytes > 0 && backpressureBytes >= maxPendingBytes) {
            found.append("backpressure_bytes: must be 0 (off) or less than max_pending_bytes")
        }
        if maxPayload > maxPendingBytes - Self.pushHeadroom {
            found.append("max_payload/max_pending_bytes: max_payload (\(maxPayload)) must be at most max_pending_bytes "
                + "(\(maxPendingBytes)) - \(Self.pushHeadroom): a subscriber sent a payload that long would be dropped "
                + "as a slow consumer" + sized)
        }
        if maxAsks < 1 { found.append("max_asks: must be at least 1") }
        if maxAsks > Self.loneAskerShare(of: maxOpenQuestions) {
            found.append("max_asks/max_open_questions: max_asks (\(maxAsks)) must be at most half of max_open_questions "
                + "(\(maxOpenQuestions)): a connection holds no more open questions than the pool has left free, so "
                + "no connection could reach it")
        }
        if maxAskTimeoutMilliseconds < 1 { found.append("max_ask_timeout: must be at least 1 (milliseconds)") }
        if maxOpenQuestions < 1 { found.append("max_open_questions: must be at least 1") }
        if maxTrackedSubjects < 1 { found.append("max_tracked_subjects: must be at least 1") }
        if maxMemory > 0 && maxMemory < 4 * maxPendingBytes {
            found.append("max_memory: must be 0 (off) or at least 4 × max_pending_bytes (\(maxPendingBytes))" + sized)
        }
        return found
    }
}
