import FanoutTestSupport
import Foundation
import Testing

/// Several nodes sharing subjects through Redis shards (`cluster:`), with real redis-server processes.
@Suite("Several nodes", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct ClusterTests {
    @Test func threeNodesOnTwoShardsDeliverOneOrderAndOneSeqPerSubject() throws {
        let rig = try ClusterRig(shards: 2, nodes: 3)
        let subjects = rig.subjects(prefix: "s", perShard: 3)
        // On every node, one subscriber to all six subjects; on node 1 a wildcard one too.
        var subscribers: [LineClient] = []
        for node in rig.nodes {
            let client = try node.client(timeout: 15)
            #expect(try client.command("SUB " + subjects.joined(separator: " ")) == "+OK 6")
            subscribers.append(client)
        }
        let wildcard = try rig.nodes[1].client(timeout: 15)
        #expect(try wildcard.command("SUB s.*") == "+OK 1")
        subscribers.append(wildcard)
        // Each node publishes 40 messages to each subject at once, interleaved, pipelined.
        let perNode = 40
        let publishers = try rig.nodes.map { try $0.client(timeout: 15) }
        DispatchQueue.concurrentPerform(iterations: publishers.count) { index in
            var batch = ""
            for round in 0..<perNode {
                for subject in subjects { batch += "PUB \(subject) n\(index)-\(round)\n" }
            }
            try? publishers[index].send(batch)
        }
        for publisher in publishers {
            for _ in 0..<(perNode * subjects.count) {
                let reply = try publisher.readLine()
                #expect(reply == "+OK 3")
            }
        }
        // Every subscriber sees the same messages with the same seqs in the same order.
        let total = perNode * subjects.count * rig.nodes.count
        var views: [[String: [ReceivedMessage]]] = []
        for subscriber in subscribers {
            var bySubject: [String: [ReceivedMessage]] = [:]
            for _ in 0..<total {
                let message = try #require(ReceivedMessage(try subscriber.readLine()))
                bySubject[message.subject, default: []].append(message)
            }
            views.append(bySubject)
        }
        for subject in subjects {
            let reference = try #require(views[0][subject])
            #expect(reference.map(\.seq) == Array(1...UInt64(perNode * rig.nodes.count)))
            for view in views.dropFirst() { #expect(view[subject] == reference) }
            // Messages one connection publishes keep their order.
            for node in 0..<rig.nodes.count {
                let own = reference.filter { $0.payload.hasPrefix("n\(node)-") }.map(\.payload)
                #expect(own == (0..<perNode).map { "n\(node)-\($0)" })
            }
        }
    }

    @Test func receiversCountNodesWithSubscribersAndWildcardsWorkAcrossNodes() throws {
        let rig = try ClusterRig(shards: 2, nodes: 3)
        let publisher = try rig.nodes[0].client()
        #expect(try publisher.command("PUB r.x nobody") == "+OK 0")
        let first = try rig.nodes[1].client()
        let second = try rig.nodes[1].client()
        let third = try rig.nodes[2].client()
        #expect(try first.command("SUB r.x") == "+OK 1")
        #expect(try second.command("SUB r.>") == "+OK 1")
        #expect(try third.command("SUB *.x") == "+OK 1")
        // Two nodes had subscribers (three connections): the reply counts nodes, as Redis's PUBLISH does.
        let hello = try publisher.command("PUB r.x hello")
        #expect(hello == "+OK 2")
        for client in [first, second, third] {
            let line = try client.readLine()
            #expect(line == "MSG r.x 2 hello")
        }
        // A subject only wildcards match: node 2's `*.x` is folded into the broad `*` glob in Redis, so that
        // node counts as a receiver too, though its index then delivers to nobody there (as documented).
        #expect(try publisher.command("PUB r.y.z deep") == "+OK 2")
        #expect(try second.readLine() == "MSG r.y.z 1 deep")
        #expect(try third.command("UNSUB") == "+OK 0")
        #expect(try first.command("UNSUB") == "+OK 0")
        // The count may still include a node whose UNSUBSCRIBE is on its way to Redis; delivery follows the
        // local subscriptions at once.
        #expect(try publisher.command("PUB r.x again").hasPrefix("+OK "))
        #expect(try second.readLine() == "MSG r.x 3 again")
        #expect(try first.command("PING") == "+PONG")
        #expect(try third.command("PING") == "+PONG")
        let info = infoFields(try publisher.command("INFO"))
        #expect(info["cluster_shards"] == "2")
        #expect(info["shard0_status"] == "up" && info["shard1_status"] == "up")
        #expect(info["cluster_node"] != nil && info["shard0_heartbeat_ms"] != nil)
    }

    @Test func aSubscriberMovedToAnotherNodeResumesWithNoLossAndNoDuplicate() throws {
        let rig = try ClusterRig(shards: 2, nodes: 3)
        let total = 600
        let publisher = try rig.nodes[1].client(timeout: 15)
        let (first, _) = try connectReadingEpoch(rig.nodes[0])
        let reply = try first.command("RESUME h.move")
        #expect(reply.hasPrefix("+OK 1 epoch=") && reply.hasSuffix("seq=0 replayed=0 missed=0"))
        let epoch = String(reply.split(separator: " ")[2].dropFirst(6))
        // Publishing goes on all along, from a node that is neither.
        let publishing = DispatchQueue(label: "publisher")
        publishing.async {
            for batch in stride(from: 1, through: total, by: 20) {
                try? publisher.send((batch..<(batch + 20)).map { "PUB h.move m\($0)\n" }.joined())
                for _ in 0..<20 { _ = try? publisher.readLine() }
            }
        }
        var seen: [UInt64] = []
        while seen.count < 150 { seen.append(try #require(ReceivedMessage(try first.readLine())).seq) }
        first.close()
        let (second, _) = try connectReadingEpoch(rig.nodes[2])
        let resumed = try second.command("RESUME h.move \(epoch) \(seen.last!)")
        #expect(resumed.contains("epoch=\(epoch) ") && resumed.hasSuffix("missed=0"))
        while seen.count < total {
            let message = try #require(ReceivedMessage(try second.readLine()))
            seen.append(message.seq)
        }
        publishing.sync {}
        #expect(seen == Array(1...UInt64(total)))
        #expect(try second.command("LAST h.move 2") == "+OK 1 epoch=\(epoch) seq=\(total) replayed=2 missed=0")
        #expect(try second.readLine() == "MSG h.move \(total - 1) m\(total - 1)")
        #expect(try second.readLine() == "MSG h.move \(total) m\(total)")
    }

    @Test func aShardDownForFiveSecondsUnderLoadFailsClearlyAndRecoversAlone() throws {
        // AOF with fsync on every write: a message Redis acknowledged but had not yet pushed to the other
        // node when it was killed is still in the stream when it comes back, and the gap filling brings it.
        // (Without persistence Redis forgets it, and the subject starts a new epoch.)
        let rig = try ClusterRig(shards: 2, nodes: 2, redisArguments: ["--appendonly", "yes", "--appendfsync", "always"])
        let subjects = rig.subjects(prefix: "h.k", perShard: 1)   // subjects[0] on shard 0, [1] on shard 1
        let subscriber = try rig.nodes[1].client(timeout: 20)
        #expect(try subscriber.command("SUB " + subjects.joined(separator: " ")) == "+OK 2")
        /// What the publisher threads saw, under a lock (each thread publishes to its own subject).
        final class Outcome: @unchecked Sendable {
            private let lock = NSLock()
            private var _acknowledged: [String: [String]] = [:]
            private var _unknown: Set<String> = []
            private var _errors: [String: Int] = [:]
            private var _errorText = ""
            func update(_ body: (inout [String: [String]], inout Set<String>, inout [String: Int], inout String) -> Void) {
                lock.lock()
                body(&_acknowledged, &_unknown, &_errors, &_errorText)
                lock.unlock()
            }
            var acknowledged: [String: [String]] { lock.withLock { _acknowledged } }
            var unknown: Set<String> { lock.withLock { _unknown } }
            var errors: [String: Int] { lock.withLock { _errors } }
            var errorText: String { lock.withLock { _errorText } }
        }
        let outcome = Outcome()
        let stop = DispatchSemaphore(value: 0)
        let stopped = DispatchGroup()
        for subject in subjects {
            let publisher = try rig.nodes[0].client(timeout: 20)
            stopped.enter()
            DispatchQueue.global().async {
                defer { stopped.leave() }
                var number = 0
                while stop.wait(timeout: .now()) == .timedOut {
                    number += 1
                    let payload = "p\(number)"
                    guard let reply = try? publisher.command("PUB \(subject) \(payload)") else { return }
                    let acknowledged = reply.hasPrefix("+OK")
                    outcome.update { acknowledgedBySubject, unknown, errors, errorText in
                        if acknowledged {
                            acknowledgedBySubject[subject, default: []].append(payload)
                        } else {
                            errors[subject, default: 0] += 1
                            errorText = reply
                            if reply.contains("outcome unknown") { unknown.insert(payload) }
                        }
                    }
                    if !acknowledged { usleep(2_000) }
                }
            }
        }
        // Under load, shard 0 goes away for five seconds.
        usleep(300_000)
        rig.shards[0].kill()
        try eventually(timeout: 10, "PUBs to the dead shard fail") { (outcome.errors[subjects[0]] ?? 0) > 10 }
        let acknowledgedOnShard1 = outcome.acknowledged[subjects[1]]?.count ?? 0
        usleep(5_000_000)
        #expect((outcome.acknowledged[subjects[1]]?.count ?? 0) > acknowledgedOnShard1 + 100)
        #expect(outcome.errors[subjects[1]] == nil)
        #expect(outcome.errorText.hasPrefix("-ERR unavailable "))
        try rig.shards[0].start()
        // No operator action: the nodes reconnect and PUBs succeed again.
        let before = outcome.acknowledged[subjects[0]]?.count ?? 0
        try eventually(timeout: 15, "PUBs to the restarted shard succeed") {
            (outcome.acknowledged[subjects[0]]?.count ?? 0) > before + 50
        }
        stop.signal()
        stop.signal()
        stopped.wait()
        // The subscriber (on the other node, never disconnected) has every acknowledged message once.
        let marker = try rig.nodes[0].client()
        for subject in subjects { #expect(try marker.command("PUB \(subject) end").hasPrefix("+OK")) }
        var received: [String: [String]] = [:]
        var ends = 0
        while ends < subjects.count {
            let message = try #require(ReceivedMessage(try subscriber.readLine()))
            if message.payload == "end" { ends += 1 } else { received[message.subject, default: []].append(message.payload) }
        }
        for subject in subjects {
            let got = received[subject] ?? []
            #expect(Set(got).count == got.count, "no duplicates on \(subject)")
            let missing = Set(outcome.acknowledged[subject] ?? []).subtracting(got)
            #expect(missing.isEmpty, "acknowledged but not delivered on \(subject): \(missing.count)")
            #expect(Set(got).subtracting(outcome.acknowledged[subject] ?? []).isSubset(of: outcome.unknown))
        }
        if received.values.reduce(0, { $0 + $1.count }) < outcome.acknowledged.values.reduce(0, { $0 + $1.count }) {
            for (index, node) in rig.nodes.enumerated() {
                print("node \(index) log:\n" + node.stderr.all.suffix(40).joined(separator: "\n"))
            }
        }
        print("shard down 5 s: acknowledged \(outcome.acknowledged.mapValues(\.count)), errors \(outcome.errors), " +
              "outcome unknown \(outcome.unknown.count), last error \(outcome.errorText)")
    }

    @Test(arguments: [true, false])
    func aRestartedRedisKeepsNumberingWithAOFAndAnnouncesANewEpochWithout(aof: Bool) throws {
        let arguments = aof ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]
        let rig = try ClusterRig(shards: 1, nodes: 1, redisArguments: arguments)
        let client = try rig.nodes[0].client()
        for number in 1...5 { #expect(try client.command("PUB h.aof m\(number)") == "+OK 0") }
        let before = try client.command("RESUME h.aof")
        #expect(before.hasSuffix("seq=5 replayed=0 missed=0"))
        let epoch = String(before.split(separator: " ")[2].dropFirst(6))
        #expect(try client.command("UNSUB") == "+OK 0")
        rig.shards[0].kill()
        try rig.shards[0].start()
        try rig.waitUntilUp(rig.nodes[0], shard: 0)
        #expect(try client.command("PUB h.aof m6") == "+OK 0")
        let after = try client.command("RESUME h.aof \(epoch) 5")
        if aof {
            #expect(after == "+OK 1 epoch=\(epoch) seq=6 replayed=1 missed=0")
            #expect(try client.readLine() == "MSG h.aof 6 m6")
        } else {
            #expect(!after.contains("epoch=\(epoch) "))
            #expect(after.hasSuffix("seq=1 replayed=1 missed=unknown"))
            #expect(try client.readLine() == "MSG h.aof 1 m6")
        }
    }

    @Test func checkConfigShowsTheClusterSection() throws {
        let rig = try ClusterRig(shards: 2, nodes: 0)
        let process = Process()
        process.executableURL = Daemon.executable
        process.arguments = ["--config", rig.configPath, "--check-config"]
        let pipe = try CloexecPipe()
        process.standardOutput = pipe.write
        try process.run()
        try pipe.write.close()
        let output = String(decoding: pipe.read.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.contains("cluster: 2 shard(s): 127.0.0.1:\(rig.shards[0].port), 127.0.0.1:\(rig.shards[1].port)"))
        #expect(output.contains("cluster_idle_expiry: 86400"))
    }
}

extension ClusterTests {
    /// SIGHUP with other shards: the engine restarts, clients stay connected with their subscriptions, and
    /// the subjects continue on the new shards (under their new epochs).
    @Test func aReloadWithOtherShardsRestartsTheEngineAndKeepsClients() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1)
        let node = rig.nodes[0]
        let subscriber = try node.client()
        #expect(try subscriber.command("SUB x.1") == "+OK 1")
        let publisher = try node.client()
        #expect(try publisher.command("PUB x.1 before") == "+OK 1")
        #expect(try subscriber.readLine() == "MSG x.1 1 before")
        let other = try RedisServerProcess()
        try "cluster:\n  redis: [\"\(other.url)\"]\n".write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        node.signal(SIGHUP)
        _ = try node.stderr.waitForLine(containing: "restarting the engine", timeout: 10)
        try eventually(timeout: 20, "the new shard is up") {
            let info = infoFields(try publisher.command("INFO"))
            return info["shard0"] == "127.0.0.1:\(other.port)" && info["shard0_status"] == "up"
        }
        // The subscription was carried over: the new shard numbers the subject from 1, which the subscriber
        // hears announced first.
        #expect(try publisher.command("PUB x.1 after") == "+OK 1")
        let reset = try subscriber.readLine()
        #expect(reset.hasPrefix("RESET x.1 epoch=") && reset.hasSuffix(" seq=0 missed=unknown"), "\(reset)")
        #expect(try subscriber.readLine() == "MSG x.1 1 after")
        #expect(try other.cli("PUBSUB", "NUMSUB", "fanout:m:x.1").hasSuffix("1"))
    }
}

extension ClusterTests {
    /// A subject idle for idle_expiry leaves Redis (bounded memory) and, published again, begins a new
    /// numbering under an epoch never used before.
    @Test func anIdleSubjectExpiresAndComesBackUnderANewEpoch() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1, clusterExtra: "  idle_expiry: 1\n")
        let client = try rig.nodes[0].client()
        for number in 1...3 { #expect(try client.command("PUB h.idle m\(number)") == "+OK 0") }
        let before = try client.command("RESUME h.idle")
        #expect(before.hasSuffix("seq=3 replayed=0 missed=0"))
        let epoch = String(before.split(separator: " ")[2].dropFirst(6))
        #expect(try client.command("UNSUB") == "+OK 0")
        #expect(try rig.shards[0].cli("EXISTS", "fanout:{h.idle}:seq", "fanout:{h.idle}:log") == "2")
        // Redis expires the keys itself, a second after the last write.
        try eventually(timeout: 10, "the subject's keys expired") {
            try rig.shards[0].cli("EXISTS", "fanout:{h.idle}:seq", "fanout:{h.idle}:log") == "0"
        }
        #expect(try client.command("PUB h.idle again") == "+OK 0")
        let after = try client.command("RESUME h.idle \(epoch) 3")
        #expect(!after.contains("epoch=\(epoch) "))
        #expect(after.hasSuffix("seq=1 replayed=1 missed=unknown"))
        #expect(try client.readLine() == "MSG h.idle 1 again")
    }
}

extension ClusterTests {
    /// Over max_in_flight commands waiting on a shard, PUB answers -ERR unavailable at once, in order
    /// with the other replies, and the connection stays usable.
    @Test func aShardWithTooManyCommandsInFlightRefusesPubsClearly() throws {
        let rig = try ClusterRig(shards: 1, nodes: 1, clusterExtra: "  max_in_flight: 3\n")
        let client = try rig.nodes[0].client()
        try client.send((1...300).map { "PUB f.x m\($0)\n" }.joined() + "PING done\n")
        var replies: [String] = []
        for _ in 0..<300 { replies.append(try client.readLine()) }
        #expect(try client.readLine() == "+PONG done")
        let refused = replies.filter { $0.hasPrefix("-ERR unavailable ") }
        #expect(replies.filter { $0 == "+OK 0" }.count + refused.count == 300)
        #expect(!refused.isEmpty && refused.allSatisfy { $0.contains("commands in flight") }, "\(refused.prefix(3))")
        #expect(infoFields(try client.command("INFO"))["cluster_unavailable"] == String(refused.count))
    }

    /// POST /publish on a clustered node answers once Redis has (without a seq, which the node does not learn),
    /// and with 503 and the `unavailable` code while the shard is down.
    @Test func anHTTPPublishWaitsForRedisAndReportsItsAbsence() throws {
        let rig = try ClusterRig(shards: 1, nodes: 0)
        let node = try rig.startNode(extraArguments: ["--http-listen", "127.0.0.1:0"])
        let url = "http://127.0.0.1:\(try node.httpPort())/publish/news.uk"
        let subscriber = try node.client(timeout: 15)
        #expect(try subscriber.command("SUB news.uk") == "+OK 1")
        let published = try curl(["-X", "POST", "--data-binary", "through redis", url])
        #expect(published.status == 200 && published.body == [#"{"receivers":1}"#], "\(published)")
        #expect(try ReceivedMessage(subscriber.readLine()) == ReceivedMessage("MSG news.uk 1 through redis"))
        rig.shards[0].kill()
        try eventually(timeout: 20, "the node sees the shard down") {
            let refused = try curl(["-X", "POST", "--data-binary", "nobody home", url])
            return refused.status == 503 && refused.body.joined().contains(#""error":"unavailable""#)
        }
    }

    /// An event stream of several subjects on a clustered node: its setup hands the dispatcher a RESUME per
    /// subject without reading in between, and each waits for the one before it; none is lost.
    @Test func anEventStreamOfSeveralSubjectsOnAClusteredNodeHoldsThemAll() throws {
        let rig = try ClusterRig(shards: 1, nodes: 0)
        let node = try rig.startNode(extraArguments: ["--http-listen", "127.0.0.1:0"])
        let events = try eventStream(port: try node.httpPort(), query: "subject=s.1&subject=s.2&subject=s.3")
        let client = try node.client(timeout: 15)
        try eventually(timeout: 15, "the stream holds its three subjects") {
            let listing = try client.command("CHANNELS s.*")
            return listing.contains(" s.1=1") && listing.contains(" s.2=1") && listing.contains(" s.3=1")
        }
        for subject in ["s.1", "s.2", "s.3"] { #expect(try client.command("PUB \(subject) to-\(subject)") == "+OK 1") }
        for subject in ["s.1", "s.2", "s.3"] {
            _ = try events.stdout.waitForLine(containing: "to-\(subject)", timeout: 10)
        }
    }

    /// A reload that adds the cluster section, then removes it, changes the engine under a subscriber that stays:
    /// each subject's first message from the new engine comes after `RESET ... missed=unknown`, so the
    /// subscriber never sees its seqs go back without a word.
    @Test func aReloadThatChangesTheEngineAnnouncesTheNewNumbering() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-switch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("fanoutd.yaml").path
        try "log_level: info\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(arguments: ["--config", config])
        let subscriber = try daemon.client(timeout: 15)
        #expect(try subscriber.command("SUB sw.x") == "+OK 1")
        let publisher = try daemon.client(timeout: 15)
        for payload in ["a", "b"] { #expect(try publisher.command("PUB sw.x \(payload)") == "+OK 1") }
        #expect(try subscriber.readLine() == "MSG sw.x 1 a")
        #expect(try subscriber.readLine() == "MSG sw.x 2 b")

        let redis = try RedisServerProcess()
        try "log_level: info\ncluster:\n  redis: [\"\(redis.url)\"]\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "restarting the engine", timeout: 10)
        try eventually(timeout: 20, "the node publishes through Redis") { try publisher.command("PUB sw.x c") == "+OK 1" }
        // Redis numbers from 1; a PUB answered `+OK 0` before the node's subscription took effect used a seq.
        let reset = try subscriber.readLine()
        #expect(reset.hasPrefix("RESET sw.x epoch=") && reset.hasSuffix(" missed=unknown"), "\(reset)")
        let before = UInt64(reset.split(separator: " ").first { $0.hasPrefix("seq=") }?.dropFirst(4) ?? "") ?? 99
        #expect(try subscriber.readLine() == "MSG sw.x \(before + 1) c")

        try "log_level: info\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = try daemon.stderr.waitForLine(containing: "restarting the engine", after: 1, timeout: 10)
        #expect(try publisher.command("PUB sw.x d") == "+OK 1")
        let back = try subscriber.readLine()
        #expect(back.hasPrefix("RESET sw.x epoch=") && back.hasSuffix(" seq=2 missed=unknown"), "\(back)")
        #expect(try subscriber.readLine() == "MSG sw.x 3 d")
    }

    /// A WebSocket subscriber on a clustered node gets what comes back from Redis framed, one message a frame.
    @Test func aWebSocketSubscriberOfAClusteredNodeGetsFrames() throws {
        let rig = try ClusterRig(shards: 1, nodes: 0)
        let node = try rig.startNode(extraArguments: ["--http-listen", "127.0.0.1:0"])
        let run = try runPythonCheck("websocket_checks.py", "delivered", daemon: node).finish(timeout: 90)
        #expect(run.status == 0 && run.stdout.contains("ok delivered"), "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }
}
