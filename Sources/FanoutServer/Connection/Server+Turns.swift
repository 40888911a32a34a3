import FanoutEventLoop

/// Fair turns: a connection's commands run for at most `turn` per loop pass; the rest wait, unread in its
/// input buffer, while every other ready connection is served.
extension Server {
    /// Work one connection's commands may do before the others get theirs.
    static let turn = Duration.microseconds(500)

    /// Stops reading `connection` (its input stays bounded) and goes on with its commands on the next pass.
    func continueLater(_ connection: ClientConnection) {
        connection.socket?.disableReading()
        waitingTurns.append(connection.id)
        if turnTimer == nil {
            turnTimer = LoopTimer(loop: loop) { [unowned self] in self.continueTurns() }
        }
        if turnTimer?.isScheduled == false { turnTimer?.schedule(after: .zero) }
    }

    private func continueTurns() {
        let waiting = waitingTurns
        waitingTurns.removeAll(keepingCapacity: true)
        for id in waiting {
            guard let connection = connections[id], connection.isReading, let socket = connection.socket else { continue }
            socket.enableReading()
            connection.readCommands()
        }
    }
}
