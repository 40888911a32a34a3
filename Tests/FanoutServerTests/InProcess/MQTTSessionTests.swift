import FanoutMQTT
@testable import FanoutServer
import Testing

extension InProcess {
    /// MQTT sessions of clients that are away (clean session 0), on a server in the test process: a fanout
    /// client publishes, and the sessions are parked and taken back as the MQTT transport does.
    @Suite("MQTT sessions", .timeLimit(.minutes(1)))
    struct MQTTSessionTests {
        private func filter(_ text: String, _ qos: MQTTQoS) throws -> MQTTFilter {
            MQTTFilter(filter: text, qos: qos, patterns: try MQTTTopicMapping.patterns(forFilter: text))
        }

        private func state(_ filters: [MQTTFilter]) -> MQTTSessionState {
            MQTTSessionState(filters: filters)
        }

        /// Parks `clientID`'s session as its connection's close does: the connection is a fanout client's, which
        /// stands for the MQTT connection that left.
        private func park(_ clientID: String, _ filters: [MQTTFilter], grant: SharedPermissions? = nil,
                          in harness: ServerHarness) throws {
            let peer = try harness.connect()
            let connection = try #require(harness.server.connections[peer.id])
            let sessions = harness.server.mqttSessions
            #expect(sessions.open(clientID: clientID, cleanSession: false, for: connection) == nil)
            sessions.close(clientID: clientID, connection: connection, keep: true, state: state(filters), grant: grant)
        }

        private func queued(_ clientID: String, in harness: ServerHarness) -> [String] {
            harness.server.mqttSessions.parked[clientID]?.queued.map { String(decoding: $0.payload, as: UTF8.self) } ?? []
        }

        @Test func aParkedSessionKeepsWhatItsFiltersMatchAndGivesItBackOnReturn() throws {
            let harness = try ServerHarness()
            let publisher = try harness.connect()
            try park("c1", [try filter("a/#", .atLeastOnce)], in: harness)
            let sessions = harness.server.mqttSessions
            #expect(sessions.parkedCount == 1 && sessions.hasParked)
            #expect(try harness.command("PUB a.b one", on: publisher) == "+OK 0")
            #expect(try harness.command("PUB a two", on: publisher) == "+OK 0")
            #expect(try harness.command("PUB other three", on: publisher) == "+OK 0")
            #expect(queued("c1", in: harness) == ["one", "two"])

            let back = try harness.connect()
            let connection = try #require(harness.server.connections[back.id])
            let kept = try #require(sessions.open(clientID: "c1", cleanSession: false, for: connection))
            #expect(kept.filters.map(\.filter) == ["a/#"])
            #expect(kept.queued.map(\.topic) == ["a/b", "a"])
            #expect(kept.queued.map(\.qos) == [.atLeastOnce, .atLeastOnce], "min(granted 1, a fanout client's 2)")
            #expect(sessions.parkedCount == 0 && !sessions.hasParked)
            #expect(!sessions.index.hasReceivers(for: "a.b"), "its patterns left the index")
            #expect(try harness.command("PUB a.b four", on: publisher) == "+OK 0")
            #expect(sessions.parked["c1"] == nil)
        }

        @Test func cleanSessionDiscardsTheSessionKept() throws {
            let harness = try ServerHarness()
            try park("c1", [try filter("x", .exactlyOnce)], in: harness)
            let peer = try harness.connect()
            let connection = try #require(harness.server.connections[peer.id])
            #expect(harness.server.mqttSessions.open(clientID: "c1", cleanSession: true, for: connection) == nil)
            #expect(harness.server.mqttSessions.parkedCount == 0)
            #expect(harness.server.mqttStats.sessionsDropped == 0, "discarded by its client, not by a bound")
        }

        @Test func aSecondConnectionOfTheIdentifierTakesOverTheFirst() throws {
            let harness = try ServerHarness()
            let first = try harness.connect()
            let second = try harness.connect()
            let sessions = harness.server.mqttSessions
            let firstConnection = try #require(harness.server.connections[first.id])
            let secondConnection = try #require(harness.server.connections[second.id])
            _ = sessions.open(clientID: "same", cleanSession: true, for: firstConnection)
            _ = sessions.open(clientID: "same", cleanSession: true, for: secondConnection)
            #expect(!harness.isConnected(first), "the older connection is closed")
            #expect(harness.isConnected(second))
            #expect(sessions.live["same"] === secondConnection)
            // The older connection's close comes after: it must not take the identifier from the newer one.
            sessions.close(clientID: "same", connection: firstConnection, keep: true, state: state([]), grant: nil)
            #expect(sessions.live["same"] === secondConnection)
            #expect(sessions.parkedCount == 0)
        }

