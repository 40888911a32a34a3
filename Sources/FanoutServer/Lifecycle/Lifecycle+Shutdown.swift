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
        host.listening.stopAll()
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
        loop.whenLingeringDone = { [unowned self] in self.stopWhenDone() }
        let graceTimer = LoopTimer(loop: loop) { [unowned self, unowned loop] in
            self.host.logger.warning("shutdown grace passed with \(loop.lingeringCount) clients unflushed")
            loop.dropLingeringSockets()
            loop.stop()
        }
        graceTimer.schedule(after: host.configuration.timeouts.shutdownGrace)
        self.graceTimer = graceTimer
        if loop.lingeringCount == 0 { stopWhenDone() }
    }

    /// Stops the loop once the clients' last output is flushed and presence's leaves are published and, on
    /// several nodes, answered by the engine: its PUBs are capped in flight, so a thousand members' leaves take
    /// a few passes to go. The grace timer stops it regardless.
    private func stopWhenDone() {
        let host = host
        guard host.loop.lingeringCount == 0 else { return }
        guard host.presence.hasQueued || host.engine.hasWorkInFlight else { return host.loop.stop() }
        let timer = quietTimer ?? LoopTimer(loop: host.loop) { [unowned self] in self.stopWhenDone() }
        quietTimer = timer
        timer.schedule(after: .milliseconds(2))
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
