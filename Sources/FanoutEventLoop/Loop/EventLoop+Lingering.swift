import CLibevent

// The loop owns the sockets that close gracefully (see `BufferedSocket+Linger.swift`), and asks the kernel
// about the ones waiting for their last bytes to be acknowledged. One timer polls them all: after a shutdown
// thousands may wait at once, and a timer each would arm and fire thousands of events every interval.
extension EventLoop {
    /// How often a half-closed socket asks whether its last bytes are acknowledged: short next to a peer's
    /// delayed ACK (40 ms on Linux), so a close ends soon after the acknowledgement; each poll costs one ioctl
    /// per waiting socket.
    static let acknowledgementPollInterval = Duration.milliseconds(10)

    /// Number of sockets still closing: flushing their last bytes, or waiting for the peer to acknowledge them.
    public var lingeringCount: Int { lingering.count }

    /// Closes every lingering socket now; used at the end of a shutdown's grace period.
    public func dropLingeringSockets() {
        awaitingAcknowledgement.removeAll()
        if let acknowledgementPoll { event_del(acknowledgementPoll) }
        lingering.removeAll()
    }

    /// Polls `socket`, which lingers and has half-closed, until its last bytes are acknowledged.
    func awaitAcknowledgement(of socket: BufferedSocket) {
        guard awaitingAcknowledgement.insert(ObjectIdentifier(socket)).inserted,
              awaitingAcknowledgement.count == 1 else { return }
        if acknowledgementPoll == nil {
            // The loop frees this event in deinit, before it goes (`CallbackContext`).
            acknowledgementPoll = event_new(base, -1, Int16(EV_PERSIST), { _, _, context in
                CallbackContext<EventLoop>(context!).object.pollAcknowledgements()
            }, CallbackContext(self).pointer)
        }
        // Without the event (out of memory), the sockets still end with the peer's end of file or the deadline.
        guard let acknowledgementPoll else { return }
        var interval = Self.acknowledgementPollInterval.timeval
        event_add(acknowledgementPoll, &interval)
    }

    /// Lets go of a socket that is done lingering, and tells the owner once none is left.
    func endLingering(_ socket: BufferedSocket) {
        let id = ObjectIdentifier(socket)
        if awaitingAcknowledgement.remove(id) != nil, awaitingAcknowledgement.isEmpty, let acknowledgementPoll {
            event_del(acknowledgementPoll)
        }
        lingering[id] = nil
        if lingering.isEmpty { whenLingeringDone?() }
    }

    private func pollAcknowledgements() {
        var acknowledged: [BufferedSocket] = []
        var unanswered: [ObjectIdentifier] = []
        for id in awaitingAcknowledgement {
            guard let socket = lingering[id], let answer = socket.lastBytesAcknowledged() else {
                unanswered.append(id)
                continue
            }
            if answer { acknowledged.append(socket) }
        }
        // The kernel cannot say for these: they end with the peer's end of file or their deadline.
        for id in unanswered { awaitingAcknowledgement.remove(id) }
        for socket in acknowledged { socket.finishLingering() }
        if awaitingAcknowledgement.isEmpty, let acknowledgementPoll { event_del(acknowledgementPoll) }
    }
}