        /// A shared subscription's messages go to the members present: a `$share` filter is not parked.
        @Test func aSharedSubscriptionIsNotKeptReceivingWhileAway() throws {
            let harness = try ServerHarness()
            let publisher = try harness.connect()
            try park("c1", [try filter("$share/g/shared", .atLeastOnce), try filter("plain", .atLeastOnce)],
                     in: harness)
            let sessions = harness.server.mqttSessions
            #expect(!sessions.index.hasReceivers(for: "shared"))
            #expect(try harness.command("PUB shared s", on: publisher) == "+OK 0")
            #expect(try harness.command("PUB plain p", on: publisher) == "+OK 0")
            #expect(queued("c1", in: harness) == ["p"])
            let back = try harness.connect()
            let connection = try #require(harness.server.connections[back.id])
            let kept = try #require(sessions.open(clientID: "c1", cleanSession: false, for: connection))
            #expect(kept.filters.map(\.filter) == ["$share/g/shared", "plain"], "the filter itself is kept")
        }

        @Test func pastTheMessageBoundTheOldestGoAndAreCounted() throws {
            let harness = try ServerHarness { $0.mqtt.sessionMaxMessages = 3 }
            let publisher = try harness.connect()
            try park("c1", [try filter("q", .atLeastOnce)], in: harness)
            for n in 1...5 { #expect(try harness.command("PUB q m\(n)", on: publisher) == "+OK 0") }
            #expect(queued("c1", in: harness) == ["m3", "m4", "m5"])
            #expect(harness.server.mqttStats.sessionMessagesDropped == 2)
            let session = try #require(harness.server.mqttSessions.parked["c1"])
            #expect(session.countedBytes == session.queued.reduce(0) { $0 + $1.weight })
        }

        @Test func pastTheSessionBoundTheOneAwayLongestGoes() throws {
            let harness = try ServerHarness { $0.mqtt.maxSessions = 2 }
            for id in ["c1", "c2", "c3"] { try park(id, [try filter("s", .atLeastOnce)], in: harness) }
            let sessions = harness.server.mqttSessions
            #expect(Set(sessions.parked.keys) == ["c2", "c3"])
            #expect(harness.server.mqttStats.sessionsDropped == 1)
            // A reload that lowers the bound applies it at once.
            var fresh = harness.server.configuration
            fresh.mqtt.maxSessions = 1
            harness.server.lifecycle.apply(fresh)
            #expect(Array(sessions.parked.keys) == ["c3"])
            #expect(harness.server.mqttStats.sessionsDropped == 2)
        }

        @Test func aSessionAwayLongerThanTheExpiryIsDropped() throws {
            let harness = try ServerHarness { $0.mqtt.sessionExpiry = .milliseconds(50) }
            try park("c1", [try filter("e", .atLeastOnce)], in: harness)
            let sessions = harness.server.mqttSessions
            #expect(sessions.parkedCount == 1)
            try harness.run(until: { sessions.parkedCount == 0 }, "the session's expiry")
            #expect(harness.server.mqttStats.sessionsDropped == 1)
            #expect(!sessions.index.hasReceivers(for: "e"))
        }

        @Test func theDollarRuleAndTheUsersDeniedSubjectsHoldWhileAway() throws {
            let harness = try ServerHarness()
            let denied = SharedPermissions(Permissions(publish: [">"], subscribe: [">"], subscribeDeny: ["secret.>"]))
            try park("c1", [try filter("#", .atLeastOnce)], grant: denied, in: harness)
            let sessions = harness.server.mqttSessions
            let session = try #require(sessions.parked["c1"])
            #expect(session.grantedQoS(for: "$SYS.x") == nil, "`#` matches no `$` topic (MQTT-4.7.2-1)")
            #expect(session.grantedQoS(for: "open.x") == .atLeastOnce)
            var deliveries: [ParkedDelivery] = []
            #expect(sessions.gather("$SYS.x", into: &deliveries) == nil && deliveries.isEmpty)
            #expect(sessions.gather("secret.x", into: &deliveries) == nil && deliveries.isEmpty)
            let publisher = try harness.connect()
            #expect(try harness.command("PUB secret.x hidden", on: publisher) == "+OK 0")
            #expect(try harness.command("PUB open.x shown", on: publisher) == "+OK 0")
            #expect(queued("c1", in: harness) == ["shown"])
        }

        @Test func aMessageIsKeptAtTheLowerOfThePublishersAndTheFiltersQoSAndQoS0IsNot() throws {
            let harness = try ServerHarness()
            try park("high", [try filter("w/+", .exactlyOnce)], in: harness)
            try park("low", [try filter("w/one", .atLeastOnce), try filter("w/two", .atMostOnce)], in: harness)
            let sessions = harness.server.mqttSessions
            // Wills carry their QoS into the run as an MQTT client's PUBLISH does.
            sessions.publishWill(MQTTWill(topic: "w/one", message: Array("q1".utf8), qos: .atLeastOnce, retain: false),
                                 subject: "w.one")
            sessions.publishWill(MQTTWill(topic: "w/one", message: Array("q2".utf8), qos: .exactlyOnce, retain: false),
                                 subject: "w.one")
            sessions.publishWill(MQTTWill(topic: "w/one", message: Array("q0".utf8), qos: .atMostOnce, retain: false),
                                 subject: "w.one")
            sessions.publishWill(MQTTWill(topic: "w/two", message: Array("t2".utf8), qos: .exactlyOnce, retain: false),
                                 subject: "w.two")
            try harness.run(until: { harness.server.mqttStats.willsPublished == 4 }, "the wills")
            let high = try #require(sessions.parked["high"]).queued.map { ($0.qos, String(decoding: $0.payload, as: UTF8.self)) }
            let low = try #require(sessions.parked["low"]).queued.map { ($0.qos, String(decoding: $0.payload, as: UTF8.self)) }
            #expect(high.map(\.0) == [.atLeastOnce, .exactlyOnce, .exactlyOnce])
            #expect(high.map(\.1) == ["q1", "q2", "t2"], "QoS 0 is not kept for a client away")
            #expect(low.map(\.0) == [.atLeastOnce, .atLeastOnce])
            #expect(low.map(\.1) == ["q1", "q2"], "w/two is granted QoS 0: not kept")
        }

        @Test func parkedBytesCountTowardMaxMemoryAndGoWithTheSession() throws {
            let bound = 256 * 1024
            let harness = try ServerHarness { $0.limits.maxMemory = bound }
            let publisher = try harness.connect()
            try park("c1", [try filter("big", .atLeastOnce)], in: harness)
            let memory = harness.server.memory!
            let payload = String(repeating: "x", count: 10_000)
            for _ in 0..<40 { #expect(try harness.command("PUB big \(payload)", on: publisher) == "+OK 0") }
            let session = try #require(harness.server.mqttSessions.parked["c1"])
            #expect(harness.server.mqttStats.sessionMessagesDropped > 0, "past max_memory, messages are dropped")
            #expect(session.countedBytes <= bound && session.queued.count < 40)
            #expect(memory.payloadBytes == session.countedBytes, "what it holds is counted as held bytes")
            let back = try harness.connect()
            let connection = try #require(harness.server.connections[back.id])
            _ = harness.server.mqttSessions.open(clientID: "c1", cleanSession: false, for: connection)
            #expect(memory.payloadBytes == 0, "given back when the client returns")
        }

        /// `awayOrder` keeps an entry per park: a client that comes and goes many times behind a session away
        /// longer must not grow it past twice the parked sessions (plus 16).
        @Test func comingAndGoingOftenKeepsTheAwayOrderBounded() throws {
            let harness = try ServerHarness()
            try park("old", [try filter("o", .atLeastOnce)], in: harness)
            let peer = try harness.connect()
            let connection = try #require(harness.server.connections[peer.id])
            let sessions = harness.server.mqttSessions
            for _ in 0..<1_000 {
                _ = sessions.open(clientID: "flapping", cleanSession: false, for: connection)
                sessions.close(clientID: "flapping", connection: connection, keep: true,
                               state: state([try filter("f", .atLeastOnce)]), grant: nil)
            }
            #expect(sessions.parkedCount == 2)
            #expect(sessions.awayOrder.count <= 2 * sessions.parkedCount + 16)
            #expect(sessions.oldestParked()?.clientID == "old")
        }

        @Test func willsWaitingPastTheirBoundDropTheOldest() throws {
            let harness = try ServerHarness()
            let sessions = harness.server.mqttSessions
            let will = MQTTWill(topic: "many", message: [], qos: .atMostOnce, retain: false)
            for _ in 0...MQTTSessions.maxQueuedWills { sessions.publishWill(will, subject: "many") }
            #expect(sessions.wills.count == MQTTSessions.maxQueuedWills)
            try harness.run(until: { !sessions.hasQueuedWills }, "the wills' pass")
            #expect(harness.server.mqttStats.willsPublished == UInt64(MQTTSessions.maxQueuedWills))
        }

        @Test func aWillIsPublishedOnTheNextPassNotWhereItWasGiven() throws {
            let harness = try ServerHarness()
            let watcher = try harness.connect()
            #expect(try harness.command("SUB gone.>", on: watcher) == "+OK 1")
            let sessions = harness.server.mqttSessions
            sessions.publishWill(MQTTWill(topic: "gone/c1", message: Array("bye".utf8), qos: .atLeastOnce,
                                          retain: false), subject: "gone.c1")
            #expect(harness.server.mqttStats.willsPublished == 0, "not inside the call that gave it")
            #expect(sessions.hasQueuedWills)
            try harness.run(until: { harness.server.mqttStats.willsPublished == 1 }, "the will's pass")
            #expect(try harness.nextLine(of: watcher) == "MSG gone.c1 1 bye")
            #expect(!sessions.hasQueuedWills)
        }
    }
}
