import CLibevent
#if canImport(Glibc)
import Glibc
#endif

// Plain sockets write straight to the kernel once per loop pass, and fall back on the bufferevent's write
// event only for what the kernel did not take; TLS sockets leave every write to the bufferevent.
extension BufferedSocket {
    /// Bytes queued for the peer and not yet written to the kernel.
    public var outputCount: Int { evbuffer_get_length(output) }

    /// Whether queued output waits for the kernel to take it: a direct write left some that the kernel refused,
    /// so the peer reads slower than it is written to. Always false for a TLS socket, whose writes the
    /// bufferevent makes as they come.
    public var waitsForKernel: Bool { writeEventArmed && writesDirectly && !isLingering }

    /// Queues a copy of `bytes`; they are written at the end of the loop pass.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        // What bufferevent_write does, without its call and lock.
        evbuffer_add(output, base, bytes.count)
        queueFlush()
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Queues the bytes of a shared buffer without copying them: every socket given the same buffer points at
    /// the same memory, which libevent frees when the last of them has written it.
    public func write(sharing buffer: SharedBuffer) {
        evbuffer_add_buffer_reference(output, buffer.evbuffer)
        queueFlush()
    }

    func queueFlush() {
        guard writesDirectly, flushSlot == nil, !writeEventArmed else { return }
        if !loop.handshaking.isEmpty && loop.pendingFlush.isEmpty { loop.flushWithinPass() }
        flushSlot = Int32(truncatingIfNeeded: loop.pendingFlush.count)
        loop.pendingFlush.append(CallbackContext(self))
    }

    /// Writes queued output straight to the kernel, until it is all written or the kernel takes no more;
    /// what is left is handed to the bufferevent's write event, which also reports errors and write timeouts.
    func flushQueued() {
        guard writesDirectly, !writeEventArmed else { return }
        // A bufferevent keeps its output's front frozen except while it writes itself; do as it does.
        evbuffer_unfreeze(output, 1)
        while case let length = evbuffer_get_length(output), length > 0 {
            if evbuffer_get_contiguous_space(output) == length, let front = evbuffer_pullup(output, length) {
                // One piece, the usual case for a small backlog: `send` takes the socket's short path in the
                // kernel, where `writev` goes through the file layer and imports an iovec array first.
                let sent = send(fd, front, length, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
                if sent <= 0 { break }
                evbuffer_drain(output, sent)
            } else if evbuffer_write(output, fd) <= 0 {
                break
            }
        }
        evbuffer_freeze(output, 1)
        let left = evbuffer_get_length(output)
        if left > 0 {
            armWriteEvent()
        } else if isLingering {
            return halfClose()
        }
        // As the bufferevent would after a write: tell the owner the output is down to its low-water mark.
        if reportsDirectDrains && left <= writeLowWatermark { delegate?.socketDidDrain(self) }
    }

    func armWriteEvent() {
        guard !writeEventArmed else { return }
        writeEventArmed = true
        bufferevent_enable(bev, Int16(EV_WRITE))
    }

    /// Drops queued output, keeping the bytes up to and including the first newline so that a line already
    /// partly written to the kernel is completed. Returns the number of bytes dropped.
    @discardableResult
    public func discardOutputAfterFirstLine() -> Int {
        let total = evbuffer_get_length(output)
        let found = evbuffer_search_eol(output, nil, nil, EVBUFFER_EOL_LF)
        guard found.pos >= 0 else { return 0 }
        let keep = found.pos + 1
        guard let kept = evbuffer_new() else { return 0 }
        defer { evbuffer_free(kept) }
        // The bufferevent keeps the output's front frozen (see `flushQueued`): removing from it fails otherwise.
        evbuffer_unfreeze(output, 1)
        defer { evbuffer_freeze(output, 1) }
        evbuffer_remove_buffer(output, kept, keep)
        evbuffer_drain(output, evbuffer_get_length(output))
        evbuffer_add_buffer(output, kept)
        return total - keep
    }

    /// After a write, `socketDidDrain` fires once the output is at or below `bytes` (0 means empty).
    public func setWriteLowWatermark(_ bytes: Int) {
        writeLowWatermark = bytes
        bufferevent_setwatermark(bev, Int16(EV_WRITE), bytes, 0)
    }
}
