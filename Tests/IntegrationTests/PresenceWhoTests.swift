import Foundation
import Testing

/// `WHO` (1.3): members oldest first, paged by a limit, the subject's rights and rules, and a reload's change
/// of the rules.
@Suite("Presence WHO", .threadPerTest, .timeLimit(.minutes(3)))
struct PresenceWhoTests {
    /// `+OK <count> <member> ...` in join order; a limit lists that many (0 none) and still counts all.
    @Test func whoListsInJoinOrderUpToTheLimit() throws {
        let daemon = try PresenceRig.daemon()
        let asker = try daemon.client()
        #expect(try asker.command("WHO chat.room") == "+OK 0")
        let members = try (0..<5).map { _ in try daemon.client() }
        let ids = try members.map { try PresenceRig.id(of: $0, asking: asker) }
        // Joined in reverse: the listing follows the joins, not the ids.
        for (index, member) in members.enumerated().reversed() {
            #expect(try member.command(index == 0 ? "QSUB g chat.room" : "SUB chat.room") == "+OK 1")
        }
        let words = ids.reversed().map { "id=\($0),user=-,since_s=0" + ($0 == ids[0] ? ",group=g" : "") }
        let timeless = { (reply: String) in reply.replacingOccurrences(of: #"since_s=[0-9]+"#, with: "since_s=0",
                                                                        options: .regularExpression) }
        #expect(timeless(try asker.command("WHO chat.room")) == "+OK 5 " + words.joined(separator: " "))
        #expect(timeless(try asker.command("WHO chat.room 2")) == "+OK 5 " + words.prefix(2).joined(separator: " "))
        #expect(try asker.command("WHO chat.room 0") == "+OK 5")
        // A member that leaves drops out of the middle; one that joins again comes last.
        #expect(try members[3].command("UNSUB chat.room") == "+OK 0")
        #expect(try members[3].command("SUB chat.room") == "+OK 1")
        let rejoined = [words[0], words[2], words[3], words[4], words[1]]
        #expect(timeless(try asker.command("WHO chat.room 100")) == "+OK 5 " + rejoined.joined(separator: " "))
    }

    /// Without a limit WHO lists 100; a limit over 1000 lists 1000; the count is always every member.
    @Test func whoListsAHundredByDefaultAndAThousandAtMost() throws {
        let daemon = try PresenceRig.daemon()
        let asker = try daemon.client()
        var members: [LineClient] = []
        for _ in 0..<1001 {
            let member = try daemon.client()
            try member.sendLine("SUB chat.crowd")
            members.append(member)
        }
        for member in members { #expect(try member.readLine() == "+OK 1") }
        let listed = try asker.command("WHO chat.crowd").split(separator: " ")
        #expect(listed.count == 2 + 100 && listed[1] == "1001")
        let most = try asker.command("WHO chat.crowd 5000").split(separator: " ")
        #expect(most.count == 2 + 1000 && most[1] == "1001")
        #expect(Set(most.dropFirst(2)).count == 1000)
    }

    /// A subject no rule keeps, a wildcard subject, a `$presence.` subject.
    @Test func whoOfWhatKeepsNoPresence() throws {
        let daemon = try PresenceRig.daemon()
        let asker = try daemon.client()
        #expect(try asker.command("WHO other.x") == "-ERR syntax no presence kept for other.x")
        #expect(try asker.command("WHO chat.*").hasPrefix("-ERR bad-subject "))
        #expect(try asker.command("WHO chat.>").hasPrefix("-ERR bad-subject "))
        #expect(try asker.command("WHO $presence.chat.x") == "-ERR syntax no presence kept for $presence.chat.x")
        #expect(try asker.command("WHO").hasPrefix("-ERR syntax "))
    }

    /// With auth on, WHO needs subscribe rights on the subject; a member shows its user.
    @Test func whoNeedsSubscribeRights() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        try (try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8) + "presence: [\"sensors.>\"]\n")
            .write(to: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config.path])
        let reader = try daemon.client()
        #expect(try reader.command("AUTH reader-secret-token") == "+OK")
        let id = try PresenceRig.id(of: reader, asking: reader)
        #expect(try reader.command("SUB sensors.room") == "+OK 1")
        #expect(try reader.command("WHO sensors.room").hasPrefix("+OK 1 id=\(id),user=reader,since_s="))
        #expect(try reader.command("WHO sensors.secret.x")
            == "-ERR denied not allowed to subscribe to 'sensors.secret.x'")
        let sensors = try daemon.client()
        #expect(try sensors.command("WHO sensors.room").hasPrefix("-ERR auth-required "))
        #expect(try sensors.command("AUTH sensor-secret-token") == "+OK")
        #expect(try sensors.command("WHO sensors.room") == "-ERR denied not allowed to subscribe to 'sensors.room'")
    }

    /// A reload that moves the rules: the subject no longer kept forgets its members without leaves; the newly
    /// kept one lists those who subscribe after the reload.
    @Test func aReloadAppliesToJoinsFromThenOn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        try "presence: [\"a.>\"]\n".write(to: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config.path])
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.>") == "+OK 1")
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: watcher)
        #expect(try member.command("SUB a.x b.x") == "+OK 2")
        #expect(try watcher.readLine() == "MSG $presence.a.x 1 join id=\(id),user=-,since_s=0")
        #expect(try watcher.command("WHO b.x") == "-ERR syntax no presence kept for b.x")
        try "presence: [\"b.>\"]\n".write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "configuration reloaded", timeout: 10)
        #expect(try watcher.command("WHO a.x") == "-ERR syntax no presence kept for a.x")
        #expect(try watcher.command("WHO b.x") == "+OK 0", "subscribed before the reload: not listed")
        #expect(try member.command("UNSUB a.x b.x") == "+OK 0")
        #expect(try member.command("SUB b.x") == "+OK 1")
        #expect(try watcher.readLine() == "MSG $presence.b.x 1 join id=\(id),user=-,since_s=0",
                "no leave for a.x, nor for b.x that was no member")
        #expect(try watcher.command("WHO b.x").hasPrefix("+OK 1 id=\(id),"))
        #expect(try watcher.pushes(beforeFence: "f") == [])
    }

    /// An invalid pattern in `presence` is a configuration error that names it.
    @Test func anInvalidPatternIsAConfigurationError() throws {
        let daemon = try Daemon(environment: ["FANOUTD_PRESENCE": "chat.>,bad..x"], waitForListening: false)
        #expect(daemon.waitForExit(timeout: 20) != 0)
        #expect(try daemon.stderr.waitForLine(containing: "presence:", timeout: 5).contains("'bad..x'"))
    }
}
