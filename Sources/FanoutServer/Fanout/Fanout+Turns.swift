/// Fair turns: a connection's commands run for at most `Server.turn` per loop pass; the rest wait, unread in
/// its input buffer, while every other ready connection is served. The fan-out keeps the connections waiting
/// for their next turn, as it keeps the publishers backpressure released: both are read again on the next pass,
/// never from inside a fan-out.
extension Fanout {
    /// Stops reading `connection` (its input stays bounded) and goes on with its commands on the next pass.
    func continueLater(_ connection: ClientConnection) {
        guard connection.stopReading(.turnOver) else { return }
        waitingTurns.append(connection.id)
        turnTimer.schedule(on: host.loop) { [unowned self] in self.continueTurns() }
    }

    private func continueTurns() {
        let waiting = waitingTurns
        waitingTurns.removeAll(keepingCapacity: true)
        for id in waiting {
            host.connections[id]?.resumeReading(.turnOver)
        }
    }
}
