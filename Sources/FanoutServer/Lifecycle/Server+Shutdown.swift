import FanoutEventLoop

extension Server {
    /// Stops accepting, tells every client `-ERR shutting-down`, and stops the loop once their output is
    /// flushed or `shutdown_grace` has passed.
    public func shutdown() {
        guard !lifecycle.isShuttingDown else { return }
        lifecycle.isShuttingDown = true
        logger.notice("shutting down: \(connections.count) clients, grace \(configuration.timeouts.shutdownGrace)")
        notifier?.stopping()
        listening.plain.removeAll()
        listening.tls.removeAll()
        listening.inherited.removeAll()
        http.shutdown()
        lifecycle.statusTimer = nil
        work.sweepTimer = nil
        listening.acceptRetryTimer = nil
        readEnded()
        // The clean stop syncs every record before the process exits: what was held for it may go now.
        releaseDurableOutput(all: true)
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            disconnect(connection, reason: .shutdown)
        }
        loop.whenLingeringDone = { [unowned self] in self.loop.stop() }
        let graceTimer = LoopTimer(loop: loop) { [unowned self] in
            self.logger.warning("shutdown grace passed with \(self.loop.lingeringCount) clients unflushed")
            self.loop.dropLingeringSockets()
            self.loop.stop()
        }
        graceTimer.schedule(after: configuration.timeouts.shutdownGrace)
        lifecycle.graceTimer = graceTimer
        if loop.lingeringCount == 0 { loop.stop() }
    }

    func signalReceived(_ number: Int32) {
        if lifecycle.isShuttingDown {
            logger.warning("second signal \(number): stopping without waiting for the grace period")
            loop.dropLingeringSockets()
            loop.stop()
            return
        }
        logger.notice("signal \(number) received")
        shutdown()
    }
}
