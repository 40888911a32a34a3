import FanoutProtocol

/// `BPUB <subject> <length>` and its bytes (1.2): the header is checked as it arrives, so that a refused one
/// has its bytes dropped as they stream in, never buffered; an accepted one is published, on the one publish
/// path, once its bytes are in.
extension Server {
    /// Checks a BPUB header: the framer reads the announced bytes next (`.readPayload`), or drops them
    /// (`.skipPayload`) after the refusal is sent.
    func acceptBinary(subject: UnsafeRawBufferPointer, length: UInt64,
                      from connection: ClientConnection) -> LineFramer.Next {
        let skip = LineFramer.Next.skipPayload(Int(clamping: length))
        let maxPayload = configuration.limits.maxPayload
        var refusal: ProtocolError?
        do throws(ProtocolError) {
            try Subject.validateConcrete(subject)
        } catch {
            refusal = error
        }
        if refusal == nil, PresenceText.isEventSubject(subject) { refusal = ProtocolError.presencePublish }
        if refusal == nil, length > UInt64(maxPayload) {
            refusal = ProtocolError(.tooLong, "payload of \(length) bytes exceeds max_payload=\(maxPayload)")
        }
        if refusal == nil, configuration.auth.requiresAuth {
            refusal = auth.refusal(of: .bpub(subject: subject, length: length), by: connection)
        }
        if refusal == nil, configuration.userLimits.publishRate != nil { refusal = userPublishRefusal(of: connection) }
        if refusal == nil, connection.transport.writesLines, !memory.reservePayload(Int(length), for: connection) {
            refusal = ProtocolError(.limit, "the server is at max_memory=\(configuration.limits.maxMemory): "
                + "a payload of \(length) bytes cannot be held now")
        }
        if let refusal {
            fanout.close()
            replies.reply(refusal.line, to: connection)
            return skip
        }
        connection.madeExtras.binarySubject = Array(subject)
        return .readPayload(Int(length))
    }

    /// The bytes of an accepted BPUB are in: published as a PUB is, pushed as `MSG` or `BMSG` by content.
    func publishBinary(_ payload: UnsafeRawBufferPointer, from connection: ClientConnection) {
        guard let subject = connection.extras?.binarySubject else { return }
        connection.extras?.binarySubject = nil
        // A WebSocket message's buffer is counted by its transport, which gives it back once it is let go.
        if connection.transport.writesLines { memory.releasePayload(of: connection) }
        stats.binaryPublished += 1
        subject.withUnsafeBytes { subject in
            publish(subject: subject, payload: payload, anyBytes: true, from: connection, engine: engine)
        }
    }

    /// A BPUB's bytes were not followed by a line end: the stream cannot be read any further.
    func binaryFramingLost(_ connection: ClientConnection) {
        connection.extras?.binarySubject = nil
        if connection.transport.writesLines { memory.releasePayload(of: connection) }
        fanout.close()
        disconnect(connection, reason: .framingLost)
    }
}
