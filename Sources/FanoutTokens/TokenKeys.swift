import FanoutCrypto

/// Why token keys could not be used: names the setting and what is wrong, never a secret's or key's bytes.
public struct TokenKeyProblem: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) { self.description = description }
}

/// The keys that application tokens are checked with: an HMAC secret (HS256/384/512), a PEM public key (RSA for
/// RS256, P-256 for ES256) and a JWKS's keys, in any combination. Each key pins its algorithm family, so a
/// token's `alg` can only choose among keys of its own kind (an RSA key is never taken as an HMAC secret).
public struct TokenKeys: Sendable {
    /// A JWKS file's bound: it is the operator's file, but read whole.
    static let maxJWKSBytes = 1 << 20
    /// An HMAC secret's and a PEM file's bound.
    static let maxKeyFileBytes = 1 << 20

    let hmacSecret: [UInt8]?
    let publicKey: PublicKey?
    let jwks: [JSONWebKey]

    /// Throws `TokenKeyProblem` naming what is wrong (never the secret's bytes). Any combination may be given;
    /// at least one. A JWKS's keys are picked by the token header's `kid` (a token without `kid` matches a JWKS
    /// only if it has exactly one key of the right type).
    ///
    /// The secret is the file's bytes, less one trailing line end (`\n` or `\r\n`), which editors and `echo`
    /// add. It must not be empty, and must not be a PEM block (a public key used as an HMAC secret would let
    /// anyone who has the public key sign tokens).
    public init(hmacSecret: [UInt8]?, publicKeyPEM: [UInt8]?, jwks: [UInt8]?) throws(TokenKeyProblem) {
        guard hmacSecret != nil || publicKeyPEM != nil || jwks != nil else {
            throw TokenKeyProblem("no token key: give token_secret_file, token_public_key_file or token_jwks_file")
        }
        do {
            try ensureCryptoAvailable()
        } catch {
            throw TokenKeyProblem("tokens need libcrypto: \(error.description)")
        }
        if var secret = hmacSecret {
            if secret.last == 0x0A { secret.removeLast() }
            if secret.last == 0x0D { secret.removeLast() }
            guard !secret.isEmpty else { throw TokenKeyProblem("token_secret_file: the secret is empty") }
            guard secret.count <= Self.maxKeyFileBytes else {
                throw TokenKeyProblem("token_secret_file: over \(Self.maxKeyFileBytes) bytes")
            }
            guard !secret.starts(with: Array("-----BEGIN".utf8)) else {
                throw TokenKeyProblem(
                    "token_secret_file: holds a PEM block; a public key goes in token_public_key_file")
            }
            self.hmacSecret = secret
        } else {
            self.hmacSecret = nil
        }
        if let pem = publicKeyPEM {
            guard pem.count <= Self.maxKeyFileBytes else {
                throw TokenKeyProblem("token_public_key_file: over \(Self.maxKeyFileBytes) bytes")
            }
            do {
                self.publicKey = try PublicKey(der: PEM.publicKeyDER(pem))
            } catch let error as TokenKeyProblem {
                throw error
            } catch {
                throw TokenKeyProblem("token_public_key_file: \(error)")
            }
        } else {
            self.publicKey = nil
        }
        if let jwks {
            guard jwks.count <= Self.maxJWKSBytes else {
                throw TokenKeyProblem("token_jwks_file: over \(Self.maxJWKSBytes) bytes")
            }
            self.jwks = try JSONWebKey.set(jwks)
        } else {
            self.jwks = []
        }
    }
}
