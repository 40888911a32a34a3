import FanoutEventLoop
import FanoutHTTP

extension Server {
    /// Queues the run's lines to its receivers over adapted transports. WebSocket receivers take the lines
    /// framed once (one text frame per `MSG` line) and the same bytes shared, as TCP receivers share the
    /// unframed lines. Event-stream receivers each get their own events: an event's id carries that
    /// stream's positions, so it differs per stream (cost: one pass over the run's lines per stream).
    func flushAdapted() {
        let marks = BacklogMarks(configuration.limits)
        let receivers = fanout.run.adaptedReceivers
        var shared: SharedBuffer?
        var framed = false
        let now = metrics != nil ? ContinuousClock.now : nil
        for receiver in receivers where receiver.isConnected {
            let connection = receiver.connection.takeUnretainedValue()
            if let now {
                if connection.pendingSince == nil { connection.pendingSince = now }
                receiver.socket.reportsDirectDrains = true
            }
            let before = receiver.socket.outputCount
            if connection.transport == .webSocket {
                if !framed {
                    framed = true
                    fanout.webSocketFrames.removeAll(keepingCapacity: true)
                    fanout.run.bytes.withUnsafeBytes { WebSocketEncoder.appendTextFrames(lines: $0, to: &fanout.webSocketFrames) }
                    if receivers.count > 1 && fanout.webSocketFrames.count >= 4096 {
                        shared = SharedBuffer()
                        fanout.webSocketFrames.withUnsafeBytes { shared!.append($0) }
                    }
                }
                if let shared {
                    receiver.socket.write(sharing: shared)
                } else {
                    fanout.webSocketFrames.withUnsafeBytes { receiver.socket.write($0) }
                }
            } else {
                fanout.run.bytes.withUnsafeBytes { connection.writeEvents($0) }
            }
            stats.bytesOut += UInt64(receiver.socket.outputCount - before)
            checkBacklog(of: receiver, marks: marks)
        }
    }
}
