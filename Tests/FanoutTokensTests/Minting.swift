import FanoutCrypto
import FanoutProtocol

/// HS256 tokens made in the test from raw JSON text, for shapes PyJWT will not write (bad JSON, duplicate
/// members, thousands of patterns) but that a verifier must still meet signed by the right key.
func mintHS256(header: String = #"{"alg":"HS256","typ":"JWT"}"#, payload: String) -> String {
    let input = Base64.encodeURLSafe(Array(header.utf8)) + "." + Base64.encodeURLSafe(Array(payload.utf8))
    let mac = Array(input.utf8).withUnsafeBytes { bytes in
        try! HMAC.authenticate(.sha256, key: Array(Vectors.shared.hmac_secret.utf8), message: bytes)
    }
    return input + "." + Base64.encodeURLSafe(mac)
}

/// A payload with the given subject and patterns to subscribe to, valid at `Vectors.shared.now`.
func payload(sub: String = "user-1234", subscribe: [String]) -> String {
    let list = subscribe.map { "\"\($0)\"" }.joined(separator: ",")
    return #"{"sub":"\#(sub)","exp":\#(Vectors.shared.now + 60),"fanout":{"subscribe":[\#(list)]}}"#
}
