import ArgumentParser
import FanoutClient

/// Sends one command and hands its reply text to `render`.
private func inspect(_ connection: ConnectionOptions, command: String, render: @escaping (String) -> String) throws {
    let session = try Session(connection)
    var output = ""
    try session.run {
        session.client.request(command) { result in
            switch result {
            case .success(let text):
                output = render(text)
                session.finish()
            case .failure(let error):
                session.fail(error)
            }
        }
    }
    print(output)
}

/// `key=value` words as ordered pairs.
private func pairs(_ words: some Sequence<Substring>) -> [(String, String)] {
    words.compactMap { word in
        let parts = word.split(separator: "=", maxSplits: 1)
        return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
    }
}

/// `(3 subjects)`, or `(1000 of 1234 subjects shown)` when the server capped its listing.
private func listingSummary(shown: Int, total: Int, noun: String) -> String {
    shown < total ? "(\(shown) of \(total) \(noun)s shown)" : "(\(total) \(noun)\(total == 1 ? "" : "s"))"
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the server's counters.",
        discussion: "  fanout info\n  fanout info --json | jq .delivered"
    )

    @OptionGroup var connection: ConnectionOptions
    @Flag(name: .long, help: "Print one JSON object.") var json = false

    func run() throws {
        try inspect(connection, command: "INFO") { text in
            let fields = pairs(text.split(separator: " "))
            if json { return JSON.object(fields.map { ($0.0, JSON.value($0.1)) }) }
            var table = TextTable(headers: ["FIELD", "VALUE"])
            table.rows = fields.map { [$0.0, $0.1] }
            return table.render()
        }
    }
}

struct Channels: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List subjects with live subscribers.",
        discussion: "  fanout channels\n  fanout channels 'news.>'\n  fanout channels --json"
    )

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Only subjects matching this pattern.") var pattern: String?
    @Flag(name: .long, help: "Print one JSON object.") var json = false

    func validate() throws {
        if let pattern { try checkWord { () throws(ClientError) in try CommandWords.checkPattern(pattern) } }
    }

    func run() throws {
        try inspect(connection, command: pattern.map { "CHANNELS \($0)" } ?? "CHANNELS") { text in
            let words = text.split(separator: " ")
            let total = words.first.flatMap { Int($0) } ?? 0
            let entries: [(String, String)] = words.dropFirst().compactMap { word in
                guard let equals = word.lastIndex(of: "=") else { return nil }
                return (String(word[..<equals]), String(word[word.index(after: equals)...]))
            }
            if json {
                let list = entries.map { JSON.object([("subject", JSON.string($0.0)), ("subscribers", JSON.value($0.1))]) }
                return "{\"count\":\(total),\"channels\":[\(list.joined(separator: ","))]}"
            }
            var table = TextTable(headers: ["SUBJECT", "SUBSCRIBERS"])
            table.rows = entries.map { [$0.0, $0.1] }
            return table.render() + "\n" + listingSummary(shown: entries.count, total: total, noun: "subject")
        }
    }
}

struct Clients: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List connected clients.",
        discussion: "  fanout clients\n  fanout clients --json"
    )

    @OptionGroup var connection: ConnectionOptions
    @Flag(name: .long, help: "Print one JSON object.") var json = false

    func run() throws {
        try inspect(connection, command: "CLIENTS") { text in
            let words = text.split(separator: " ")
            let total = words.first.flatMap { Int($0) } ?? 0
            let clients = words.dropFirst().map { pairs($0.split(separator: ",")) }
            if json {
                let list = clients.map { JSON.object($0.map { ($0.0, JSON.value($0.1)) }) }
                return "{\"count\":\(total),\"clients\":[\(list.joined(separator: ","))]}"
            }
            let keys = ["id", "addr", "subs", "pending", "age_s"]
            var table = TextTable(headers: keys.map { $0.uppercased() })
            table.rows = clients.map { fields in keys.map { key in fields.first { $0.0 == key }?.1 ?? "" } }
            return table.render() + "\n" + listingSummary(shown: clients.count, total: total, noun: "client")
        }
    }
}
