import Foundation
import Testing

/// `fanout` for presence (protocol 1.3): `who` against a real fanoutd keeping presence, `sub --presence`
/// printing joins and leaves as they happen (read through its stdout pipe), and `kick`, with the rule that a
/// kicked `fanout sub` says so and exits without reconnecting.
@Suite("The fanout client with presence", .threadPerTest, .timeLimit(.minutes(3)))
struct CLIPresenceTests {
    /// A daemon keeping presence for `chat.>`.
    private func presenceDaemon() throws -> Daemon {
        try Daemon(environment: ["FANOUTD_PRESENCE": "chat.>"])
    }

    /// The `<client>` of a member word (`id=7,user=-,...`).
    private func client(of member: String) throws -> String {
        guard member.hasPrefix("id="), let comma = member.firstIndex(of: ",") else {
            throw TestFailure("not a member: \(member)")
        }
        return String(member[member.index(member.startIndex, offsetBy: 3)..<comma])
    }

    // MARK: who

    @Test func whoListsTwoMembersOnePerLineOldestFirstWithTheCountOnStderr() throws {
        let daemon = try presenceDaemon()
        let server = "127.0.0.1:\(daemon.port)"
        let first = try daemon.client()
        #expect(try first.command("SUB chat.room1") == "+OK 1")
        let second = try daemon.client()
        #expect(try second.command("QSUB workers chat.room1") == "+OK 1")
        let wildcard = try daemon.client()
        #expect(try wildcard.command("SUB chat.*") == "+OK 1", "a wildcard makes no one a member")

        let listed = try FanoutTool.run(["who", "--server", server, "chat.room1"], timeout: 30)
        #expect(listed.status == 0)
        #expect(listed.stderr == ["fanout: 2 members"])
        try #require(listed.stdout.count == 2, "\(listed.stdout)")
        let (older, newer) = (listed.stdout[0], listed.stdout[1])
        #expect(older.hasPrefix("id=") && older.contains(",user=-,since_s=") && !older.contains("group="))
        #expect(newer.hasPrefix("id=") && newer.contains(",user=-,since_s=") && newer.hasSuffix(",group=workers"))
        let ids = try [older, newer].map { try #require(UInt64(try client(of: $0))) }
        #expect(ids[0] < ids[1], "join order: the first subscriber first")

        let piped = try FanoutTool.run(["who", "--server", server, "--limit", "1", "chat.room1"], timeout: 30)
        #expect(piped.stdout == [older], "the limit lists the oldest")
        #expect(piped.stderr == ["fanout: 2 members, 1 listed"])

        let json = try FanoutTool.run(["who", "--server", server, "--json", "chat.room1"], timeout: 30)
        #expect(json.status == 0)
        let parsed = try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8))
        let object = try #require(parsed as? [String: Any])
        #expect(object["count"] as? Int == 2)
        let members = try #require(object["members"] as? [[String: Any]])
        #expect(members.map { $0["id"] as? String } == ids.map { String($0) }, "ids as strings")
        #expect(members.allSatisfy { $0["user"] is NSNull })
        #expect(members.map { $0["group"] as? String } == [nil, "workers"])

