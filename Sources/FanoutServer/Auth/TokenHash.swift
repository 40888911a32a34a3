import FanoutEventLoop
/// A stored token: `sha256$<salt hex>$<digest hex>`, where digest = SHA-256(salt ‖ token).
///
/// Verification runs on the event loop, so the hash is fast on purpose (as in Redis ACLs): tokens are meant
/// to be long and random (`fanoutd --hash-token` makes 256-bit ones), which no fast hash makes guessable.
/// The comparison takes the same time whatever the input.
public struct TokenHash: Sendable, Equatable, CustomStringConvertible {
    let salt: [UInt8]
    let digest: [UInt8]

    public init(parsing text: String) throws(ConfigurationProblem) {
        let parts = text.trimmingWhitespace.split(separator: "$")
        guard parts.count == 3, parts[0] == "sha256", let salt = Self.bytes(hex: parts[1]),
              let digest = Self.bytes(hex: parts[2]), salt.count >= 8, digest.count == 32 else {
            throw ConfigurationProblem("token hash must look like sha256$<salt hex>$<64 hex digits> (see fanoutd --hash-token)")
        }
        self.salt = salt
        self.digest = digest
    }

    /// Hashes `token` with a fresh random salt.
    public static func make(token: String) -> TokenHash {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return TokenHash(salt: salt, digest: hash(token, salt: salt))
    }

    init(salt: [UInt8], digest: [UInt8]) {
        self.salt = salt
        self.digest = digest
    }

    /// Whether `token` hashes to this digest, in time independent of where they differ.
    public func matches(_ token: some StringProtocol) -> Bool {
        let candidate = Self.hash(token, salt: salt)
        var difference: UInt8 = 0
        for (left, right) in zip(candidate, digest) { difference |= left ^ right }
        return difference == 0
    }

    public var description: String { "sha256$\(Self.hex(salt))$\(Self.hex(digest))" }

    static func hash(_ token: some StringProtocol, salt: [UInt8]) -> [UInt8] {
        Digest.sha256(salt + Array(token.utf8))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: out, as: UTF8.self)
    }

    static func bytes(hex: Substring) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }
}

/// A configuration value that cannot be used, with a line saying why.
public struct ConfigurationProblem: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs, CRs and LFs (a hash file usually ends in a newline).
    var trimmingWhitespace: SubSequence {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
