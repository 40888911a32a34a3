/// A question this client asked and the server has not closed: where its answers go, and when the client stops
/// waiting for a `DONE` that does not come (the question's timeout plus the client's reply timeout).
final class OpenQuestion {
    let onAnswer: (Answer) -> Void
    private var completion: ((Result<QuestionSummary, ClientError>) -> Void)?
    /// The question's timeout, as sent.
    let timeout: Duration
    /// Set by the reply (`+OK <id> <asked>`).
    var id = ""
    var deadline: ContinuousClock.Instant?

    init(timeout: Duration, onAnswer: @escaping (Answer) -> Void,
         completion: @escaping (Result<QuestionSummary, ClientError>) -> Void) {
        self.timeout = timeout
        self.onAnswer = onAnswer
        self.completion = completion
    }

    /// Completes once; later calls do nothing.
    func finish(_ result: Result<QuestionSummary, ClientError>) {
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }
}
