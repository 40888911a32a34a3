import CLibevent
#if canImport(Glibc)
import Glibc
#endif

// Why a close lingers: closing a TCP socket that still has unread input sends a reset instead of a FIN, and
// with the reset the kernel throws away whatever output the peer has not acknowledged yet, the last line
// included. So a graceful close flushes, half-closes (the peer reads the last line, then end of file), keeps
// reading and discarding, and frees the fd as soon as that line is safe: acknowledged by the peer's kernel,
// or the peer has closed too. The deadline is only the upper bound, for peers that don't read.
extension BufferedSocket {
    /// Stops delivering to the delegate, flushes queued output, half-closes, and frees the socket as soon as
    /// the peer's kernel has acknowledged every byte or the peer closes; `deadline` only bounds a peer that
    /// does not read. The loop owns the socket meanwhile; the caller may drop it.
    public func closeGracefully(within deadline: Duration) {
        guard !isLingering else { return }
        isLingering = true
        delegate = nil
        loop.lingering[ObjectIdentifier(self)] = self
        lingerTimer = LoopTimer(loop: loop) { [unowned self] in self.finishLingering() }
        lingerTimer?.schedule(after: deadline)
        setWriteLowWatermark(0)
        setTimeouts(read: nil, write: nil)
        // Keep reading (and discarding) so that unread input does not turn our close into a reset that
        // destroys the last line before the peer reads it.
        if !peerClosed { enableReading() }
        if outputCount == 0 {
            halfClose()
        } else if writesDirectly && flushSlot == nil {
            // Not waiting for this pass's flush: hand the rest to the write event, which drains it.
            armWriteEvent()
        }
    }

    /// Ends the output once it is all written: frees the socket at once when its last line is already safe,
    /// or leaves it to the loop's acknowledgement poll, the peer's end of file, or the deadline.
    func halfClose() {
        guard !halfClosed else { return }
        halfClosed = true
        if isTLS {
            // close_notify, best effort: the output is drained, so nothing queued is overtaken. Then close at
            // once rather than half-close, which would cut short a close_notify the kernel did not take yet.
            if let openSSL = try? OpenSSL.functions(), let ssl = openSSL.bufferevent_openssl_get_ssl!(bev) {
                _ = openSSL.SSL_shutdown!(ssl)
            }
            return finishLingering()
        }
        // Once the peer has closed, nothing it sends can turn our close into a reset: the kernel delivers the
        // rest of the output on its own. A unix socket's output is already in the peer's receive queue.
        if peerClosed || isUnixDomain { return finishLingering() }
        // Not connected any more (reset by the peer): there is nothing left to protect.
        guard shutdown(fd, Int32(SHUT_WR)) == 0 else { return finishLingering() }
        switch lastBytesAcknowledged() {
        case true?: finishLingering()
        case false?: loop.awaitAcknowledgement(of: self)
        // The kernel cannot say: the peer's end of file or the deadline ends the linger.
        case nil: break
        }
    }

    /// After the half-close: whether the peer's kernel has acknowledged every byte written to this socket, or
    /// nil when the kernel cannot say.
    func lastBytesAcknowledged() -> Bool? {
        var unacknowledged: Int32 = 0
        guard ioctl(fd, UInt(SIOCOUTQ), &unacknowledged) == 0 else { return nil }
        // SIOCOUTQ counts the sequence space written and not yet acknowledged, and the FIN queued by the
        // half-close takes one. Acknowledgements are cumulative, so at most 1 means every byte of data is
        // acknowledged. Waiting for the FIN's own acknowledgement would add the peer's delayed ACK (40 ms or
        // more) to most closes; the kernel retransmits a lost FIN without our fd.
        return unacknowledged <= 1
    }

    /// A unix-domain socket has nothing in flight: a write lands in the peer's receive queue at once, and
    /// closing our end leaves that queue readable, end of file after it. (SIOCOUTQ there counts the memory of
    /// what the peer has not read yet, so waiting for 0 would hold the fd as long as the peer does not read.)
    private var isUnixDomain: Bool {
        var domain: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 && domain == AF_UNIX
    }

    func finishLingering() {
        // Dropping the loop's reference frees the socket; keep it alive until this method is done with it.
        // libevent itself defers freeing a bufferevent whose callback is running.
        withExtendedLifetime(self) {
            lingerTimer?.cancel()
            loop.endLingering(self)
        }
    }
}
