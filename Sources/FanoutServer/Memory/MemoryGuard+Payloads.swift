/// What one connection's unfinished payload or message holds toward max_memory.
struct PayloadHold {
    /// Bytes counted while it is read (its share of `MemoryGuard.payloadBytes`).
    var reserved = 0
    /// Of those, the bytes that have arrived (its share of `MemoryGuard.payloadReceived`).
    var received = 0
}

/// Admission by promises: input not yet whole (a BPUB payload, a WebSocket message, a `POST /publish` body)
/// is counted toward max_memory before it is read, and refused when it would pass the bound.
extension MemoryGuard {
    /// Counts `length` bytes of a BPUB payload about to be read (or of a WebSocket message's buffer about to
    /// grow) toward max_memory as promised, or refuses (false) when they would pass it with what is queued,
    /// indexed and promised already: many connections that each send all of a payload but its last byte hold
    /// at most the bound, not max_connections × max_payload, and the allocator is never asked for more.
    /// A promise only decides admission: the bound's drops weigh bytes received (`noteReceived`), so
    /// headers with no bytes behind them cannot get subscribers dropped.
    func reservePayload(_ length: Int, for connection: ClientConnection) -> Bool {
        guard reserveHeld(length) else { return false }
        if length > 0 { payloads[connection.id, default: PayloadHold()].reserved += length }
        return true
    }

    /// Counts `length` bytes promised to input not yet whole (a payload, a message, a request body) toward
    /// max_memory, or refuses (false) when they would pass it.
    func reserveHeld(_ length: Int) -> Bool {
        let bound = host.configuration.limits.maxMemory
        if bound > 0 && indexBytes + payloadBytes + backlogWatch.lastQueued + length > bound {
            host.stats.limitRefusals += 1
            return false
        }
        payloadBytes += length
        return true
    }

    /// `length` bytes counted by `reserveHeld` are let go.
    func releaseHeld(_ length: Int) {
        payloadBytes -= length
    }

    /// Whether `connection` has an unfinished payload or message counted here. O(1), and free while no
    /// connection has one.
    @inline(__always)
    func holdsPayload(of connection: ClientConnection) -> Bool {
        !payloads.isEmpty && payloads[connection.id] != nil
    }

    /// `bytes` of an unfinished payload or message have arrived and are held for `connection` now (what its
    /// framer or decoder has gathered): its holders are dropped with the largest backlogs when the server is
    /// over max_memory. O(1); checks the bound once received bytes have grown by a thirty-second of it.
    func noteReceived(_ bytes: Int, by connection: ClientConnection) {
        let hold = payloads[connection.id] ?? PayloadHold()
        guard bytes != hold.received else { return }
        payloadReceived += bytes - hold.received
        if bytes == 0 && hold.reserved == 0 {
            payloads[connection.id] = nil
        } else {
            payloads[connection.id] = PayloadHold(reserved: hold.reserved, received: bytes)
        }
        let bound = host.configuration.limits.maxMemory
        if bound > 0 && payloadReceived - payloadReceivedAtCheck > bound / 32 { check() }
    }

    /// The payload counted by `reservePayload` and `noteReceived` is published or dropped.
    func releasePayload(of connection: ClientConnection) {
        guard let hold = payloads[connection.id] else { return }
        payloadBytes -= hold.reserved
        payloads[connection.id]?.reserved = 0
        if hold.received > 0 {
            noteReceived(0, by: connection)
        } else {
            payloads[connection.id] = nil
        }
    }

    /// What `reservePayload` promised for `connection` shrinks to `bytes` (a WebSocket message let go of).
    func settlePayload(_ bytes: Int, of connection: ClientConnection) {
        guard let hold = payloads[connection.id], bytes < hold.reserved else { return }
        payloadBytes -= hold.reserved - bytes
        let settled = PayloadHold(reserved: bytes, received: hold.received)
        payloads[connection.id] = bytes == 0 && hold.received == 0 ? nil : settled
    }

    /// `connection` leaves: its unfinished payload's buffer goes with it, and what arrived is counted as freed,
    /// so that the memory goes back to the system.
    func connectionLeft(_ connection: ClientConnection) {
        guard !payloads.isEmpty, let hold = payloads[connection.id] else { return }
        releasePayload(of: connection)
        if hold.received > 0 { noteFreed(hold.received) }
    }
}
