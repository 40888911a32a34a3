import FanoutEventLoop

/// Fair turns: a connection's commands run for at most `turn` per loop pass; the rest wait, unread in its
/// input buffer, while every other ready connection is served.
extension Server {
    /// Work one connection's commands may do before the others get theirs. Not shorter: a publish run's first
    /// PUB gathers its receivers (about 250 µs for 5,000 subscribers), and at 500 µs a turn often ended inside a
    /// publisher's window, splitting one run into two and doubling the sends to every subscriber (scenario D:
    /// 2.0 million `sendto` calls for 20,000 messages where there had been 1.0 million, 1.7x the CPU per delivery).
    static let turn = Duration.milliseconds(2)

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
