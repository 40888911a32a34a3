import FanoutProtocol

/// Questions (protocol 1.2): `ASK` a subject's receivers and gather their `ANSWER` pushes until `DONE`; and, as
/// a receiver, hear the questions put to this connection and answer them.
extension FanoutClient {
    /// Asks the receivers of the concrete `subject` (every plain subscriber, one member per group, never this
    /// connection). `onAnswer` gets each answer as it comes; the completion gets the summary once the question
    /// closes: all asked answered or vanished, `maxAnswers` answers taken (0: no cap), or `timeout` passed
    /// (1 ms up to the server's `max_ask_timeout`).
    ///
    /// A payload must fit on a line (`lineCarries`): questions have no binary form. A question still open when
    /// the connection is lost fails with `.disconnected`, since the server closes it; one whose `DONE` does not
    /// come within `timeout` plus the client's reply timeout fails with `.timeout`.
    public func ask(
        _ subject: String, payload: UnsafeRawBufferPointer, timeout: Duration, maxAnswers: Int = 0,
        onAnswer: @escaping (Answer) -> Void, completion: @escaping (Result<QuestionSummary, ClientError>) -> Void
    ) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkSubject(subject) }) {
            return completion(.failure(refused))
        }
        guard Self.lineCarries(payload) else {
            return completion(.failure(.invalid("a question's payload must not hold LF, nor end in CR")))
        }
        let milliseconds = max(Int64((timeout / .milliseconds(1)).rounded(.up)), 1)
        let question = OpenQuestion(timeout: timeout, onAnswer: onAnswer, completion: completion)
        send(prefix: "ASK \(subject) \(milliseconds) \(max(maxAnswers, 0)) ", payload: payload, .ask(question))
    }

    public func ask(
        _ subject: String, _ payload: String, timeout: Duration, maxAnswers: Int = 0,
        onAnswer: @escaping (Answer) -> Void, completion: @escaping (Result<QuestionSummary, ClientError>) -> Void
    ) {
        var payload = payload
        payload.withUTF8 {
            ask(subject, payload: UnsafeRawBufferPointer($0), timeout: timeout, maxAnswers: maxAnswers,
                onAnswer: onAnswer, completion: completion)
        }
    }

    /// Answers the question `id` put to this connection. The completion gets true when the answer was taken,
    /// false when it came too late (the question closed) or the question was not this connection's to answer.
    /// The payload must fit on a line, as for `ask`.
    public func answer(
        _ id: String, payload: UnsafeRawBufferPointer, completion: ((Result<Bool, ClientError>) -> Void)? = nil
    ) {
        if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkQuestionID(id) }) {
            completion?(.failure(refused))
            return
        }
        guard Self.lineCarries(payload) else {
            completion?(.failure(.invalid("an answer's payload must not hold LF, nor end in CR")))
            return
        }
        send(prefix: "ANSWER \(id) ", payload: payload, .answer(completion))
    }

    public func answer(_ id: String, _ payload: String, completion: ((Result<Bool, ClientError>) -> Void)? = nil) {
        var payload = payload
        payload.withUTF8 { answer(id, payload: UnsafeRawBufferPointer($0), completion: completion) }
    }

    /// The reply to an ASK: `+OK <id> <asked>` opens the question; its pushes follow the reply.
    func questionOpened(_ question: OpenQuestion, _ result: Result<String, ClientError>) {
        switch result {
        case .failure(let error):
            question.finish(.failure(error))
        case .success(let text):
            let words = text.split(separator: " ")
            guard words.count >= 2, Int(words[1]) != nil else {
                let error = ClientError.protocolViolation("+OK \(text)")
                question.finish(.failure(error))
                connectionLost(reason: error.description)
                return
            }
            question.id = String(words[0])
            question.deadline = .now + question.timeout + options.timeout
            questions[question.id] = question
        }
    }

    /// An `ANSWER` push. One for a question this client no longer waits for is dropped.
    func answerArrived(id: String, responder: String, payload: [UInt8]) {
        questions[id]?.onAnswer(Answer(questionID: id, responder: responder, payload: payload))
    }

    /// A `DONE` push: the question's summary, after all its answers.
    func questionClosed(id: String, asked: Int, answered: Int, gone: Int) {
        questions.removeValue(forKey: id)?.finish(
            .success(QuestionSummary(questionID: id, asked: asked, answered: answered, gone: gone)))
    }

    /// Fails the questions whose `DONE` is overdue (the watchdog's call).
    func failOverdueQuestions(now: ContinuousClock.Instant) {
        for (id, question) in questions where question.deadline.map({ now > $0 }) ?? false {
            questions[id] = nil
            question.finish(.failure(.timeout("waiting for the end of question \(id)")))
        }
    }
}
