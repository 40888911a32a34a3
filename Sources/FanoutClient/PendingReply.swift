/// A command sent and waiting for its reply line. Replies come in command order, so these form a queue.
struct PendingReply {
    enum Kind {
        /// PUB: the receivers count, to the completion if one was given.
        case publish(((Result<Int, ClientError>) -> Void)?)
        /// SUB/UNSUB/QSUB: the subscription count; `patterns` are recorded on success, in `group` for QSUB.
        case subscription(patterns: [String], group: String?, subscribing: Bool, ((Result<Int, ClientError>) -> Void)?)
        /// PING: the round-trip time.
        case ping(((Result<Duration, ClientError>) -> Void))
        /// Any other command: the text after the reply's first word.
        case text(((Result<String, ClientError>) -> Void))
        /// RESUME or LAST of one concrete subject: the subscription count. `restoring` when sent by a
        /// reconnect (nobody waits for it then), else the subject is recorded as a subscription on success.
        case resume(subject: String, request: ResumeState.Request, restoring: Bool, ((Result<Int, ClientError>) -> Void)?)
        /// The SUB that restores patterns after a reconnect (after the RESUMEs, when the server has them), or
        /// the QSUB that restores a group's.
        case resubscribe(patterns: [String], group: String?)
        /// ASK: `+OK <id> <asked>` opens the question, whose answers and `DONE` are pushes.
        case ask(OpenQuestion)
        /// ANSWER: whether the answer was taken (`+OK 1`) or came too late (`+OK 0`).
        case answer(((Result<Bool, ClientError>) -> Void)?)
        /// The AUTH sent after a greeting.
        case authenticate
    }

    let kind: Kind
    /// When a PING was sent, for its round-trip time; nil for other commands, which spares every publish a
    /// clock read (reply deadlines are watched by progress instead, see `FanoutClient.checkDeadlines`).
    let sentAt: ContinuousClock.Instant?

    init(kind: Kind) {
        self.kind = kind
        if case .ping = kind { sentAt = .now } else { sentAt = nil }
    }

    /// Completes with a failure, whatever the kind.
    func fail(_ error: ClientError) {
        switch kind {
        case .publish(let completion): completion?(.failure(error))
        case .subscription(_, _, _, let completion): completion?(.failure(error))
        case .ask(let question): question.finish(.failure(error))
        case .answer(let completion): completion?(.failure(error))
        case .resume(_, _, _, let completion): completion?(.failure(error))
        case .ping(let completion): completion(.failure(error))
        case .text(let completion): completion(.failure(error))
        case .resubscribe, .authenticate: break
        }
    }
}
