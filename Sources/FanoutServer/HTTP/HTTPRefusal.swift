import FanoutHTTP
import FanoutProtocol

/// An HTTP request refused with a status and the protocol's error code.
struct HTTPRefusal: Error {
    let status: Int
    let code: String
    let message: String

    init(status: Int, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    var response: HTTPResponse {
        .json(status: status, Self.errorJSON(code: code, message),
              headers: status == 401 ? [("WWW-Authenticate", "Bearer")] : [])
    }

    /// `{"error":"<code>","message":"<text>"}`: an HTTP error body names the protocol's error code.
    static func errorJSON(code: String, _ message: String) -> String {
        "{\"error\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}"
    }

    /// The HTTP status for a protocol error code, for answers that carry the code in a JSON body.
    static func status(for code: String) -> Int {
        switch code {
        case "auth-required": 401
        case "denied": 403
        case "too-long": 413
        case "limit", "shutting-down", "slow-consumer", "unavailable": 503
        default: 400
        }
    }
}
