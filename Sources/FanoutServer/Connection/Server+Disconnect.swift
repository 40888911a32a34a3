extension Server {
    /// Lets go of a connection: it leaves the table (and with that every subscriber set) at once; its socket
    /// flushes a last line when the reason has one, then closes.
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason) {
        if durable.defersDisconnect(of: connection, reason: reason) { return }
        guard connection.stopReading(.closed) else { return }
        if connection.transport.isMQTT { mqttStats.connections -= 1 }
        if case .slowConsumer = reason {
            stats.slowConsumers += 1
            memory.noteFreed(connection.pendingBytes)
        }
        logger.log(level: reason.logLevel, "disconnect",
                   metadata: ["client": "\(connection.id)", "peer": "\(connection.peer)", "reason": "\(reason)"])
        // Replies to its PUBs so far go out ahead of the farewell, as when each was written at once.
        if connection === fanout.run.publisher { fanout.flushReplies() }
        if let socket = connection.socket {
            if let adapter = connection.extras?.adapter {
                if adapter.farewell(reason, to: connection) {
                    socket.closeGracefully(within: configuration.timeouts.shutdownGrace)
                }
            } else if reason.flushesOutput {
                if case .slowConsumer = reason { socket.discardOutputAfterFirstLine() }
                if let farewell = reason.farewell { socket.write(farewell.line) }
                socket.closeGracefully(within: configuration.timeouts.shutdownGrace)
            }
            connection.socket = nil
        }
        replays.connectionLeft(connection)
        if connection.holdsPublishers { fanout.releasePublishers(heldBy: connection) }
        memory.connectionLeft(connection)
        questions.connectionLeft(connection)
        // Its subscriptions leave the counts; the index's weak sets no longer yield it, and the sweep reclaims
        // their dead entries' memory, amortised over enough departures to cost O(1) each.
        subscriptions.connectionLeft(connection, reason: reason)
        auth.connectionLeft(connection)
        connection.extras?.adapter?.connectionClosed(connection, reason: reason)
        if fanout.run.isOpen || questions.isCheckingReceivers { fanout.retired.append(connection) }
        connections[connection.id] = nil
        if let count = connections.perHost[connection.peerHost] {
            connections.perHost[connection.peerHost] = count > 1 ? count - 1 : nil
        }
    }
}
