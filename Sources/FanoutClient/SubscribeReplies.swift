/// Gathers the replies of the commands one `subscribe` call became (a `RESUME` or `LAST` per concrete subject,
/// one `SUB` of the wildcards) into its one completion: the subscription count after the last reply, or the
/// first failure. Replies come in command order, so the last one carries the final count.
final class SubscribeReplies {
    private var remaining: Int
    private var failure: ClientError?
    private let completion: ((Result<Int, ClientError>) -> Void)?

    init(expecting count: Int, completion: ((Result<Int, ClientError>) -> Void)?) {
        remaining = count
        self.completion = completion
    }

    func take(_ result: Result<Int, ClientError>) {
        if case .failure(let error) = result, failure == nil { failure = error }
        remaining -= 1
        guard remaining == 0 else { return }
        completion?(failure.map { .failure($0) } ?? result)
    }
}
