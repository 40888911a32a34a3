import FanoutConfig
import FanoutServer

/// The `token_*` settings: application tokens (JWT). The key files are read here, at start and on every
/// reload, so that a file that cannot be read is a configuration error naming it (and a reload that meets one
/// keeps the running configuration, keys included). A relative path is looked up in systemd's credentials
/// directory when there is one, as `redis_password_file` is. Nothing read from a key file is ever printed.
enum TokenSection {
    /// The largest key file read: a JWKS of a few dozen keys is far below it; a bigger file is a mistake.
    static let maxFileBytes = 1 << 20

    static func read(_ reader: SettingsReader, into tokens: inout TokenSettings) throws {
        if let path = try reader.string("token_secret_file") {
            tokens.secretFile = path.isEmpty ? nil : resolved(path)
        }
        if let path = try reader.string("token_public_key_file") {
            tokens.publicKeyFile = path.isEmpty ? nil : resolved(path)
        }
        if let path = try reader.string("token_jwks_file") {
            tokens.jwksFile = path.isEmpty ? nil : resolved(path)
        }
        if let text = try reader.string("token_issuer") { tokens.issuer = text }
        if let text = try reader.string("token_audience") { tokens.audience = text }
        if let value = try reader.int("token_leeway") { tokens.leewaySeconds = Int64(value) }
        if let value = try reader.seconds("token_expiry_grace") { tokens.expiryGrace = value }
        // The secret's one trailing line end (`echo` writes one) is dropped by the key's parser, which also
        // refuses an empty secret or a PEM block in its place.
        tokens.secret = try tokens.secretFile.map { try contents(of: $0, setting: "token_secret_file", reader: reader) }
        tokens.publicKeyPEM = try tokens.publicKeyFile.map {
            try contents(of: $0, setting: "token_public_key_file", reader: reader)
        }
        tokens.jwks = try tokens.jwksFile.map { try contents(of: $0, setting: "token_jwks_file", reader: reader) }
    }

    private static func resolved(_ path: String) -> String {
        guard !path.hasPrefix("/"), let credentials = TextFile.environment("CREDENTIALS_DIRECTORY") else { return path }
        return credentials + "/" + path
    }

    private static func contents(of path: String, setting: String, reader: SettingsReader) throws -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try TextFile.readBytes(path)
        } catch {
            throw ConfigProblem(line: reader.line(of: setting), "\(setting): cannot read \(path): \(error)")
        }
        guard bytes.count <= maxFileBytes else {
            throw ConfigProblem(line: reader.line(of: setting), "\(setting): \(path) is over \(maxFileBytes) bytes")
        }
        return bytes
    }

    /// The `--check-config` lines: which files, never what they hold.
    static func describe(_ tokens: TokenSettings) -> String {
        """
        token_secret_file: \(tokens.secretFile ?? "off")
        token_public_key_file: \(tokens.publicKeyFile ?? "off")
        token_jwks_file: \(tokens.jwksFile ?? "off")
        token_issuer: \(tokens.issuer ?? "not checked")
        token_audience: \(tokens.audience ?? "not checked")
        token_leeway: \(tokens.leewaySeconds)
        token_expiry_grace: \(tokens.expiryGrace.components.seconds)
        """
    }
}
