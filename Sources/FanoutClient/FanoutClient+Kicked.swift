import FanoutProtocol

/// `-ERR kicked <reason>` (protocol 1.3): an administrator closed this connection, and the server says so just
/// before it closes. That is final: reconnecting would undo the administrator's decision (and, for a client
/// that retries for ever, defeat it), so the client closes at once, fails what is in flight with
/// `.kicked(reason)`, keeps the reason in `kickedReason`, and reports `.kicked` as its last event.
extension FanoutClient {
    func wasKicked(reason: String) {
        kickedReason = reason
        phase = .closed
        reconnectTimer = nil
        tokenRetry = nil
        watchdog = nil
        socket?.delegate = nil
        socket = nil
        failPending(.kicked(reason))
        if let completion = connectCompletion {
            // Kicked before the connect completed (while AUTH was answered): the connect fails with the reason.
            connectCompletion = nil
            completion(.failure(.kicked(reason)))
        }
        onEvent?(.kicked(reason: reason))
    }
}
