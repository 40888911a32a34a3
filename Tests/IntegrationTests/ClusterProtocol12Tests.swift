import FanoutTestSupport
import Foundation
import Testing

/// Protocol 1.2 on three nodes over two Redis shards: a group's message goes to one member cluster-wide, and
/// any bytes pass through Lua and streams unchanged.
@Suite("Several nodes, 1.2", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterProtocol12Tests {
    /// Members of one group on every node, subjects on both shards: each message reaches exactly one member.
    @Test func aGroupsMessageGoesToOneMemberClusterWide() throws {
        let rig = try ClusterRig(shards: 2, nodes: 3)
        let subjects = rig.subjects(prefix: "jobs", perShard: 1)
        var members: [LineClient] = []
        for node in rig.nodes {
            for _ in 0..<2 {
                let member = try node.client(timeout: 15)
                #expect(try member.command("QSUB workers jobs.*") == "+OK 1")
                members.append(member)
            }
        }
        let publisher = try rig.nodes[0].client(timeout: 15)
        let perSubject = 60
        var batch = ""
        for round in 0..<perSubject {
            for subject in subjects { batch += "PUB \(subject) m\(round)\n" }
        }
        try publisher.send(batch)
        for _ in 0..<(perSubject * subjects.count) { #expect(try publisher.readLine() == "+OK 3") }
        let total = perSubject * subjects.count
        var seen: [String: Int] = [:]
        var received = 0
        let deadline = Date().addingTimeInterval(30)
        while received < total && Date() < deadline {
            for member in members {
                for line in try member.pushes() where line.hasPrefix("MSG ") {
                    seen[line, default: 0] += 1
                    received += 1
                }
            }
        }
        #expect(received == total, "\(received) deliveries of \(total) messages")
        #expect(seen.count == total && seen.values.allSatisfy { $0 == 1 }, "each message to exactly one member")
        for member in members { #expect(try member.pushes().isEmpty, "no late duplicate") }
        // Every node received the runs and claimed them; the claims won and lost add up (nodes may gather the
        // same messages into different runs, so the counts need not be in proportion).
        let claims = try rig.nodes.map { node -> (won: Int, lost: Int) in
            let info = infoFields(try node.client(timeout: 15).command("INFO"))
            return (Int(info["cluster_group_claims_won"] ?? "") ?? -1, Int(info["cluster_group_claims_lost"] ?? "") ?? -1)
        }
        let won = claims.map(\.won).reduce(0, +)
        let lost = claims.map(\.lost).reduce(0, +)
        #expect(won > 0 && lost > 0, "runs claimed: \(claims)")
    }

    /// A question reaches the receivers on every node (one member of a group cluster-wide, never the asker);
    /// answers travel back with `<node>/<id>`; DONE's counts add up across nodes, and a responder that
    /// vanishes counts as gone at once.
    @Test func questionsGatherAcrossNodes() throws {
        let rig = try ClusterRig(shards: 2, nodes: 3)
        let plain = try [rig.nodes[0], rig.nodes[1]].map { try $0.client(timeout: 15) }
        for client in plain { #expect(try client.command("SUB svc.x") == "+OK 1") }
        let pool = try [rig.nodes[1], rig.nodes[2], rig.nodes[2]].map { try $0.client(timeout: 15) }
        for member in pool { #expect(try member.command("QSUB pool svc.*") == "+OK 1") }
        let asker = try rig.nodes[0].client(timeout: 15)
        #expect(try asker.command("SUB svc.x") == "+OK 1")
        for round in 0..<3 {
            let reply = try asker.command("ASK svc.x 10000 0 q\(round)").split(separator: " ")
            #expect(reply.count == 3 && reply[0] == "+OK" && reply[2] == "3", "\(reply)")
            let id = String(reply[1])
            for client in plain {
                #expect(try client.readLine() == "ASK svc.x \(id) q\(round)")
                #expect(try client.command("ANSWER \(id) plain") == "+OK 1")
            }
            // The group's member is asked once its node's claim is back: wait for it, then check nobody else.
            var chosen = 0
            let deadline = Date().addingTimeInterval(10)
            while chosen == 0 && Date() < deadline {
                for member in pool {
                    let lines = try member.pushes()
                    guard let question = lines.first else { continue }
                    chosen += 1
                    #expect(question == "ASK svc.x \(id) q\(round)")
                    #expect(try member.command("ANSWER \(id) pooled") == "+OK 1")
                }
            }
            #expect(chosen == 1, "one member of the group cluster-wide")
            var answers: [String] = []
            for _ in 0..<3 { answers.append(try asker.readLine()) }
            #expect(answers.allSatisfy { $0.wholeMatch(of: #/ANSWER \S+ [a-z0-9]+/\d+ (plain|pooled)/#) != nil }, "\(answers)")
            #expect(try asker.readLine() == "DONE \(id) asked=3 answered=3 gone=0")
        }
        // A responder on another node vanishes: gone, at once.
        let started = Date()
        let id = String(try asker.command("ASK svc.x 10000 0 last").split(separator: " ")[1])
        _ = try plain[0].readLine()
        _ = try plain[1].readLine()
        plain[1].close()
        #expect(try plain[0].command("ANSWER \(id) here") == "+OK 1")
        var answeredByPool = false
        let deadline = Date().addingTimeInterval(10)
        while !answeredByPool && Date() < deadline {
            for member in pool {
                if let question = try member.pushes().first, question.hasPrefix("ASK ") {
                    #expect(try member.command("ANSWER \(id) pooled") == "+OK 1")
                    answeredByPool = true
                }
            }
        }
        var lines: [String] = []
        while lines.last?.hasPrefix("DONE ") != true { lines.append(try asker.readLine()) }
        #expect(lines.last == "DONE \(id) asked=3 answered=2 gone=1", "\(lines)")
        #expect(Date().timeIntervalSince(started) < 5)
    }

    /// BPUB's bytes, LF and NUL included, cross Lua and the Redis stream unchanged: live on another node, and
    /// replayed there by LAST.
    @Test func anyBytesCrossTheEngine() throws {
        let rig = try ClusterRig(shards: 2, nodes: 2)
        let subscriber = try rig.nodes[1].client(timeout: 15)
        #expect(try subscriber.command("SUB h.doc") == "+OK 1")
        let publisher = try rig.nodes[0].client(timeout: 15)
        let payload: [UInt8] = Array("a\nb".utf8) + [0, 0xFE] + Array("\r\nc".utf8)
        try publisher.send(Array("BPUB h.doc \(payload.count)\n".utf8) + payload + [0x0A])
        try publisher.send("PUB h.doc plain\n")
        #expect(try publisher.readLine() == "+OK 1")
        #expect(try publisher.readLine() == "+OK 1")
        #expect(try subscriber.readLine() == "BMSG h.doc 1 \(payload.count)")
        #expect(try subscriber.readBytes(payload.count + 1) == payload + [0x0A])
        #expect(try subscriber.readLine() == "MSG h.doc 2 plain")
        let late = try rig.nodes[1].client(timeout: 15)
        #expect(try late.command("LAST h.doc 2").hasSuffix("replayed=2 missed=0"))
        #expect(try late.readLine() == "BMSG h.doc 1 \(payload.count)")
        #expect(try late.readBytes(payload.count + 1) == payload + [0x0A])
        #expect(try late.readLine() == "MSG h.doc 2 plain")
    }

    /// The node whose claim takes a group's message may have lost its members while the claim was on its way:
    /// it hands the message back, and a node with a live member takes it. Node X reaches Redis through a proxy
    /// that holds X's claim until X's one member has left and a member has joined on node Y.
    @Test func aMessageWhoseClaimingNodeLostItsMembersGoesToAnotherNode() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let nodeY = rig.nodes[0]
        let proxy = try CuttingProxy(forwardingTo: rig.shards[0].port)
        let configPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("fanout-handback-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: configPath) }
        try "cluster:\n  redis: [\"redis://127.0.0.1:\(proxy.port)\"]\n".write(toFile: configPath, atomically: true, encoding: .utf8)
        let nodeX = try Daemon(arguments: ["--config", configPath])
        try rig.waitUntilUp(nodeX, shard: 0)
        let leaving = try nodeX.client(timeout: 15)
        #expect(try leaving.command("QSUB workers jobs.x") == "+OK 1")
        // QSUB answers before node X's subscription reaches Redis: hold its upstream only once it has.
        try eventually("node X subscribed to jobs.x in Redis") {
            try rig.shards[0].cli("PUBSUB", "NUMSUB", "fanout:m:jobs.x").hasSuffix("1")
        }
        let watcherX = try nodeX.client(timeout: 15)
        let joining = try nodeY.client(timeout: 15)
        let publisher = try nodeY.client(timeout: 15)

        proxy.holdUpstream()
        #expect(try publisher.command("PUB jobs.x handed back") == "+OK 1")
        // X received the message and sent its claim, which waits in the proxy.
        try proxy.waitForHeld(containing: "fanout:{jobs.x}:group:workers", timeout: 10)
        leaving.close()
        try eventually("the member left node X") { try infoFields(watcherX.command("INFO"))["clients"] == "1" }
        #expect(try joining.command("QSUB workers jobs.x") == "+OK 1")
        proxy.releaseUpstream()

        #expect(try joining.readLine() == "MSG jobs.x 1 handed back")
        let infoX = infoFields(try watcherX.command("INFO"))
        let infoY = infoFields(try publisher.command("INFO"))
        #expect(infoX["cluster_group_claims_won"] == "1" && infoX["cluster_group_handbacks"] == "1", "\(infoX)")
        #expect(infoY["cluster_group_handbacks_taken"] == "1", "\(infoY)")
        #expect(try joining.pushes().isEmpty, "delivered once")
    }
}
