import FanoutTokens

/// Application tokens (JWT): the keys that verify them, read from files by the daemon at start and on every
/// reload, and the claims checked beside the signature. Any key turns tokens on, and with them AUTH for every
/// connection.
///
/// The key material is held as the files' bytes so that a reload compares it (a renewed secret is a change)
/// and the server does no file I/O; `description` never shows it.
public struct TokenSettings: Sendable, Equatable, CustomStringConvertible {
    /// `token_secret_file`: the HMAC secret for HS256, HS384 and HS512.
    public var secretFile: String?
    /// `token_public_key_file`: a PEM public key, RSA (RS256) or EC P-256 (ES256).
    public var publicKeyFile: String?
    /// `token_jwks_file`: a JWKS document whose keys tokens choose by `kid`.
    public var jwksFile: String?
    /// The contents of the three files, as last read (nil for a file not configured).
    public var secret: [UInt8]?
    public var publicKeyPEM: [UInt8]?
    public var jwks: [UInt8]?
    /// `token_issuer` and `token_audience`: checked when set.
    public var issuer: String?
    public var audience: String?
    /// `token_leeway`: seconds of clock difference allowed on `exp`, `nbf` and `iat`.
    public var leewaySeconds: Int64 = 5
    /// `token_expiry_grace`: how long a connection whose token expired may take to send a fresh one.
    public var expiryGrace = Duration.seconds(30)

    public init() {}

    /// Whether a key is configured: tokens are accepted, and every connection must authenticate.
    public var isOn: Bool { secretFile != nil || publicKeyFile != nil || jwksFile != nil || hasKeyMaterial }

    /// Key bytes set without a file (the in-process tests).
    private var hasKeyMaterial: Bool { secret != nil || publicKeyPEM != nil || jwks != nil }

    public var description: String {
        let keys = [("secret", secretFile), ("public key", publicKeyFile), ("jwks", jwksFile)]
            .compactMap { name, path in path.map { "\(name) \($0)" } }
        return keys.isEmpty ? "off" : keys.joined(separator: ", ")
    }

    func problems() -> [String] {
        var found: [String] = []
        if leewaySeconds < 0 { found.append("token_leeway: must not be negative") }
        if expiryGrace < .zero { found.append("token_expiry_grace: must not be negative") }
        if let issuer, issuer.isEmpty { found.append("token_issuer: must not be empty (leave it unset)") }
        if let audience, audience.isEmpty { found.append("token_audience: must not be empty (leave it unset)") }
        if isOn {
            // Parsed here too, so that a key that cannot be used is a configuration error at start, and a reload
            // that meets one keeps the running configuration; the text names no key material.
            do {
                _ = try keys()
            } catch {
                // The key's problems name their setting; the others are prefixed with the settings in use.
                let text = error.description
                found.append(text.hasPrefix("token_") ? text : "\(keySettingNames): \(text)")
            }
        }
        return found
    }
}
