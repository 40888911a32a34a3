import ArgumentParser
import FanoutClient
import FanoutProtocol

/// `fanout who` and `fanout kick` (protocol 1.3). The joins and leaves themselves are `fanout sub --presence`.
struct Who: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the members of a subject the server keeps presence for.",
        discussion: """
            Prints one member per line on stdout, as WHO gives it (id=<client>,user=<user>,since_s=<n>, and \
            group=<g> for a group member), oldest first, and the count on stderr, so that a pipe sees the \
            members only:
              fanout who chat.room1             id=7,user=alice,since_s=12 ...
              fanout who chat.room1 | grep user=alice
              fanout who --json chat.room1 | jq .count
            stderr says "fanout: 2 members", or "fanout: 1234 members, 100 listed" when there are more than \
            the limit (100 unless --limit says otherwise; the server lists at most 1000).
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "A concrete subject.") var subject: String
    @Option(name: .long, help: "List at most this many members (0 counts them only; at most 1000 are listed).")
    var limit: Int?
    @Flag(name: .long, help: "Print one JSON object: the count and the members.") var json = false

    func validate() throws {
        try checkWord { () throws(ClientError) in try CommandWords.checkSubject(subject) }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
    }

    func run() throws {
        let session = try Session(connection)
        var listing: (count: Int, members: [PresenceMember])?
        try session.run {
            session.client.who(subject, limit: limit) { result in
                switch result {
                case .success(let answer):
                    listing = answer
                    session.finish()
                case .failure(let error):
                    session.fail(error)
                }
            }
        }
        guard let listing else { return }
        let output = StandardOutput()
        if json {
            output.append(PresenceJSON.listing(count: listing.count, members: listing.members) + "\n")
            output.flush()
            return
        }
        for member in listing.members { output.append(member.text + "\n") }
        output.flush()
        let noun = listing.count == 1 ? "member" : "members"
        printError(listing.members.count < listing.count
            ? "\(listing.count) \(noun), \(listing.members.count) listed" : "\(listing.count) \(noun)")
    }
}

struct Kick: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Close a client's connection (administrators only, on a server with users or tokens).",
        discussion: """
            Prints how many connections were closed (0 when none matched). Each is told \
            "-ERR kicked <reason>" and closed; its leaves say reason=kicked.
              fanout kick 7                     id 7, as fanout clients or who shows it
              fanout kick n1/7                  on several nodes, sent to a node n1 client
              fanout kick user=alice spamming   every connection of alice, with a reason
            The reason is the rest of the arguments, joined by spaces (at most 256 bytes; the server's \
            default is "by an administrator"). Exit status 1 when the server refuses (denied, syntax).
            """
    )

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The client: an id as CLIENTS and WHO show it, or user=<user>.", valueName: "client"))
    var client: String
    @Argument(help: ArgumentHelp("Why, told to the kicked client.", valueName: "reason"))
    var reason: [String] = []

    var joinedReason: String? { reason.isEmpty ? nil : reason.joined(separator: " ") }

    func validate() throws {
        try checkWord { () throws(ClientError) in try CommandWords.checkKickTarget(client) }
        if let joinedReason {
            try checkWord { () throws(ClientError) in try CommandWords.checkKickReason(joinedReason) }
        }
    }

    func run() throws {
        let session = try Session(connection)
        var closed: Int?
        try session.run {
            session.client.kick(client, reason: joinedReason) { result in
                switch result {
                case .success(let count):
                    closed = count
                    session.finish()
                case .failure(let error):
                    session.fail(error)
                }
            }
        }
        if let closed { print(closed) }
    }
}

/// Presence as JSON: a `WHO` listing, and one join or leave per line for `fanout sub --presence --format json`.
/// `id` is always a string (`"7"`, or `"n1/7"` on several nodes) and `user` null for a connection without one.
enum PresenceJSON {
    static func member(_ member: PresenceMember) -> [(String, String)] {
        var fields = [
            ("id", JSON.string(member.client)), ("user", member.user.map(JSON.string) ?? "null"),
            ("since_s", String(member.sinceSeconds)),
        ]
        if let group = member.group { fields.append(("group", JSON.string(group))) }
        return fields
    }

    static func listing(count: Int, members: [PresenceMember]) -> String {
        "{\"count\":\(count),\"members\":[\(members.map { JSON.object(member($0)) }.joined(separator: ","))]}"
    }

    static func update(_ update: PresenceUpdate) -> String {
        var fields = [
            ("subject", JSON.string(update.subject)), ("seq", String(update.seq)),
            ("event", JSON.string(update.event.kind.rawValue)),
        ]
        fields += member(update.event.member)
        if let reason = update.event.reason { fields.append(("reason", JSON.string(reason))) }
        return JSON.object(fields)
    }
}
