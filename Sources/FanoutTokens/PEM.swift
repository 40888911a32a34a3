import FanoutProtocol

/// Public keys in PEM (RFC 7468): the base64 between the armour lines, given to libcrypto as DER.
enum PEM {
    /// The DER SubjectPublicKeyInfo of the first public key block in `text` (`PUBLIC KEY`, or PKCS#1
    /// `RSA PUBLIC KEY`, which is wrapped). The error names the problem, never the text.
    static func publicKeyDER(_ text: [UInt8]) throws(TokenKeyProblem) -> [UInt8] {
        let lines = text.split(omittingEmptySubsequences: true) { $0 == 0x0A || $0 == 0x0D }
            .map { String(decoding: $0, as: UTF8.self).trimmedOfBlanks() }
        guard let begin = lines.firstIndex(where: { $0.hasPrefix("-----BEGIN ") && $0.hasSuffix("-----") }) else {
            throw TokenKeyProblem("token_public_key_file: no PEM block (-----BEGIN PUBLIC KEY-----)")
        }
        let label = String(lines[begin].dropFirst("-----BEGIN ".count).dropLast(5))
        guard label == "PUBLIC KEY" || label == "RSA PUBLIC KEY" else {
            if label.contains("PRIVATE") {
                throw TokenKeyProblem("token_public_key_file: holds a private key; give the public key only")
            }
            throw TokenKeyProblem("token_public_key_file: a '\(label)' block, not a PUBLIC KEY")
        }
        guard let end = lines[begin...].firstIndex(of: "-----END \(label)-----") else {
            throw TokenKeyProblem("token_public_key_file: no -----END \(label)----- line")
        }
        guard let der = Base64.decode(lines[(begin + 1)..<end].joined()), !der.isEmpty else {
            throw TokenKeyProblem("token_public_key_file: the PEM block is not valid base64")
        }
        return label == "PUBLIC KEY" ? der : DER.rsaPublicKey(pkcs1: der)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (a PEM line may carry them).
    fileprivate func trimmedOfBlanks() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
