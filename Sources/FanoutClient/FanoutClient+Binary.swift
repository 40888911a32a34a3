import FanoutProtocol

/// Any bytes (protocol 1.2): `BPUB <subject> <length>` with the bytes after it, and the `BMSG` pushes whose
/// payload the framer reads after their header line.
extension FanoutClient {
    /// Publishes `payload`, whatever its bytes, with `BPUB`; the completion gets the receivers count.
    /// `publish` calls this for the payloads a line cannot carry.
    public func publishBinary(
        _ subject: String, payload: UnsafeRawBufferPointer, completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkSubject(subject) }) {
            completion?(.failure(refused))
            return
        }
        guard phase == .ready else {
            let copy = Array(payload)
            whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
                copy.withUnsafeBytes { self.publishBinary(subject, payload: $0, completion: completion) }
            }
            return
        }
        socket?.write("BPUB \(subject) \(payload.count)\n")
        socket?.write(payload)
        socket?.write(Self.lineFeed)
        pending.append(PendingReply(kind: .publish(completion)))
    }

    public func publishBinary(
        _ subject: String, _ payload: [UInt8], completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        payload.withUnsafeBytes { publishBinary(subject, payload: $0, completion: completion) }
    }

    /// A `BMSG` header: what the framer should do next. A payload over `maxPayload` loses the connection
    /// rather than buffer it.
    func binaryMessageStarts(subject: String, seq: UInt64, length: Int) -> LineFramer.Next {
        guard length <= options.maxPayload else {
            connectionLost(reason: "server payload of \(length) bytes, over \(options.maxPayload)")
            return .stop
        }
        binaryHeader = (subject, seq)
        return .readPayload(length)
    }

    /// The payload of the `BMSG` whose header came last.
    func binaryMessageArrived(_ payload: UnsafeRawBufferPointer) {
        guard let header = binaryHeader else { return }
        binaryHeader = nil
        deliver(subject: header.subject, seq: header.seq, payload: payload)
    }

    static let lineFeed: [UInt8] = [0x0A]
}
