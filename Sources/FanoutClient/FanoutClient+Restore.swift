import FanoutProtocol

/// Subscriptions restored after a reconnect, and the RESUME replies that say what came back: the plan is
/// `ResumeState`'s; its replies are counted so that one `.resubscribed` event reports the whole restore.
extension FanoutClient {
    /// Sends what `ResumeState` plans after a reconnect for the plain patterns, then one `QSUB` per group.
    /// Nothing but AUTH (answered by now) was written on this connection, and what was issued meanwhile is
    /// held until after this, so these replies come first.
    func restoreSubscriptions() {
        let plan = resumeState.restorePlan(subscriptions: plainSubscriptions)
        let grouped = groupedSubscriptions
        restoring = (plan.resumes.count + (plan.patterns.isEmpty ? 0 : 1) + grouped.count, 0)
        var lines = ""
        for resume in plan.resumes {
            lines += resume.request.line(subject: resume.subject) + "\n"
            pending.append(PendingReply(kind: .resume(subject: resume.subject, request: resume.request,
                                                      restoring: true, nil)))
        }
        if !plan.patterns.isEmpty {
            lines += "SUB " + plan.patterns.joined(separator: " ") + "\n"
            pending.append(PendingReply(kind: .resubscribe(patterns: plan.patterns, group: nil)))
        }
        for (group, patterns) in grouped {
            lines += "QSUB \(group) " + patterns.joined(separator: " ") + "\n"
            pending.append(PendingReply(kind: .resubscribe(patterns: patterns, group: group)))
        }
        if !lines.isEmpty { socket?.write(lines) }
    }

    /// One restoring reply is in; `restored` patterns came back with it.
    func restoreStepDone(restored: Int) {
        restoring.remaining -= 1
        restoring.restored += restored
        if restoring.remaining == 0 { onEvent?(.resubscribed(count: restoring.restored)) }
    }

    func resumeAnswered(
        subject: String, request: ResumeState.Request, restoring: Bool, _ result: Result<String, ClientError>,
        _ completion: ((Result<Int, ClientError>) -> Void)?
    ) {
        let reply: ResumeReply
        switch result {
        case .success(let text):
            guard let parsed = ResumeReply(text) else {
                let error = ClientError.protocolViolation("+OK \(text)")
                completion?(.failure(error))
                connectionLost(reason: error.description)
                return
            }
            reply = parsed
        case .failure(let error):
            if restoring {
                onEvent?(.resubscribeFailed(patterns: [subject], error: error))
                restoreStepDone(restored: 0)
            }
            completion?(.failure(error))
            return
        }
        if !restoring { recordSubscription([subject], subscribing: true) }
        if let report = resumeState.answered(subject: subject, request: request, reply: reply) {
            onEvent?(.resumed(subject: report.subject, recovered: report.recovered, missed: report.missed))
        }
        if restoring { restoreStepDone(restored: subscriptions.contains(subject) ? 1 : 0) }
        completion?(.success(reply.subscriptions))
    }
}
