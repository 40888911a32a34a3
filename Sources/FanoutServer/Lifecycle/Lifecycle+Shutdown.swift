import FanoutEventLoop

/// Stopping: on SIGTERM or SIGINT, and a second signal to stop without waiting.
extension Lifecycle {
    /// Stops accepting, tells every client `-ERR shutting-down`, and stops the loop once their output is
    /// flushed or `shutdown_grace` has passed.
    func shutdown() {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        let host = host
        let loop = host.loop
        host.logger.notice(
            "shutting down: \(host.connections.count) clients, grace \(host.configuration.timeouts.shutdownGrace)")
        notifier?.stopping()
        host.listening.plain.removeAll()
        host.listening.tls.removeAll()
        host.listening.inherited.removeAll()
        host.http.shutdown()
        statusTimer = nil
        host.subscriptions.stopSweep()
        host.listening.acceptRetryTimer = nil
        host.readEnded()
        // The clean stop syncs every record before the process exits: what was held for it may go now.
        host.durable.release(all: true)
        for connection in host.connections.values.sorted(by: { $0.id < $1.id }) {
            host.disconnect(connection, reason: .shutdown)
        }
        loop.whenLingeringDone = { [unowned loop] in loop.stop() }
        let graceTimer = LoopTimer(loop: loop) { [unowned self, unowned loop] in
            self.host.logger.warning("shutdown grace passed with \(loop.lingeringCount) clients unflushed")
            loop.dropLingeringSockets()
            loop.stop()
        }
        graceTimer.schedule(after: host.configuration.timeouts.shutdownGrace)
        self.graceTimer = graceTimer
        if loop.lingeringCount == 0 { loop.stop() }
    }

    func signalReceived(_ number: Int32) {
        if isShuttingDown {
            host.logger.warning("second signal \(number): stopping without waiting for the grace period")
            host.loop.dropLingeringSockets()
            host.loop.stop()
            return
        }
        host.logger.notice("signal \(number) received")
        shutdown()
    }
}
