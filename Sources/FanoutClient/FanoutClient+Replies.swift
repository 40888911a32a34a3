import FanoutProtocol

/// Reply correlation: the server answers commands in order, so each `+`/`-` reply belongs to the oldest
/// command still waiting (`pending`'s head); a reply with none waiting breaks the protocol.
extension FanoutClient {
    func completeHead(_ result: Result<String, ClientError>) {
        guard let head = pending.popFirst() else {
            connectionLost(reason: "reply with no command waiting for it")
            return
        }
        repliesReceived &+= 1
        switch head.kind {
        case .publish(let completion):
            let count = result.flatMap { text in
                Int(text).map { .success($0) } ?? .failure(.protocolViolation("+OK \(text)"))
            }
            completion?(count)
        case .subscription(let patterns, let group, let subscribing, let completion):
            if case .success = result { recordSubscription(patterns, group: group, subscribing: subscribing) }
            completion?(result.flatMap { Int($0).map { .success($0) } ?? .failure(.protocolViolation("+OK \($0)")) })
        case .ping(let completion):
            completion(result.map { _ in ContinuousClock.now - (head.sentAt ?? .now) })
        case .text(let completion):
            completion(result)
        case .resume(let subject, let request, let restoring, let completion):
            resumeAnswered(subject: subject, request: request, restoring: restoring, result, completion)
        case .ask(let question):
            questionOpened(question, result)
        case .answer(let completion):
            completion?(result.flatMap { text in
                text == "1" || text == "0" ? .success(text == "1") : .failure(.protocolViolation("+OK \(text)"))
            })
        case .resubscribe(let patterns, _):
            if case .failure(let error) = result { onEvent?(.resubscribeFailed(patterns: patterns, error: error)) }
            restoreStepDone(restored: (try? result.get()) == nil ? 0 : patterns.count)
        case .authenticate:
            switch result {
            case .success:
                becomeReady()
            case .failure(let error):
                failPending(error)
                let completion = connectCompletion
                connectCompletion = nil
                close()
                completion?(.failure(error))
                onEvent?(.disconnected(reason: "\(error)"))
            }
        }
    }

    /// Records what the server confirmed. A pattern is held once, plainly or in one group: subscribing moves
    /// it (PROTOCOL.md, Groups).
    func recordSubscription(_ patterns: [String], group: String? = nil, subscribing: Bool) {
        if subscribing {
            for pattern in patterns {
                if !subscriptions.contains(pattern) { subscriptions.append(pattern) }
                groups[pattern] = group
            }
            // A group member sees some of a subject's messages: its positions mean nothing for a resume.
            if group != nil { resumeState.forget(keeping: plainSubscriptions) }
            return
        }
        let dropped = patterns.isEmpty ? subscriptions : patterns
        subscriptions.removeAll { dropped.contains($0) }
        for pattern in dropped { groups[pattern] = nil }
        handlers.removeAll { dropped.contains($0.pattern) }
        resumeState.forget(keeping: plainSubscriptions)
    }

    /// The patterns held plainly, in subscription order.
    var plainSubscriptions: [String] {
        groups.isEmpty ? subscriptions : subscriptions.filter { groups[$0] == nil }
    }
}
