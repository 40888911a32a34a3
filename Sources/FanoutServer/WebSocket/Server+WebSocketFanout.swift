import FanoutEventLoop
import FanoutHTTP

extension Server {
    /// Queues the run's lines to its WebSocket receivers: framed once (one text frame per `MSG` line) and
    /// the same bytes shared by every receiver, as TCP receivers share the unframed lines.
    func flushRunFrames() {
        publishRun.bytes.withUnsafeBytes { lines in
            webSocketFrames.removeAll(keepingCapacity: true)
            WebSocketEncoder.appendTextFrames(lines: lines, to: &webSocketFrames)
        }
        let limit = configuration.limits.maxPendingBytes
        let holdAbove = configuration.limits.backpressureBytes > 0 ? configuration.limits.backpressureBytes : Int.max
        let watchAbove = min(holdAbove, limit, BacklogWatch.mark)
        let receivers = publishRun.webSocketReceivers
        stats.bytesOut += UInt64(webSocketFrames.count * receivers.count)
        if metrics != nil {
            let now = ContinuousClock.now
            for receiver in receivers where receiver.isConnected {
                receiver.connection._withUnsafeGuaranteedRef { if $0.pendingSince == nil { $0.pendingSince = now } }
                receiver.socket.reportsDirectDrains = true
            }
        }
        if receivers.count > 1 && webSocketFrames.count >= 4096 {
            let shared = SharedBuffer()
            webSocketFrames.withUnsafeBytes { shared.append($0) }
            for receiver in receivers where receiver.isConnected {
                receiver.socket.write(sharing: shared)
                checkBacklog(of: receiver, watchAbove: watchAbove, holdAbove: holdAbove, limit: limit)
            }
        } else {
            webSocketFrames.withUnsafeBytes { frames in
                for receiver in receivers where receiver.isConnected {
                    receiver.socket.write(frames)
                    checkBacklog(of: receiver, watchAbove: watchAbove, holdAbove: holdAbove, limit: limit)
                }
            }
        }
    }
}
