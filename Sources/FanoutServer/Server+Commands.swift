import FanoutEventLoop
import FanoutProtocol

extension Server {
    /// Executes every complete line in the connection's input, until it is consumed, the connection stops
    /// reading (paused or closed), or its unsent output reaches the pause mark. Then flushes the publish run.
    func readCommands(from connection: ClientConnection) {
        guard connection.isReading, let socket = connection.socket else { return }
        let pauseBytes = configuration.readPauseBytes
        // Take all the pipelined input at once (up to a cap), so that one callback forms long publish runs.
        socket.readAvailable()
        socket.readInput { chunk in
            stats.bytesIn += UInt64(chunk.count)
            return connection.framer.feed(chunk) { event in
                switch event {
                case .line(let line):
                    execute(line, from: connection)
                case .tooLong:
                    closeRun()
                    connection.send(ProtocolError(.tooLong, "line exceeds max_line=\(configuration.maxLine) bytes").line)
                }
                guard connection.isReading else { return false }
                if socket.outputCount >= pauseBytes {
                    connection.pauseReading(pauseBytes: pauseBytes)
                    return false
                }
                return true
            }
        }
        finishRuns()
    }

    private func execute(_ line: UnsafeRawBufferPointer, from connection: ClientConnection) {
        let command: Command
        do {
            guard let parsed = try CommandParser.parse(line) else { return }
            command = parsed
        } catch {
            closeRun()
            connection.send(error.line)
            return
        }
        if let refusal = refusal(of: command, by: connection) {
            closeRun()
            connection.send(refusal.line)
            return
        }
        if case .pub(let subject, let payload) = command {
            let receivers = publish(subject: subject, payload: payload, from: connection)
            replyOK(count: receivers, to: connection)
            return
        }
        // Anything but another PUB ends the run, so that replies, subscriptions and listings see its effect.
        closeRun()
        switch command {
        case .sub(let patterns):
            subscribe(connection, to: patterns)
        case .unsub(let patterns):
            unsubscribe(connection, from: patterns)
        case .ping(let text):
            connection.send(text.isEmpty ? "+PONG\n" : "+PONG \(String(decoding: text, as: UTF8.self))\n")
        case .quit:
            connection.send(Encoder.ok("bye"))
            disconnect(connection, reason: .quit)
        case .help:
            connection.send(Encoder.ok(Command.verbs.joined(separator: " ")))
        case .info:
            connection.send(Encoder.ok(infoFields()))
        case .channels(let filter):
            connection.send(Encoder.ok(channelsListing(filter: filter)))
        case .clients:
            connection.send(Encoder.ok(clientsListing()))
        case .auth(let token):
            authenticate(connection, token: token)
        case .pub:
            break
        }
    }

    private func subscribe(_ connection: ClientConnection, to patterns: [String]) {
        var fresh: [String] = []
        for pattern in patterns where !connection.subscriptions.contains(pattern) && !fresh.contains(pattern) {
            fresh.append(pattern)
        }
        let limit = configuration.maxSubscriptions
        guard connection.subscriptions.count + fresh.count <= limit else {
            stats.limitRefusals += 1
            let error = ProtocolError(
                .limit, "max_subscriptions=\(limit) reached (holding \(connection.subscriptions.count))")
            connection.send(error.line)
            return
        }
        for pattern in fresh {
            connection.subscriptions.insert(pattern)
            index.subscribe(connection, to: pattern)
        }
        subscriptionCount += fresh.count
        connection.send(Encoder.ok(String(connection.subscriptions.count)))
    }

    private func unsubscribe(_ connection: ClientConnection, from patterns: [String]) {
        let dropping = patterns.isEmpty ? Array(connection.subscriptions) : patterns
        var dropped = 0
        for pattern in dropping where connection.subscriptions.remove(pattern) != nil {
            index.unsubscribe(connection, from: pattern)
            dropped += 1
        }
        subscriptionCount -= dropped
        staleSubscriptions += dropped
        connection.send(Encoder.ok(String(connection.subscriptions.count)))
    }

    /// `+OK <n>` built in a reused buffer: PUB's reply is on the hot path.
    private func replyOK(count: Int, to connection: ClientConnection) {
        replyScratch.removeAll(keepingCapacity: true)
        replyScratch.append(contentsOf: [UInt8(ascii: "+"), UInt8(ascii: "O"), UInt8(ascii: "K"), UInt8(ascii: " ")])
        Encoder.appendDecimal(UInt64(count), to: &replyScratch)
        replyScratch.append(UInt8(ascii: "\n"))
        connection.send(replyScratch)
    }
}
