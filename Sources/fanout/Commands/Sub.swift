import ArgumentParser
import FanoutClient
import FanoutEventLoop
import FanoutProtocol

struct Sub: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Subscribe and print messages as they arrive.",
        discussion: """
            Prints one message per line on stdout; reconnects, losses and errors go to stderr only.

              fanout sub 'news.*'                       payloads, one per line
              fanout sub 'logs.>' | grep ERROR
              fanout sub --format json orders | jq .seq
              fanout sub --count 1 jobs.done            wait for one message, then exit
              fanout sub --last 10 orders               the newest 10 kept, then live ones
              fanout sub --group workers jobs.>         share jobs with the other members of the group
              fanout sub --format raw --count 1 blobs.x > blob   one payload's bytes, exactly
              fanout sub --presence chat.room1          joins and leaves, one per line

            Formats: payload prints each payload and a LF; raw prints the payload's bytes and nothing else; \
            line prints the protocol's push (MSG, or BMSG with its length, bytes and LF for a payload with a \
            LF in it); json prints one object per line, with "payload" for UTF-8 text without LF and \
            "payload_base64" for any other bytes. Output is written as each read from the server is handled, \
            so a pipe sees every message as it arrives.

            With --presence the subjects' joins and leaves are printed instead of their messages (a \
            subscription to $presence.SUBJECT; patterns allowed), one line each: the subject, a space and the \
            event as the server publishes it (format event, the default with --presence):
              chat.room1 join id=7,user=alice,since_s=0
              chat.room1 leave id=7,user=alice,since_s=12,reason=closed
            --format json gives {"subject":"chat.room1","seq":3,"event":"leave","id":"7","user":"alice",\
            "since_s":12,"reason":"closed"} (user null without one, group for a group member); payload, raw \
            and line print the messages of $presence.SUBJECT as they are. An event this version cannot read \
            is noted on stderr.

            With --group NAME the patterns are subscribed as a member of that group (QSUB): each message goes \
            to one member of the group, not to all of them. A member's messages are not checked for gaps.

            After a lost connection it reconnects with backoff and resubscribes (unless --no-reconnect). \
            With a server that has RESUME (protocol 1.1), each subject picks up after the last message \
            printed, with no duplicate: what the server's history still holds is replayed, and stderr says \
            what came back and what is gone for good:
              fanout: recovered 12 messages on orders
              fanout: missed 5 messages on orders (history too short)
              fanout: missed messages on orders (unknown: the server's numbering restarted)
            With an older server it reports any gap in a subject's sequence numbers.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case payload, line, json, raw
        /// With `--presence`: `<subject> join|leave <member>...`.
        case event
    }

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("Subjects or patterns (* one token, > the rest).", valueName: "subject"))
    var subjects: [String]

    @Option(name: .long, help: """
        payload (the message bytes and a LF), raw (the bytes alone), line (the MSG or BMSG push), json \
        (subject, seq, payload or payload_base64), or with --presence event (its default: the subject and the \
        join or leave) and json (the event's fields).
        """)
    var format: Format?

    @Flag(name: .long, help: "Print the subjects' joins and leaves (subscribe to $presence.SUBJECT).")
    var presence = false

    @Option(name: .long, help: ArgumentHelp(
        "Subscribe as a member of this group: each message goes to one member only.", valueName: "name"))
    var group: String?

    @Option(name: .long, help: "Exit after this many messages.")
    var count: Int?

    @Option(name: .long, help: ArgumentHelp(
        "First print the newest N messages the server keeps for each subject (concrete subjects only).",
        valueName: "n"))
    var last: Int?

    @Flag(name: .long, help: "Exit when the connection is lost instead of reconnecting.")
    var noReconnect = false

    func validate() throws {
        guard !subjects.isEmpty else { throw ValidationError("give at least one subject") }
        try checkWord { () throws(ClientError) in try CommandWords.checkPatterns(subjects) }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if format == .event && !presence { throw ValidationError("--format event goes with --presence") }
        if presence {
            if group != nil { throw ValidationError("--presence does not go with --group") }
            try checkWord { () throws(ClientError) in
                try CommandWords.checkPatterns(subjects.map(PresenceText.eventSubject))
            }
        }
        if let group {
            try validateGroupName(group)
            if last != nil { throw ValidationError("--last subscribes plainly: it does not go with --group") }
        }
        if let last {
            guard last >= 1 else { throw ValidationError("--last must be at least 1") }
            // LAST takes one concrete subject: a pattern has a token that is exactly * or >.
            if let pattern = subjects.first(where: Subject.isWildcard) {
                throw ValidationError("--last needs concrete subjects: '\(pattern)' is a pattern")
            }
        }
    }

    func run() throws {
        let session = try Session(connection, reconnect: noReconnect ? .never : ReconnectPolicy())
        let client = session.client
        let output = StandardOutput()
        var received = 0
        let limit = count
        let format = self.format ?? (presence ? .event : .payload)
        // Joins and leaves read as such (event, json); the other formats print the $presence. messages as they are.
        let typedPresence = presence && (format == .event || format == .json)
        let patterns = presence ? subjects.map(PresenceText.eventSubject) : subjects
        let server = connection.serverText
        client.onEvent = { event in
            switch event {
            case .disconnected(let reason):
                if self.noReconnect {
                    output.flush()
                    session.fail(.disconnected(reason))
                } else {
                    printError("connection to \(server) lost: \(reason)")
                }
            case .reconnecting(let attempt, let delay):
                printError("reconnecting in \(Int((delay / .milliseconds(1)).rounded())) ms (attempt \(attempt))")
            case .connected(_, let reconnect) where reconnect:
                printError("reconnected to \(server)")
            case .resubscribed(let count):
                printError("resubscribed to \(count) subject\(count == 1 ? "" : "s")")
            case .resubscribeFailed(let patterns, let error):
                printError("could not resubscribe to \(patterns.joined(separator: " ")): \(error)")
            case .resumed(let subject, let recovered, let missed):
                for line in Self.resumeReport(subject: subject, recovered: recovered, missed: missed) { printError(line) }
            case .reset(let subject, _, _, let missed):
                printError(Self.resetReport(subject: subject, missed: missed))
            case .gap(let subject, let expected, let got):
                printError("gap on \(subject): expected seq \(expected), got \(got)")
            case .serverClosing(let error):
                printError("server is closing the connection: \(error.code) \(error.text)")
            case .revoked(let error):
                printError("server \(error.text)")
            case .authExpired(let error):
                // A push: the stream goes on, and with --token-command a fresh token is on its way.
                printError("server says \(error.code) \(error.text)")
            case .tokenRefreshFailed(let why):
                printError("token refresh failed: \(why); retrying")
            case .kicked(let reason):
                // Final: the client does not reconnect; stderr says why and the exit status is 1.
                output.flush()
                session.fail(.kicked(reason))
            case .connected:
                break
            }
        }
        client.onMessage = typedPresence ? nil : { message in
            guard limit.map({ received < $0 }) ?? true else { return }
            received += 1
            switch format {
            case .payload:
                message.payload.withUnsafeBytes { output.append($0) }
            case .raw:
                message.payload.withUnsafeBytes { output.append($0) }
                return
            case .line where message.payload.contains(0x0A):
                output.append("BMSG \(message.subject) \(message.seq) \(message.payload.count)\n")
                message.payload.withUnsafeBytes { output.append($0) }
            case .line:
                output.append("MSG \(message.subject) \(message.seq) ")
                message.payload.withUnsafeBytes { output.append($0) }
            case .json, .event:
                output.append(JSON.object([
                    ("subject", JSON.string(message.subject)), ("seq", String(message.seq)),
                    JSON.payload(message.payload),
                ]))
            }
            output.append(UInt8(ascii: "\n"))
        }
        client.afterReadBatch = {
            output.flush()
            if let limit, received >= limit { session.finish() }
        }
        try session.run {
            let failed: (Result<Int, ClientError>) -> Void = { result in
                if case .failure(let error) = result { session.fail(error) }
            }
            if typedPresence {
                client.subscribePresence(subjects, last: last, handler: { result in
                    guard limit.map({ received < $0 }) ?? true else { return }
                    switch result {
                    case .success(let update):
                        received += 1
                        output.append(format == .json ? PresenceJSON.update(update) : Self.presenceLine(update))
                        output.append(UInt8(ascii: "\n"))
                    case .failure(let unreadable):
                        printError(unreadable.description)
                    }
                }, completion: failed)
            } else if let group = self.group {
                client.subscribe(patterns, group: group, completion: failed)
            } else {
                client.subscribe(patterns, last: last, completion: failed)
            }
        }
        output.flush()
    }

    /// A join or leave as `--format event` prints it: the subject whose members changed, then the payload.
    static func presenceLine(_ update: PresenceUpdate) -> String {
        "\(update.subject) \(update.event.payload)"
    }

    /// What stderr says about a `RESET`: the messages lost, or that the numbering restarted.
    static func resetReport(subject: String, missed: MissedMessages) -> String {
        switch missed {
        case .count(let count):
            "missed \(count) message\(count == 1 ? "" : "s") on \(subject) (the server was cut off from its shard)"
        case .unknown:
            "numbering restarted on \(subject): missed messages unknown"
        }
    }

    /// What stderr says about a resumed subject: what came back, then what did not.
    static func resumeReport(subject: String, recovered: Int, missed: MissedMessages) -> [String] {
        let back = "recovered \(recovered) message\(recovered == 1 ? "" : "s") on \(subject)"
        switch missed {
        case .count(0):
            return [back]
        case .count(let count):
            let gone = "missed \(count) message\(count == 1 ? "" : "s") on \(subject) (history too short)"
            return recovered > 0 ? [back, gone] : [gone]
        case .unknown:
            let gone = "missed messages on \(subject) (unknown: the server's numbering restarted)"
            return recovered > 0 ? [back, gone] : [gone]
        }
    }
}

/// Turns the library's refusal of a word (`CommandWords`) into a usage error, so that a bad subject, pattern,
/// group or token stops the tool before it connects: nothing reaches the server.
func checkWord(_ option: String? = nil, _ check: () throws(ClientError) -> Void) throws {
    do throws(ClientError) {
        try check()
    } catch {
        throw ValidationError((option.map { $0 + ": " } ?? "") + error.description)
    }
}

/// A group name as QSUB takes it: 1 to 64 bytes of `[A-Za-z0-9_.-]`.
func validateGroupName(_ name: String) throws {
    try checkWord("--group") { () throws(ClientError) in try CommandWords.checkGroup(name) }
}
