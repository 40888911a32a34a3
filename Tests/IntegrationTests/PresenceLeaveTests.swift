import Foundation
import Testing

/// Presence (1.3): each way a connection goes gives its leaves their reason (idle timeout, slow consumer,
/// shutdown), and a connection that leaves many subjects at once leaves them in the order it joined them.
@Suite("Presence leaves", .threadPerTest, .timeLimit(.minutes(3)))
struct PresenceLeaveTests {
    /// A member closed for idling leaves with reason=timeout; the join and leave are kept in history, read back
    /// with LAST by a client that comes afterwards (a watcher would idle out too).
    @Test func anIdleMemberLeavesWithReasonTimeout() throws {
        let daemon = try PresenceRig.daemon(environment: ["FANOUTD_IDLE_TIMEOUT": "1"])
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: member)
        #expect(try member.command("SUB chat.idle") == "+OK 1")
        #expect(try member.readLine().hasPrefix("-ERR idle-timeout "))
        #expect(try member.readLineOrEOF() == nil)
        try eventually("the leave is kept") {
            let reader = try daemon.client()
            guard try reader.command("LAST $presence.chat.idle 5").hasPrefix("+OK 1 ") else { return false }
            return try PresenceRig.readTimeless(2, from: reader) == [
                "MSG $presence.chat.idle 1 join id=\(id),user=-,since_s=0",
                "MSG $presence.chat.idle 2 leave id=\(id),user=-,since_s=*,reason=timeout",
            ]
        }
    }

    /// A member that never reads while it is flooded is dropped as a slow consumer: its leave says so.
    @Test func aMemberDroppedAsASlowConsumerLeavesWithThatReason() throws {
        let daemon = try PresenceRig.daemon(environment: ["FANOUTD_MAX_PENDING_BYTES": "262144",
                                                          "FANOUTD_SEND_BUFFER_BYTES": "4096"])
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.flood") == "+OK 1")
        let member = try LineClient(port: daemon.port, receiveBuffer: 4096)
        #expect(try member.readLine().hasPrefix("+HELLO "))
        let id = try PresenceRig.id(of: member, asking: watcher)
        #expect(try member.command("SUB chat.flood") == "+OK 1")
        #expect(try watcher.readLine() == "MSG $presence.chat.flood 1 join id=\(id),user=-,since_s=0")
        let publisher = try daemon.client(timeout: 30)
        let payload = String(repeating: "f", count: 1000)
        try publisher.send((0..<2000).map { _ in "PUB chat.flood \(payload)\n" }.joined())
        #expect(PresenceRig.timeless(try watcher.readLine())
            == "MSG $presence.chat.flood 2 leave id=\(id),user=-,since_s=*,reason=slow-consumer")
        #expect(infoFields(try watcher.command("INFO"))["slow_consumers"] == "1")
    }

    /// A member an administrator kicks is told why, closed, and leaves with reason=kicked; the kicker's +OK comes
    /// before the leave it watches (auth is off here, so any connection may KICK).
    @Test func aKickedMemberLeavesWithReasonKicked() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.kick") == "+OK 1")
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: watcher)
        #expect(try member.command("SUB chat.kick") == "+OK 1")
        #expect(try watcher.readLine() == "MSG $presence.chat.kick 1 join id=\(id),user=-,since_s=0")
        #expect(try watcher.command("KICK \(id) flooding the room") == "+OK 1")
        #expect(try member.readLine() == "-ERR kicked flooding the room")
        #expect(try member.readLineOrEOF() == nil)
        #expect(PresenceRig.timeless(try watcher.readLine())
            == "MSG $presence.chat.kick 2 leave id=\(id),user=-,since_s=*,reason=kicked")
    }

    /// SIGTERM closes every member with reason=shutdown: their leaves are published before the server stops,
    /// and reach history on disk, read back after a restart.
    @Test func shutdownLeavesReachHistoryOnDisk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["FANOUTD_HISTORY_DIR": directory.path]
        let daemon = try PresenceRig.daemon(environment: environment)
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.>") == "+OK 1")
        let members = try (0..<3).map { _ in try daemon.client() }
        let ids = try members.map { try PresenceRig.id(of: $0, asking: watcher) }
        for member in members { #expect(try member.command("SUB chat.down chat.other") == "+OK 2") }
        #expect(try PresenceRig.read(6, from: watcher).count == 6)
        daemon.signal(SIGTERM)
        #expect(try watcher.readLine().hasPrefix("-ERR shutting-down"))
        #expect(daemon.waitForExit(timeout: 20) == 0)
        let restarted = try PresenceRig.daemon(environment: environment)
        let reader = try restarted.client()
        #expect(try reader.command("LAST $presence.chat.down 10").hasPrefix("+OK 1 "))
        let lines = try PresenceRig.readTimeless(6, from: reader)
        #expect(lines.prefix(3) == ids.enumerated().map {
            "MSG $presence.chat.down \($0.offset + 1) join id=\($0.element),user=-,since_s=0"
        }[...])
        // The server closes its connections in id order, and each leaves its subjects in join order.
        #expect(lines.suffix(3) == ids.enumerated().map {
            "MSG $presence.chat.down \($0.offset + 4) leave id=\($0.element),user=-,since_s=*,reason=shutdown"
        }[...])
    }

    /// A connection that is a member of 1,000 subjects and closes: 1,000 leaves, one per subject, in the order
    /// it joined them (here not the subjects' order), each after that subject's join.
    @Test func aThousandSubjectsLeaveInJoinOrder() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client(timeout: 30)
        #expect(try watcher.command("SUB $presence.many.>") == "+OK 1")
        let member = try daemon.client(timeout: 30)
        let id = try PresenceRig.id(of: member, asking: watcher)
        // Shuffled, but the same in every run: 997 is prime, so i * 997 mod 1000 visits each number once.
        let subjects = (0..<1000).map { "many.\(($0 * 997) % 1000)" }
        #expect(try member.command("SUB " + subjects.joined(separator: " ")) == "+OK 1000")
        #expect(try PresenceRig.read(1000, from: watcher) == subjects.map {
            "MSG $presence.\($0) 1 join id=\(id),user=-,since_s=0"
        })
        member.close()
        #expect(try PresenceRig.readTimeless(1000, from: watcher) == subjects.map {
            "MSG $presence.\($0) 2 leave id=\(id),user=-,since_s=*,reason=closed"
        })
        let info = infoFields(try watcher.command("INFO"))
        #expect(info["presence_members"] == "0" && info["presence_subjects"] == "0")
        #expect(info["presence_events"] == "2000")
    }

    /// A subscription a reload revokes ends the membership with reason=unsub; the leave names the user.
    @Test func aRevokedSubscriptionLeavesWithReasonUnsub() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml")
        let base = try String(contentsOfFile: try fixture("auth.yaml"), encoding: .utf8)
        // The token is member-secret-token.
        let hash = "sha256$7f29adb10d064a044bcbac73ff38f28d$"
            + "e1d5dda749bde23415d968f3d6ce77f77094352db7d6e68834851ea4a1840c63"
        let member = { (subscribe: String) in
            base + """
              member:
                token_hash: "\(hash)"
                subscribe: ["\(subscribe)"]
            presence: ["chat.>"]

            """
        }
        try member("chat.>").write(to: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config.path])
        let watcher = try daemon.client()
        #expect(try watcher.command("AUTH reader-secret-token") == "+OK")
        #expect(try watcher.command("SUB $presence.chat.room") == "+OK 1")
        let client = try daemon.client()
        #expect(try client.command("AUTH member-secret-token") == "+OK")
        let id = try PresenceRig.id(of: client, asking: watcher)
        #expect(try client.command("SUB chat.room") == "+OK 1")
        #expect(try watcher.readLine() == "MSG $presence.chat.room 1 join id=\(id),user=member,since_s=0")
        try member("other.>").write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(try client.readLine().hasPrefix("-ERR denied revoked"))
        #expect(PresenceRig.timeless(try watcher.readLine())
            == "MSG $presence.chat.room 2 leave id=\(id),user=member,since_s=*,reason=unsub")
    }
}
