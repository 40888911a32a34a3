import Foundation
import Testing

/// Presence (1.3) over TCP against a real fanoutd: joins and leaves on `$presence.<subject>` with their exact
/// payloads and seqs, group members and mode changes, and what keeps no presence.
@Suite("Presence", .threadPerTest, .timeLimit(.minutes(2)))
struct PresenceTests {
    /// SUB joins, UNSUB leaves with reason=unsub, a second SUB joins again: numbered 1, 2, 3 on the subject's
    /// `$presence.` subject, each payload exactly the contract's.
    @Test func subAndUnsubJoinAndLeave() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.room1") == "+OK 1")
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: member)
        #expect(try member.command("SUB chat.room1") == "+OK 1")
        #expect(try member.command("UNSUB chat.room1") == "+OK 0")
        #expect(try member.command("SUB chat.room1 other.x") == "+OK 2")
        #expect(try PresenceRig.readTimeless(3, from: watcher) == [
            "MSG $presence.chat.room1 1 join id=\(id),user=-,since_s=0",
            "MSG $presence.chat.room1 2 leave id=\(id),user=-,since_s=*,reason=unsub",
            "MSG $presence.chat.room1 3 join id=\(id),user=-,since_s=0",
        ])
        #expect(try watcher.pushes(beforeFence: "nothing-more") == [], "other.x keeps no presence")
    }

    /// QUIT, a close (FIN) and a reset each end a membership with reason=closed; the leave gives the whole
    /// seconds it was a member.
    @Test func aClosedConnectionLeavesWithReasonClosed() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.>") == "+OK 1")
        let quitting = try daemon.client()
        let closing = try daemon.client()
        let resetting = try daemon.client()
        let ids = try [quitting, closing, resetting].map { try PresenceRig.id(of: $0, asking: watcher) }
        for client in [quitting, closing, resetting] { #expect(try client.command("SUB chat.a") == "+OK 1") }
        #expect(try PresenceRig.read(3, from: watcher) == ids.enumerated().map {
            "MSG $presence.chat.a \($0.offset + 1) join id=\($0.element),user=-,since_s=0"
        })
        #expect(try quitting.command("QUIT") == "+OK bye")
        #expect(PresenceRig.timeless(try watcher.readLine())
                == "MSG $presence.chat.a 4 leave id=\(ids[0]),user=-,since_s=*,reason=closed")
        closing.close()
        #expect(PresenceRig.timeless(try watcher.readLine())
                == "MSG $presence.chat.a 5 leave id=\(ids[1]),user=-,since_s=*,reason=closed")
        resetting.reset()
        #expect(PresenceRig.timeless(try watcher.readLine())
                == "MSG $presence.chat.a 6 leave id=\(ids[2]),user=-,since_s=*,reason=closed")
    }

    /// since_s counts whole seconds of membership, in WHO and in the leave.
    @Test func sinceCountsWholeSeconds() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.slow") == "+OK 1")
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: watcher)
        #expect(try member.command("SUB chat.slow") == "+OK 1")
        #expect(try watcher.readLine() == "MSG $presence.chat.slow 1 join id=\(id),user=-,since_s=0")
        try eventually(timeout: 5, "a second has passed") {
            try watcher.command("WHO chat.slow") == "+OK 1 id=\(id),user=-,since_s=1"
        }
        #expect(try member.command("UNSUB") == "+OK 0")
        let leave = try watcher.readLine()
        #expect(leave.hasPrefix("MSG $presence.chat.slow 2 leave id=\(id),user=-,since_s="))
        #expect(leave.hasSuffix(",reason=unsub"))
        #expect(leave != "MSG $presence.chat.slow 2 leave id=\(id),user=-,since_s=0,reason=unsub")
    }

    /// QSUB g S makes a member with group=g; moving between plain and a group, or to another group, is a leave
    /// (unsub) then a join with the new group; RESUME and LAST subscribe plainly, and join like SUB.
    @Test func groupMembersAndModeChanges() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.>") == "+OK 1")
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: watcher)
        let tag = "id=\(id),user=-,since_s=0"
        let left = "id=\(id),user=-,since_s=*"
        #expect(try member.command("QSUB g chat.x") == "+OK 1")
        #expect(try member.command("QSUB g chat.x") == "+OK 1")
        #expect(try member.command("QSUB h chat.x") == "+OK 1")
        #expect(try member.command("SUB chat.x") == "+OK 1")
        #expect(try member.command("QSUB g chat.x") == "+OK 1")
        #expect(try member.command("RESUME chat.x").hasPrefix("+OK 1 "))
        #expect(try member.command("LAST chat.y").hasPrefix("+OK 2 "))
        #expect(try PresenceRig.readTimeless(10, from: watcher) == [
            "MSG $presence.chat.x 1 join \(tag),group=g",
            "MSG $presence.chat.x 2 leave \(left),group=g,reason=unsub",
            "MSG $presence.chat.x 3 join \(tag),group=h",
            "MSG $presence.chat.x 4 leave \(left),group=h,reason=unsub",
            "MSG $presence.chat.x 5 join \(tag)",
            "MSG $presence.chat.x 6 leave \(left),reason=unsub",
            "MSG $presence.chat.x 7 join \(tag),group=g",
            "MSG $presence.chat.x 8 leave \(left),group=g,reason=unsub",
            "MSG $presence.chat.x 9 join \(tag)",
            "MSG $presence.chat.y 1 join \(tag)",
        ])
        #expect(try watcher.command("WHO chat.x").hasPrefix("+OK 1 id=\(id),user=-,since_s="))
        #expect(try watcher.pushes(beforeFence: "f") == [], "a QSUB into the group it holds changes nothing")
    }

    /// Wildcard subscriptions make no one a member; `$presence.` subjects keep none even under `>`; a subject
    /// over 245 bytes keeps none, one of 245 does.
    @Test func whatKeepsNoPresence() throws {
        let daemon = try Daemon(environment: ["FANOUTD_PRESENCE": ">"])
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.>") == "+OK 1")
        let member = try daemon.client()
        let id = try PresenceRig.id(of: member, asking: watcher)
        let longest = "l." + String(repeating: "x", count: 243)
        let tooLong = longest + "y"
        #expect(try member.command("SUB chat.* chat.> > $presence.chat.x \(tooLong)") == "+OK 5")
        #expect(try watcher.pushes(beforeFence: "none") == [])
        #expect(try member.command("WHO chat.x") == "+OK 0")
        #expect(try member.command("WHO $presence.chat.x") == "-ERR syntax no presence kept for $presence.chat.x")
        #expect(try member.command("WHO \(tooLong)") == "-ERR syntax no presence kept for \(tooLong)")
        #expect(try member.command("SUB \(longest)") == "+OK 6")
        let join = "MSG $presence.\(longest) 1 join id=\(id),user=-,since_s=0"
        #expect(try watcher.readLine() == join)
        #expect(try member.readLine() == join, "the member holds > too")
        #expect(try member.command("WHO \(longest)").hasPrefix("+OK 1 id=\(id),user=-,since_s="))
    }

    /// Nothing keeps presence by default: WHO says so, and no SUB publishes a join.
    @Test func offByDefault() throws {
        let daemon = try Daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.>") == "+OK 1")
        let member = try daemon.client()
        #expect(try member.command("SUB chat.x") == "+OK 1")
        #expect(try member.command("WHO chat.x") == "-ERR syntax no presence kept for chat.x")
        #expect(try member.command("UNSUB chat.x") == "+OK 0")
        #expect(try watcher.pushes(beforeFence: "none") == [])
        let info = infoFields(try watcher.command("INFO"))
        #expect(info["presence_subjects"] == "0" && info["presence_members"] == "0" && info["presence_events"] == "0")
    }

    /// INFO counts the kept subjects with members, the memberships and the events published.
    @Test func infoCountsSubjectsMembersAndEvents() throws {
        let daemon = try PresenceRig.daemon()
        let watcher = try daemon.client()
        #expect(try watcher.command("SUB $presence.chat.>") == "+OK 1")
        let first = try daemon.client()
        let second = try daemon.client()
        #expect(try first.command("SUB chat.a chat.b") == "+OK 2")
        #expect(try second.command("SUB chat.a plain.x") == "+OK 2")
        #expect(try second.command("UNSUB chat.a") == "+OK 1")
        #expect(try PresenceRig.read(4, from: watcher).count == 4)
        let info = infoFields(try watcher.command("INFO"))
        #expect(info["presence_subjects"] == "2")
        #expect(info["presence_members"] == "2")
        #expect(info["presence_events"] == "4")
    }
}
