// 7. As application tokens (FanoutTokens): the input as a whole token must be refused without a trap (it is
//    not signed by the fuzz key); the input as a payload, signed here with the fuzz key so that the claims
//    parser behind the signature is reached, either verifies to a grant within the bounds (a usable `sub`,
//    at most 1,000 valid patterns) or is refused with a reason; and base64url decoding is canonical: what
//    it accepts encodes back to the very input.

private let fuzzSecret = Array("fuzz-only-secret".utf8)
private let fuzzVerifier = TokenVerifier(
    keys: try! TokenKeys(hmacSecret: fuzzSecret, publicKeyPEM: nil, jwks: nil),
    rules: TokenRules(issuer: nil, audience: nil, leewaySeconds: 5))
private let fuzzHeader = Base64.encodeURLSafe(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))

func checkTokens(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    _ = TokenVerifier.looksLikeJWT(text)
    if case .success = fuzzVerifier.verify(text, now: 1_700_000_000) {
        preconditionFailure("an unsigned input verified")
    }

    if let decoded = Base64.decodeURLSafe(bytes) {
        precondition(Array(Base64.encodeURLSafe(decoded).utf8).elementsEqual(bytes), "base64url is not canonical")
    }

    let input = fuzzHeader + "." + Base64.encodeURLSafe(Array(bytes))
    let mac = Array(input.utf8).withUnsafeBytes { try! HMAC.authenticate(.sha256, key: fuzzSecret, message: $0) }
    let token = input + "." + Base64.encodeURLSafe(mac)
    switch fuzzVerifier.verify(token, now: 1_700_000_000) {
    case .success(let verified):
        precondition(TokenClaims.isUsableSubject(verified.subject), "an unusable sub was accepted")
        let grant = verified.grant
        precondition(grant.patternCount <= TokenVerifier.maxPatterns, "over the pattern bound")
        for pattern in grant.publish + grant.publishDeny + grant.subscribe + grant.subscribeDeny {
            precondition(Subject.isValidPattern(pattern), "an invalid pattern was granted")
        }
    case .failure(let rejection):
        precondition(token.utf8.count > TokenVerifier.maxTokenBytes || rejection != .tooLarge,
                     "tooLarge under the bound")
        precondition(rejection != .badSignature && rejection != .keyMismatch, "the fuzz key's own signature failed")
    }
}
