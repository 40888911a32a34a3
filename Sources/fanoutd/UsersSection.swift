import FanoutConfig
import FanoutServer

/// The `users:` map of the configuration file:
///
///     users:
///       sensors:
///         token_hash: "sha256$..."              # or token_hash_file: sensors.hash
///         publish: ["sensors.>"]
///       reader:
///         token_hash_file: reader.hash           # relative: under $CREDENTIALS_DIRECTORY (LoadCredential=)
///         subscribe: [">"]
///         subscribe_deny: ["secrets.>"]
///         admin: true
///
/// Any other key of a user is refused, like an unknown setting: a misspelt permission must not pass.
enum UsersSection {
    static func read(_ section: YAMLNode?, in document: YAMLDocument) throws -> [User] {
        guard let section, section != .null else { return [] }
        guard case .mapping(let entries) = section else {
            throw ConfigProblem(line: document.line(of: "users"),
                                "users: expected a map from user names to their settings, found \(section.foundDescription)")
        }
        return try entries.sorted { $0.key < $1.key }.map { name, entry in try user(name, entry, document) }
    }

    private static func user(_ name: String, _ entry: YAMLNode, _ document: YAMLDocument) throws -> User {
        let path = "users.\(name)"
        let fields: [String: YAMLNode]
        switch entry {
        case .mapping(let map): fields = map
        case .null: fields = [:]
        default:
            throw ConfigProblem(line: document.line(of: path),
                                "\(path): expected token_hash and permissions, found \(entry.foundDescription)")
        }
        try SettingNames.checkSection(fields, path: path, known: Setting.userKeys, in: document)
        func problem(_ field: String, _ expected: String) -> ConfigProblem {
            ConfigProblem(line: document.line(of: "\(path).\(field)") ?? document.line(of: path),
                          "\(path).\(field): expected \(expected), found \(fields[field]?.foundDescription ?? "nothing")")
        }
        func string(_ field: String) throws -> String? {
            switch fields[field] {
            case nil, .null: return nil
            case .scalar(let text): return text
            default: throw problem(field, "text")
            }
        }
        func strings(_ field: String) throws -> [String] {
            switch fields[field] {
            case nil, .null: return []
            case .sequence(let items):
                return try items.map { item in
                    guard case .scalar(let text) = item else { throw problem(field, "a list of subject patterns") }
                    return text
                }
            default: throw problem(field, "a list of subject patterns")
            }
        }
        func flag(_ field: String) throws -> Bool {
            guard let text = try string(field) else { return false }
            switch text.lowercased() {
            case "true", "yes", "on": return true
            case "false", "no", "off": return false
            default: throw problem(field, "true or false")
            }
        }

        let hashText: String
        switch (try string("token_hash"), try string("token_hash_file")) {
        case (let hash?, nil):
            hashText = hash
        case (nil, let file?):
            hashText = try readHashFile(file, user: name)
        default:
            throw ConfigProblem(line: document.line(of: path), "\(path): give exactly one of token_hash and token_hash_file")
        }
        let hash: TokenHash
        do {
            hash = try TokenHash(parsing: hashText)
        } catch {
            throw ConfigProblem(line: document.line(of: "\(path).token_hash") ?? document.line(of: path), "\(path): \(error)")
        }
        return User(name: name, tokenHash: hash, permissions: Permissions(
            publish: try strings("publish"), publishDeny: try strings("publish_deny"),
            subscribe: try strings("subscribe"), subscribeDeny: try strings("subscribe_deny"),
            admin: try flag("admin")))
    }

    /// A relative path is looked up in systemd's credentials directory when there is one.
    private static func readHashFile(_ file: String, user: String) throws -> String {
        var path = file
        if !file.hasPrefix("/"), let credentials = TextFile.environment("CREDENTIALS_DIRECTORY") {
            path = credentials + "/" + file
        }
        do {
            return try TextFile.read(path)
        } catch {
            throw ConfigProblem(description: "users.\(user): cannot read token_hash_file \(path)")
        }
    }
}
