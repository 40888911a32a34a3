import FanoutEventLoop
import FanoutHTTP

extension HTTPFront {
    /// `POST /publish/<subject>` with the payload as the body: executed as the PUB line it stands for, by a
    /// connection that lives for this request only and whose replies are captured, so that permissions,
    /// limits, numbering and fan-out are exactly the protocol's. Answers `{"receivers":n,"seq":s}`, or the
    /// protocol's error code in JSON with 400, 401, 403, 413 or 503.
    ///
    /// Any bytes up to max_payload (checked before the body is read): a body a line can carry is executed as
    /// `PUB`, any other as `BPUB` with the body as its bytes. Cost: one publish.
    func publishOverHTTP(_ head: HTTPRequestHead, body: [UInt8], exchange: HTTPExchange) {
        guard head.method == "POST" else {
            return exchange.finish(HTTPResponse(status: 405, headers: [("Allow", "POST")], body: Array("use POST\n".utf8)))
        }
        let subject = String(head.path.dropFirst("/publish/".count))
        if host.lifecycle.isShuttingDown {
            return exchange.finish(HTTPRefusal(status: 503, code: "shutting-down", "server is shutting down").response)
        }
        // A subject is one word.
        if subject.isEmpty || subject.contains(" ") || subject.contains("\t") {
            return exchange.finish(HTTPRefusal(status: 400, code: "bad-subject", "the path names one subject: /publish/<subject>").response)
        }
        let grant: SharedPermissions
        let token = Self.bearerToken(head)
        switch host.auth.httpGrant(token: token, peerHost: exchange.peer.host, requestID: exchange.id) {
        case .failure(let refusal): return exchange.finish(refusal.response)
        case .success(let granted): grant = granted.grant
            if let refusal = host.auth.userPublishRefusal(for: granted, to: subject) {
                return exchange.finish(refusal.response)
            }
        }
        guard let socket = exchange.socket else { return }
        let publisher = host.requestConnection(id: exchange.id, peer: exchange.peer, socket: socket)
        publisher.transport = .httpRequest
        publisher.grant = grant
        var line = Array("PUB \(subject) ".utf8)
        line.append(contentsOf: body)
        // Where the reply comes at once, the seq is the run's; through Redis (several nodes) it comes later,
        // and the server does not learn the seq.
        var seq: UInt64?
        let request = HTTPRequestTransport { [unowned self, unowned publisher] reply in
            publisher.socket = nil
            self.publishers[publisher.id] = nil
            self.answerPublish(reply, seq: seq, exchange: exchange)
        }
        publisher.madeExtras.adapter = request
        if line.count <= host.configuration.limits.maxLine && !body.contains(0x0A) && body.last != 0x0D {
            _ = line.withUnsafeBytes { host.execute($0, from: publisher) }
        } else {
            // Any other body goes as BPUB: the header, then the bytes, on the same path as a client's.
            let header = Array("BPUB \(subject) \(body.count)".utf8)
            if case .readPayload = header.withUnsafeBytes({ host.execute($0, from: publisher) }) {
                body.withUnsafeBytes { host.publishBinary($0, from: publisher) }
            }
        }
        seq = host.isStandalone ? host.fanout.run.seq : nil
        host.readEnded()
        if !request.isAnswered { publishers[publisher.id] = publisher }
    }

    private func answerPublish(_ reply: String, seq: UInt64?, exchange: HTTPExchange) {
        if reply.hasPrefix("+OK "), let receivers = Int(reply.dropFirst(4)) {
            let seqField = seq.map { ",\"seq\":\($0)" } ?? ""
            return exchange.finish(.json(status: 200, "{\"receivers\":\(receivers)\(seqField)}"))
        }
        let words = reply.split(separator: " ", maxSplits: 2)
        let code = words.count > 1 ? String(words[1]) : "error"
        let message = words.count > 2 ? String(words[2]) : reply
        exchange.finish(HTTPRefusal(status: HTTPRefusal.status(for: code), code: code, message).response)
    }
}
