import FoundationEssentials

// The token's two JSON objects, read by FoundationEssentials' JSONDecoder. Bounds: the whole token is at most
// TokenVerifier.maxTokenBytes (32 KiB) before either is decoded, so each object is under 24 KiB of JSON; the
// decoder refuses nesting of 512 levels or more (its own limit; AttackTests checks it up to the 10,000 levels
// that fit), and unknown members are skipped. Where a member appears twice, the decoder keeps the first
// occurrence (AttackTests checks it); as it is the signed text that is read, a duplicate only changes what the
// issuer itself signed.

/// The JOSE header (RFC 7515 §4): the algorithm, the key's id, and whether `crit` is present.
struct TokenHeader: Decodable {
    let alg: String
    let kid: String?
    /// `crit` names extensions that must be understood; none are, so any `crit` refuses the token.
    let hasCrit: Bool

    private enum Keys: String, CodingKey { case alg, kid, crit }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        alg = try container.decode(String.self, forKey: .alg)
        kid = try container.decodeIfPresent(String.self, forKey: .kid)
        hasCrit = container.contains(.crit)
    }
}

/// A JSON object of any members: what `looksLikeJWT` asks of a header.
struct AnyJSONObject: Decodable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: Key.self)
    }
}

/// The claims set (RFC 7519 §4.1) as the token gives it, before the rules are applied.
struct TokenClaims: Decodable {
    /// A `sub` is a user name: shown by CLIENTS and written in `-ERR limit ... for user <u>` lines.
    static let maxSubjectBytes = 256

    let sub: String?
    let iss: String?
    /// `aud`: one string or a list of strings.
    let aud: [String]?
    /// NumericDate (seconds, a JSON number, possibly with a fraction).
    let exp: Double?
    let nbf: Double?
    let iat: Double?
    let fanout: Grant?

    struct Grant: Decodable {
        let publish: [String]?
        let publish_deny: [String]?
        let subscribe: [String]?
        let subscribe_deny: [String]?
        let admin: Bool?
    }

    private enum Keys: String, CodingKey { case sub, iss, aud, exp, nbf, iat, fanout }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        sub = try container.decodeIfPresent(String.self, forKey: .sub)
        iss = try container.decodeIfPresent(String.self, forKey: .iss)
        if let one = try? container.decodeIfPresent(String.self, forKey: .aud) {
            aud = [one]
        } else {
            aud = try container.decodeIfPresent([String].self, forKey: .aud)
        }
        exp = try container.decodeIfPresent(Double.self, forKey: .exp)
        nbf = try container.decodeIfPresent(Double.self, forKey: .nbf)
        iat = try container.decodeIfPresent(Double.self, forKey: .iat)
        fanout = try container.decodeIfPresent(Grant.self, forKey: .fanout)
    }

    /// Whether `sub` can name a user: 1 to 256 bytes, no spaces or control characters (it goes into lines).
    static func isUsableSubject(_ subject: String) -> Bool {
        let bytes = subject.utf8
        return !bytes.isEmpty && bytes.count <= maxSubjectBytes && !bytes.contains { $0 <= 0x20 || $0 == 0x7F }
    }
}

/// Seconds as Int64 from a NumericDate, `rounding` as asked (down for `exp`, up for `nbf` and `iat`, so a
/// fraction never lengthens a token's life); nil for NaN and infinities, saturated beyond Int64.
func numericDate(_ value: Double, _ rounding: FloatingPointRoundingRule) -> Int64? {
    guard value.isFinite else { return nil }
    let whole = value.rounded(rounding)
    if whole >= 9.2e18 { return Int64.max }
    if whole <= -9.2e18 { return Int64.min }
    return Int64(whole)
}
