import CLibevent
#if canImport(Glibc)
import Glibc
#endif

extension BufferedSocket {
    /// Stops delivering to the delegate, flushes queued output, half-closes, and frees the socket once the
    /// peer closes or `deadline` passes. The loop owns the socket meanwhile; the caller may drop it.
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

    func halfClose() {
        guard !halfClosed else { return }
        halfClosed = true
        if isTLS, let ssl = bufferevent_openssl_get_ssl(bev) {
            // close_notify, best effort: the output is drained, so nothing queued is overtaken.
            SSL_shutdown(ssl)
        }
        if peerClosed || isTLS {
            finishLingering()
        } else {
            shutdown(fd, Int32(SHUT_WR))
        }
    }

    func finishLingering() {
        // Dropping the loop's reference frees the socket; keep it alive until this method is done with it.
        // libevent itself defers freeing a bufferevent whose callback is running.
        withExtendedLifetime(self) {
            lingerTimer?.cancel()
            let loop = self.loop
            loop.lingering[ObjectIdentifier(self)] = nil
            if loop.lingering.isEmpty { loop.whenLingeringDone?() }
        }
    }
}
