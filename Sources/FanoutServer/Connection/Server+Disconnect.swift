extension Server {
    /// Lets go of a connection: it leaves the table (and with that every subscriber set) at once; its socket
    /// flushes a last line when the reason has one, then closes.
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason) {
        if deferDisconnectUntilDurable(connection, reason: reason) { return }
        guard connection.stopReading(.closed) else { return }
        if case .slowConsumer = reason {
            stats.slowConsumers += 1
            noteFreed(connection.pendingBytes)
        }
        logger.log(level: reason.logLevel, "disconnect",
                   metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)", "reason": "\(reason)"])
        // Replies to its PUBs so far go out ahead of the farewell, as when each was written at once.
        if connection === fanout.run.publisher { fanout.flushReplies() }
        if let socket = connection.socket {
            if let adapter = connection.extras?.adapter {
                if adapter.farewell(reason, to: connection) { socket.closeGracefully(within: configuration.timeouts.shutdownGrace) }
            } else if reason.flushesOutput {
                if case .slowConsumer = reason { socket.discardOutputAfterFirstLine() }
                if let farewell = reason.farewell { socket.write(farewell.line) }
                socket.closeGracefully(within: configuration.timeouts.shutdownGrace)
            }
            connection.socket = nil
        }
        // A replay waiting for this client to read is in no queue that would notice: it ends here (a queued
        // one ends at its next slice), letting go of the connection it holds.
        if let job = connection.extras?.replayJob, job.awaitingDrain {
            job.awaitingDrain = false
            work.replaysAwaitingDrain -= 1
            job.end()
        }
        if connection.holdsPublishers { fanout.releasePublishers(heldBy: connection) }
        if let extras = connection.extras, extras.binaryReserved > 0 || extras.binaryReceived > 0 {
            // Its unfinished payload's buffer goes with it: what arrived is counted, so that the memory goes
            // back to the system.
            let received = extras.binaryReceived
            releasePayload(of: connection)
            if received > 0 { noteFreed(received) }
        }
        if let extras = connection.extras,
           !extras.asks.isEmpty || !extras.questionsPut.isEmpty || !extras.remoteQuestionsPut.isEmpty {
            questionsLeft(by: connection)
        }
        forgetSubscriptions(of: connection)
        auth.connectionLeft(connection)
        if fanout.run.isOpen || questions.isCheckingReceivers { fanout.retired.append(connection) }
        connections[connection.id] = nil
        if let count = connections.perHost[connection.peerHost] {
            connections.perHost[connection.peerHost] = count > 1 ? count - 1 : nil
        }
        // No per-subject cleanup: the weak sets no longer yield this connection. Sweeping only reclaims the
        // dead entries' memory, amortised over enough departures to cost O(1) each.
        scheduleSweep()
    }
}
