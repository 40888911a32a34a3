/// Why a token was refused. The client is told only `-ERR denied invalid token`; `reason` is for the server's
/// log.
public enum TokenRejection: Error, Equatable, Sendable {
    case tooLarge, malformed, unsupportedAlgorithm, keyMismatch, unknownKey, badSignature,
         expired, notYetValid, wrongIssuer, wrongAudience, missingSubject, tooManyPatterns, invalidPattern

    /// For the server's log: says what failed, never key material or token text.
    public var reason: String {
        switch self {
        case .tooLarge: "token over \(TokenVerifier.maxTokenBytes) bytes"
        case .malformed: "malformed token (not three base64url parts of JSON objects, bad claim types, or crit)"
        case .unsupportedAlgorithm: "unsupported alg (HS256, HS384, HS512, RS256 and ES256 are accepted; never none)"
        case .keyMismatch: "alg does not fit the configured key (the key pins the algorithm family)"
        case .unknownKey: "no configured key matches the token's kid"
        case .badSignature: "bad signature"
        case .expired: "token expired"
        case .notYetValid: "token not yet valid (nbf or iat in the future)"
        case .wrongIssuer: "wrong issuer (iss)"
        case .wrongAudience: "wrong audience (aud)"
        case .missingSubject:
            "no usable sub claim (missing, empty, over \(TokenClaims.maxSubjectBytes) bytes, "
                + "or with spaces or control characters)"
        case .tooManyPatterns: "fanout claim with over \(TokenVerifier.maxPatterns) patterns"
        case .invalidPattern: "fanout claim with an invalid subject pattern"
        }
    }
}
