import FanoutProtocol

/// Group membership (protocol 1.2, `QSUB`): the members of a group share a subject's messages, each message
/// going to one of them. A pattern is held plainly or in one group; a reconnect restores each as it was held.
extension FanoutClient {
    /// Subscribes to `patterns` as a member of `group` (1 to 64 bytes of `[A-Za-z0-9_.-]`); `handler`, if
    /// given, gets every message matching one of them. Subscribing a pattern held plainly (or in another
    /// group) moves it into `group`; a plain `subscribe` moves it back. The completion gets the server's
    /// subscription count.
    ///
    /// A member sees an increasing subsequence of a subject's seqs, so its messages are neither checked for
    /// gaps nor resumed after a reconnect, unless a plain pattern also covers their subject.
    public func subscribe(
        _ patterns: [String], group: String, handler: ((Message) -> Void)? = nil,
        completion: ((Result<Int, ClientError>) -> Void)? = nil
    ) {
        let refused = ClientError.refusal { () throws(ClientError) in
            try CommandWords.checkGroup(group)
            try Self.checkSubscribing(patterns)
        }
        if let refused {
            completion?(.failure(refused))
            return
        }
        if let handler { for pattern in patterns { handlers.append((pattern, handler)) } }
        whenReady(failing: { completion?(.failure($0)) }) { [unowned self] in
            self.send("QSUB \(group) " + patterns.joined(separator: " "),
                      .subscription(patterns: patterns, group: group, subscribing: true, completion))
        }
    }

    /// The patterns held in each group, groups in the order their first pattern was subscribed.
    var groupedSubscriptions: [(group: String, patterns: [String])] {
        var order: [String] = []
        var byGroup: [String: [String]] = [:]
        for pattern in subscriptions {
            guard let group = groups[pattern] else { continue }
            if byGroup[group] == nil { order.append(group) }
            byGroup[group, default: []].append(pattern)
        }
        return order.map { ($0, byGroup[$0] ?? []) }
    }

    /// Whether a plain pattern covers `subject`: its messages are then all delivered here, in seq order.
    func coveredPlainly(_ subject: String) -> Bool {
        subscriptions.contains { pattern in
            groups[pattern] == nil && (pattern == subject || Subject.matches(pattern: pattern, subject: subject))
        }
    }
}
