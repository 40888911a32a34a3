import FanoutEventLoop

extension Server {
    /// Queues the run's lines to its receivers over adapted transports, each through its adapter. The run's
    /// framing is shared, so that WebSocket receivers take the lines framed once (and the same bytes shared
    /// when large), as TCP receivers share the unframed lines; event streams build their own events.
    func flushAdapted() {
        let marks = BacklogMarks(configuration.limits)
        let receivers = fanout.run.adaptedReceivers
        fanout.framing.reset(receivers: receivers.count, subject: fanout.run.subjectString)
        let now = metrics != nil ? ContinuousClock.now : nil
        for receiver in receivers where receiver.isConnected {
            let connection = receiver.connection.takeUnretainedValue()
            guard let adapter = connection.extras?.adapter else { continue }
            if let now {
                if connection.extras?.pendingSince == nil { connection.madeExtras.pendingSince = now }
                receiver.socket.reportsDirectDrains = true
            }
            let before = receiver.socket.outputCount
            fanout.run.bytes.withUnsafeBytes {
                adapter.writeRun($0, to: connection, socket: receiver.socket, framing: &fanout.framing)
            }
            stats.bytesOut += UInt64(receiver.socket.outputCount - before)
            checkBacklog(of: receiver, marks: marks)
        }
    }
}
