import FanoutServer
import Foundation
import Yams

/// The `users:` map of the configuration file, decoded with Yams (swift-configuration reads scalars and
/// lists, not maps of records):
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
struct UsersSection: Decodable {
    struct Entry: Decodable {
        var token_hash: String?
        var token_hash_file: String?
        var publish: [String]?
        var publish_deny: [String]?
        var subscribe: [String]?
        var subscribe_deny: [String]?
        var admin: Bool?
    }

    var users: [String: Entry]?

    static func load(path: String) throws -> [User] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let section: UsersSection
        do {
            section = try YAMLDecoder().decode(UsersSection.self, from: text)
        } catch {
            throw ConfigLoader.Problem(description: "users: \(error)")
        }
        return try (section.users ?? [:]).sorted { $0.key < $1.key }.map { name, entry in
            let hashText: String
            switch (entry.token_hash, entry.token_hash_file) {
            case (let hash?, nil):
                hashText = hash
            case (nil, let file?):
                hashText = try readHashFile(file, user: name)
            default:
                throw ConfigLoader.Problem(description: "users.\(name): give exactly one of token_hash and token_hash_file")
            }
            let hash: TokenHash
            do {
                hash = try TokenHash(parsing: hashText)
            } catch {
                throw ConfigLoader.Problem(description: "users.\(name): \(error)")
            }
            return User(name: name, tokenHash: hash, permissions: Permissions(
                publish: entry.publish ?? [], publishDeny: entry.publish_deny ?? [],
                subscribe: entry.subscribe ?? [], subscribeDeny: entry.subscribe_deny ?? [],
                admin: entry.admin ?? false))
        }
    }

    /// A relative path is looked up in systemd's credentials directory when there is one.
    private static func readHashFile(_ file: String, user: String) throws -> String {
        var path = file
        if !file.hasPrefix("/"), let credentials = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"] {
            path = credentials + "/" + file
        }
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigLoader.Problem(description: "users.\(user): cannot read token_hash_file \(path)")
        }
    }
}