        first.close()
        try eventually("the closed member is gone") {
            try FanoutTool.run(["who", "--server", server, "chat.room1"], timeout: 30).stdout == [newer]
        }
    }

    @Test func whoOfASubjectWithoutPresenceOrOfAPatternFails() throws {
        let daemon = try presenceDaemon()
        let server = "127.0.0.1:\(daemon.port)"
        let unkept = try FanoutTool.run(["who", "--server", server, "news.uk"], timeout: 30)
        #expect(unkept.status == 1)
        #expect(unkept.stderr == ["fanout: server error: syntax no presence kept for news.uk"])
        #expect(unkept.stdout.isEmpty)
        let pattern = try FanoutTool.run(["who", "--server", server, "chat.*"], timeout: 30)
        #expect(pattern.status == 64, "refused before connecting")
        let negative = try FanoutTool.run(["who", "--server", server, "--limit", "-1", "chat.room1"], timeout: 30)
        #expect(negative.status == 64)
    }

    // MARK: sub --presence

    @Test func subPresencePrintsEachJoinAndLeaveAsItHappens() throws {
        let daemon = try presenceDaemon()
        let server = "127.0.0.1:\(daemon.port)"
        let watcher = try FanoutTool(["sub", "--server", server, "--presence", "chat.room1"])
        try waitForSubscribers(daemon, subject: "$presence.chat.room1")

        let member = try daemon.client()
        #expect(try member.command("SUB chat.room1") == "+OK 1")
        // Each event reaches the pipe while the watcher keeps running: nothing is held back for more output.
        let join = try watcher.stdout.waitForLine(containing: " join ", timeout: 10)
        #expect(join.hasPrefix("chat.room1 join id=") && join.hasSuffix(",user=-,since_s=0"), "\(join)")
        let id = try client(of: String(join.dropFirst("chat.room1 join ".count)))

        #expect(try member.command("UNSUB chat.room1") == "+OK 0")
        let unsub = try watcher.stdout.waitForLine(containing: " leave ", timeout: 10)
        #expect(unsub.hasPrefix("chat.room1 leave id=\(id),user=-,since_s=") && unsub.hasSuffix(",reason=unsub"),
                "\(unsub)")

        #expect(try member.command("SUB chat.room1") == "+OK 1")
        _ = try watcher.stdout.waitForLine(containing: " join ", after: 1, timeout: 10)
        member.close()
        let closed = try watcher.stdout.waitForLine(containing: " leave ", after: 1, timeout: 10)
        #expect(closed.hasPrefix("chat.room1 leave id=\(id),user=-,since_s=") && closed.hasSuffix(",reason=closed"))
        #expect(watcher.stdout.all.count == 4, "one line per event: \(watcher.stdout.all)")
        #expect(watcher.process.isRunning)
    }

    /// Two nodes: `fanout who` on either lists the member as `<node>/<id>` (a string in JSON too), and `fanout
    /// kick` of that name works on the member's node and is refused, exit 1, on the other.
    @Test func whoAndKickAcrossTwoNodesNameTheMemberWithItsNode() throws {
        let rig = try ClusterRig(shards: 1, nodes: 2, clusterExtra: ClusterPresenceTests.settings)
        let (home, other) = (rig.nodes[0], rig.nodes[1])
        let node = try ClusterPresenceTests().nodeID(home)
        let member = try home.client(timeout: 15)
        #expect(try member.command("SUB chat.room1") == "+OK 1")
        let asker = try other.client(timeout: 15)
        try eventually("the other node lists the member") { try asker.command("WHO chat.room1").hasPrefix("+OK 1 ") }

        let listed = try FanoutTool.run(["who", "--server", "127.0.0.1:\(other.port)", "chat.room1"], timeout: 30)
        try #require(listed.stdout.count == 1, "\(listed)")
        #expect(listed.stdout[0].hasPrefix("id=\(node)/") && listed.stdout[0].contains(",user=-,since_s="))
        let name = try client(of: listed.stdout[0])
        let json = try FanoutTool.run(["who", "--server", "127.0.0.1:\(other.port)", "--json", "chat.room1"],
                                      timeout: 30)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8))
            as? [String: Any])
        #expect(object["count"] as? Int == 1)
        #expect((object["members"] as? [[String: Any]])?.first?["id"] as? String == name)

        let elsewhere = try FanoutTool.run(["kick", "--server", "127.0.0.1:\(other.port)", name], timeout: 30)
        #expect(elsewhere.status == 1)
        #expect(elsewhere.stderr.first?.hasPrefix("fanout: server error: syntax \(name) is a client of node \(node)")
                == true, "\(elsewhere.stderr)")
        let kicked = try FanoutTool.run(["kick", "--server", "127.0.0.1:\(home.port)", name], timeout: 30)
        #expect(kicked.status == 0 && kicked.stdout == ["1"], "\(kicked)")
        #expect(try member.readUntilClosed() == ["-ERR kicked by an administrator"])
    }

    @Test func subPresenceAsJSONCarriesTheEventsFieldsAndSeq() throws {
        let daemon = try presenceDaemon()
        let server = "127.0.0.1:\(daemon.port)"
        let watcher = try FanoutTool(["sub", "--server", server, "--presence", "--format", "json", "--count", "2",
                                      "chat.>"])
        try waitForSubscribers(daemon, subject: "$presence.chat.>")
        let member = try daemon.client()
        #expect(try member.command("QSUB g chat.a") == "+OK 1")
        member.close()
        let result = watcher.finish(timeout: 20)
        #expect(result.status == 0)
        try #require(result.stdout.count == 2, "\(result.stdout) \(result.stderr)")
        let events = try result.stdout.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(events.map { $0["subject"] as? String } == ["chat.a", "chat.a"])
        #expect(events.map { $0["event"] as? String } == ["join", "leave"])
        #expect(events.map { $0["seq"] as? Int } == [1, 2], "numbered like any message")
        #expect(events.map { $0["group"] as? String } == ["g", "g"])
        #expect(events[0]["reason"] == nil && events[1]["reason"] as? String == "closed")
        #expect(events[0]["since_s"] as? Int == 0 && events[0]["user"] is NSNull)
    }

    @Test func presenceOptionsAreChecked() throws {
        #expect(try FanoutTool.run(["sub", "--format", "event", "x"]).status == 64, "event goes with --presence")
        #expect(try FanoutTool.run(["sub", "--presence", "--group", "g", "x"]).status == 64)
        #expect(try FanoutTool.run(["kick", "7 8"]).status == 64)
        #expect(try FanoutTool.run(["kick", "7", String(repeating: "r", count: 257)]).status == 64)
    }

    // MARK: kick

    @Test func kickClosesAMemberWhoseSubSaysSoAndWhoseLeaveSaysKicked() throws {
        let daemon = try presenceDaemon()
        let server = "127.0.0.1:\(daemon.port)"
        let watcher = try FanoutTool(["sub", "--server", server, "--presence", "chat.room1"])
        try waitForSubscribers(daemon, subject: "$presence.chat.room1")
        // A subscriber that reconnects after a lost connection (the default): a kick must end it all the same.
        let victim = try FanoutTool(["sub", "--server", server, "chat.room1"])
        let join = try watcher.stdout.waitForLine(containing: " join ", timeout: 10)
        let id = try client(of: String(join.dropFirst("chat.room1 join ".count)))

        let kick = try FanoutTool.run(["kick", "--server", server, id, "spamming", "the", "room"], timeout: 30)
        #expect(kick.status == 0, "auth off: every connection may kick (\(kick.stderr))")
        #expect(kick.stdout == ["1"])
        let ended = victim.finish(timeout: 20)
        #expect(ended.status == 1)
        #expect(ended.stderr == ["fanout: kicked by the server: spamming the room"])
        let leave = try watcher.stdout.waitForLine(containing: " leave ", timeout: 10)
        #expect(leave.hasPrefix("chat.room1 leave id=\(id),user=-,since_s=") && leave.hasSuffix(",reason=kicked"),
                "\(leave)")

        let after = try FanoutTool.run(["who", "--server", server, "chat.room1"], timeout: 30)
        #expect(after.stdout.isEmpty && after.stderr == ["fanout: 0 members"], "the kicked sub did not come back")
        let none = try FanoutTool.run(["kick", "--server", server, id], timeout: 30)
        #expect(none.status == 0 && none.stdout == ["0"], "no connection matched")
    }

    /// Users file (auth.yaml): only the administrator's `fanout kick` closes anything; `user=` closes them all.
    @Test func kickNeedsAnAdministratorAndUserClosesEveryConnectionOfTheUser() throws {
        let daemon = try Daemon(arguments: ["--config", try fixture("auth.yaml")])
        let server = "127.0.0.1:\(daemon.port)"
        let sensors = try (0..<2).map { _ in
            let client = try daemon.client()
            #expect(try client.command("AUTH sensor-secret-token") == "+OK")
            return client
        }
        let denied = try FanoutTool.run(["kick", "--server", server, "--token", "sensor-secret-token", "user=reader"],
                                        timeout: 30)
        #expect(denied.status == 1)
        #expect(denied.stderr == ["fanout: server error: denied KICK needs an administrator"])
        let kicked = try FanoutTool.run(["kick", "--server", server, "--token", "reader-secret-token", "user=sensors",
                                         "misbehaving"], timeout: 30)
        #expect(kicked.status == 0)
        #expect(kicked.stdout == ["2"])
        for connection in sensors {
            #expect(try connection.readUntilClosed() == ["-ERR kicked misbehaving"])
        }
    }

    @Test func kickSendsTheClientAndReasonAndPrintsTheCount() throws {
        let server = try ScriptedServer()
        let kick = try FanoutTool(["kick", "--server", "127.0.0.1:\(server.port)", "user=alice", "spamming", "the",
                                   "room"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=none epoch=E1\n")
        #expect(try connection.readLine() == "KICK user=alice spamming the room")
        try connection.send("+OK 2\n")
        let result = kick.finish(timeout: 20)
        #expect(result.status == 0)
        #expect(result.stdout == ["2"])

        let refused = try FanoutTool(["kick", "--server", "127.0.0.1:\(server.port)", "7"])
        let second = try server.accept()
        try second.send("+HELLO fanout/1 scripted auth=required epoch=E1\n")
        #expect(try second.readLine() == "KICK 7")
        try second.send("-ERR denied KICK needs an administrator\n")
        let denied = refused.finish(timeout: 20)
        #expect(denied.status == 1)
        #expect(denied.stdout.isEmpty)
        #expect(denied.stderr == ["fanout: server error: denied KICK needs an administrator"])
    }

    @Test func aKickedSubSaysSoAndExitsWithoutReconnecting() throws {
        let server = try ScriptedServer()
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(server.port)", "--presence", "chat.room1"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=none\n")
        #expect(try connection.readLine() == "SUB $presence.chat.room1")
        try connection.send("+OK 1\nMSG $presence.chat.room1 1 join id=3,user=-,since_s=0\n")
        _ = try sub.stdout.waitForLine(containing: "join id=3", timeout: 10)
        // The connection stays open: the farewell alone ends the tool, which a lost connection would not (it
        // reconnects, and stays up until interrupted).
        try connection.send("-ERR kicked spamming the room\n")
        let result = sub.finish(timeout: 20)
        #expect(result.status == 1)
        #expect(result.stdout == ["chat.room1 join id=3,user=-,since_s=0"])
        #expect(result.stderr == ["fanout: kicked by the server: spamming the room"], "no reconnect, one line")
        withExtendedLifetime(connection) {}
    }

    @Test func aKickedAnswerExitsWithoutReconnecting() throws {
        let server = try ScriptedServer()
        let answer = try FanoutTool(["answer", "--server", "127.0.0.1:\(server.port)", "svc.time", "--", "true"])
        let connection = try server.accept()
        try connection.send("+HELLO fanout/1 scripted auth=none\n")
        #expect(try connection.readLine() == "SUB svc.time")
        try connection.send("+OK 1\n-ERR kicked by an administrator\n")
        let result = answer.finish(timeout: 20)
        #expect(result.status == 1)
        #expect(result.stderr == ["fanout: kicked by the server: by an administrator"])
        withExtendedLifetime(connection) {}
    }
}
