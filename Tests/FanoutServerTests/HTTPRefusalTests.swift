@testable import FanoutServer
import FanoutHTTP
import Testing

/// What the HTTP front answers with, as docs/browsers.md promises it: a protocol error code in a JSON line
/// under the status that code maps to, and the bearer token read from `Authorization`.
@Suite("HTTP refusals and tokens")
struct HTTPRefusalTests {
    @Test(arguments: [("auth-required", 401), ("denied", 403), ("too-long", 413), ("limit", 503),
                      ("shutting-down", 503), ("slow-consumer", 503), ("unavailable", 503), ("syntax", 400)])
    func anErrorCodeMapsToItsStatus(code: String, status: Int) {
        #expect(HTTPRefusal.status(for: code) == status)
    }

    @Test func onlyA401AsksForABearerToken() {
        let unauthorized = HTTPRefusal(status: 401, code: "denied", "invalid token").response
        #expect(unauthorized.status == 401)
        #expect(unauthorized.headers.contains { $0.0 == "WWW-Authenticate" && $0.1 == "Bearer" })
        #expect(String(decoding: unauthorized.body, as: UTF8.self)
            == #"{"error":"denied","message":"invalid token"}"# + "\n")
        let forbidden = HTTPRefusal(status: 403, code: "denied", "no \"quotes\" lost").response
        #expect(!forbidden.headers.contains { $0.0 == "WWW-Authenticate" })
        #expect(String(decoding: forbidden.body, as: UTF8.self)
            == #"{"error":"denied","message":"no \"quotes\" lost"}"# + "\n")
    }

    private static func head(_ authorization: String?) throws -> HTTPRequestHead {
        var text = "GET /ws HTTP/1.1\r\nHost: x\r\n"
        if let authorization { text += "Authorization: \(authorization)\r\n" }
        var parser = HTTPRequestParser()
        let outcome = Array((text + "\r\n").utf8).withUnsafeBytes { parser.feed($0) }
        guard case .complete(let head, _) = outcome else { throw HTTPTestFailure() }
        return head
    }

    private struct HTTPTestFailure: Error {}

    @Test func theBearerTokenIsTrimmedAndItsSchemeReadInAnyCase() throws {
        #expect(HTTPFront.bearerToken(try Self.head("Bearer abc")) == "abc")
        #expect(HTTPFront.bearerToken(try Self.head("bearer   abc  ")) == "abc")
        #expect(HTTPFront.bearerToken(try Self.head("Bearer ")) == nil)
        #expect(HTTPFront.bearerToken(try Self.head("Basic abc")) == nil)
        #expect(HTTPFront.bearerToken(try Self.head(nil)) == nil)
    }
}
