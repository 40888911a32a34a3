import FanoutCrypto
import FanoutProtocol
import FoundationEssentials

/// Checks application tokens (JWT, RFC 7519, in JWS compact form, RFC 7515): size, then header and key, then
/// signature, and only then the claims. I/O-free; `now` is given.
public struct TokenVerifier: Sendable {
    /// A token's bound, checked before anything else: at most 32 KiB of text, so decoding, JSON and the
    /// signature check work on at most that much.
    public static let maxTokenBytes = 32 * 1024
    /// Patterns in a `fanout` claim's four lists together.
    public static let maxPatterns = 1000

    let keys: TokenKeys
    let rules: TokenRules

    public init(keys: TokenKeys, rules: TokenRules) {
        self.keys = keys
        self.rules = rules
    }

    /// `now` in unix seconds. Size is checked before anything else; the signature before the claims are trusted.
    public func verify(_ token: String, now: Int64) -> Result<VerifiedToken, TokenRejection> {
        guard token.utf8.count <= Self.maxTokenBytes else { return .failure(.tooLarge) }
        var token = token
        return token.withUTF8 { bytes in
            do throws(TokenRejection) {
                return .success(try verify(UnsafeRawBufferPointer(bytes), now: now))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Three non-empty base64url parts whose header decodes to a JSON object: tells a JWT from a static token.
    public static func looksLikeJWT(_ token: String) -> Bool {
        var token = token
        return token.withUTF8 { bytes in
            guard let parts = CompactParts(UnsafeRawBufferPointer(bytes)), !parts.signature.isEmpty,
                  parts.payload.allSatisfy(Base64.isURLSafeDigit), parts.signature.allSatisfy(Base64.isURLSafeDigit)
            else { return false }
            // A header over the bound is still a token's shape: verify refuses it as too large, unread.
            guard parts.header.count <= maxTokenBytes else { return true }
            guard let header = Base64.decodeURLSafe(parts.header) else { return false }
            return (try? JSONDecoder().decode(AnyJSONObject.self, from: Data(header))) != nil
        }
    }

    private func verify(_ token: UnsafeRawBufferPointer, now: Int64) throws(TokenRejection) -> VerifiedToken {
        guard let parts = CompactParts(token) else { throw .malformed }
        guard let headerJSON = Base64.decodeURLSafe(parts.header),
              let header = try? JSONDecoder().decode(TokenHeader.self, from: Data(headerJSON))
        else { throw .malformed }
        guard let algorithm = TokenAlgorithm(rawValue: header.alg) else { throw .unsupportedAlgorithm }
        guard !header.hasCrit else { throw .malformed }
        guard let signature = Base64.decodeURLSafe(parts.signature),
              let payloadJSON = Base64.decodeURLSafe(parts.payload)
        else { throw .malformed }
        let key = try keys.key(for: algorithm, kid: header.kid)
        let signed = UnsafeRawBufferPointer(rebasing: token[..<parts.signingInputEnd])
        guard key.verifies(signature, of: signed, algorithm) else { throw .badSignature }

        // Signed by a configured key: the claims are the issuer's word from here on.
        let claims: TokenClaims
        do {
            claims = try JSONDecoder().decode(TokenClaims.self, from: Data(payloadJSON))
        } catch {
            throw .malformed
        }
        return try check(claims, now: now)
    }

    private func check(_ claims: TokenClaims, now: Int64) throws(TokenRejection) -> VerifiedToken {
        guard let subject = claims.sub, TokenClaims.isUsableSubject(subject) else { throw .missingSubject }
        let leeway = max(0, rules.leewaySeconds)
        var expiresAt: Int64?
        if let exp = claims.exp {
            guard let exp = numericDate(exp, .down) else { throw .malformed }
            guard now < exp.addingClamped(leeway) else { throw .expired }
            expiresAt = exp
        }
        if let nbf = claims.nbf {
            guard let nbf = numericDate(nbf, .up) else { throw .malformed }
            guard nbf <= now.addingClamped(leeway) else { throw .notYetValid }
        }
        if let iat = claims.iat {
            guard let iat = numericDate(iat, .up) else { throw .malformed }
            guard iat <= now.addingClamped(leeway) else { throw .notYetValid }
        }
        if let issuer = rules.issuer, claims.iss != issuer { throw .wrongIssuer }
        if let audience = rules.audience, !(claims.aud ?? []).contains(audience) { throw .wrongAudience }
        let grant = TokenGrant(
            publish: claims.fanout?.publish ?? [], publishDeny: claims.fanout?.publish_deny ?? [],
            subscribe: claims.fanout?.subscribe ?? [], subscribeDeny: claims.fanout?.subscribe_deny ?? [],
            admin: claims.fanout?.admin ?? false)
        guard grant.patternCount <= Self.maxPatterns else { throw .tooManyPatterns }
        for list in [grant.publish, grant.publishDeny, grant.subscribe, grant.subscribeDeny] {
            guard list.allSatisfy(Subject.isValidPattern) else { throw .invalidPattern }
        }
        return VerifiedToken(subject: subject, expiresAt: expiresAt, grant: grant)
    }
}

/// The three dot-separated parts of a compact JWS, header and payload non-empty; nil for any other shape. An
/// empty signature is left for the algorithm to refuse (`alg: none` is refused as such, not as malformed).
struct CompactParts {
    let header: UnsafeRawBufferPointer
    let payload: UnsafeRawBufferPointer
    let signature: UnsafeRawBufferPointer
    /// Where the signing input (`header.payload`) ends.
    let signingInputEnd: Int

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.firstIndex(of: 0x2E),
              let second = bytes[(first + 1)...].firstIndex(of: 0x2E),
              !bytes[(second + 1)...].contains(0x2E)
        else { return nil }
        header = UnsafeRawBufferPointer(rebasing: bytes[..<first])
        payload = UnsafeRawBufferPointer(rebasing: bytes[(first + 1)..<second])
        signature = UnsafeRawBufferPointer(rebasing: bytes[(second + 1)...])
        signingInputEnd = second
        guard !header.isEmpty, !payload.isEmpty else { return nil }
    }
}

extension Int64 {
    func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
