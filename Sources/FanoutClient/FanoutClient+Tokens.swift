import FanoutEventLoop
import FanoutProtocol

/// The code of the server's push when a connection's token expires (PROTOCOL.md, AUTH): `token expired; send
/// AUTH with a fresh token within <grace>s`, then `closing` when none came.
let authExpiredCode = ErrorCode("auth-expired")

/// Token refresh on the live connection: on the server's `-ERR auth-expired` push, a fresh token from
/// `ClientOptions.tokenSource` goes as `AUTH`, which keeps the connection and its subscriptions. A failure
/// (the source threw, or the server refused the token) is reported as `.tokenRefreshFailed` and retried after
/// 1, 2, 4 ... s (at most 30 s) while the connection is up; a reconnect fetches its own token.
extension FanoutClient {
    /// Why the token source gave no token, in words that never hold what it gave: a token is a secret.
    struct TokenSourceFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// A token from the source, checked as AUTH takes it.
    func freshToken() -> Result<String, TokenSourceFailure> {
        guard let source = options.tokenSource else {
            return .failure(TokenSourceFailure(description: "no token source"))
        }
        do {
            let token = try source()
            if let refused = ClientError.refusal({ () throws(ClientError) in try CommandWords.checkAuthToken(token) }) {
                return .failure(TokenSourceFailure(description: "the token source gave \(refused)"))
            }
            return .success(token)
        } catch {
            return .failure(TokenSourceFailure(description: "\(error)"))
        }
    }

    func refreshToken() {
        guard options.tokenSource != nil, phase == .ready, tokenRetry == nil else { return }
        let fresh: String
        switch freshToken() {
        case .success(let token): fresh = token
        case .failure(let failure):
            onEvent?(.tokenRefreshFailed(failure.description))
            return retryTokenRefresh()
        }
        send("AUTH \(fresh)", .text { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.token = fresh
                self.tokenFailures = 0
            case .failure(.server(let error)):
                self.onEvent?(.tokenRefreshFailed("the server refused the fresh token: \(error)"))
                self.retryTokenRefresh()
            case .failure:
                break  // the connection went: the reconnect fetches a token of its own
            }
        })
    }

    func retryTokenRefresh() {
        tokenFailures += 1
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.tokenRetry = nil
            self.refreshToken()
        }
        timer.schedule(after: .seconds(min(1 << min(tokenFailures - 1, 5), 30)))
        tokenRetry = timer
    }
}
