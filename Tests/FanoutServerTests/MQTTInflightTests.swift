import FanoutMQTT
@testable import FanoutServer
import Testing

@Suite("MQTTInflight")
struct MQTTInflightTests {
    private func message(_ text: String, _ qos: MQTTQoS = .atLeastOnce) -> MQTTMessage {
        MQTTMessage(topic: "t", payload: Array(text.utf8), qos: qos)
    }

    @Test func identifiersSkipThoseInUseAndWrapPast65535() throws {
        var inflight = MQTTInflight(next: 65_534)
        let first = inflight.takeID()
        inflight.add(MQTTUnacknowledged(packetID: try #require(first), message: message("a")))
        let second = inflight.takeID()
        let third = inflight.takeID()
        #expect([first, second, third] == [65_534, 65_535, 1], "0 is never an identifier (MQTT-2.3.1-1)")
        var held = MQTTInflight(next: 1)
        held.add(MQTTUnacknowledged(packetID: 1, message: message("b")))
        held.add(MQTTUnacknowledged(packetID: 2, message: message("c")))
        let free = held.takeID()
        #expect(free == 3, "identifiers waiting for an acknowledgement are not given again")
    }

    @Test func allIdentifiersInUseGiveNone() {
        var inflight = MQTTInflight()
        for _ in 0..<MQTTInflight.capacity {
            guard let id = inflight.takeID() else { Issue.record("ran out early"); return }
            inflight.add(MQTTUnacknowledged(packetID: id, message: message("")))
        }
        let none = inflight.takeID()
        #expect(none == nil)
        inflight.remove(700)
        let freed = inflight.takeID()
        #expect(freed == 700)
    }

    @Test func keepsSendingOrderAndCountsBytesThroughAcknowledgements() {
        var inflight = MQTTInflight()
        for id: UInt16 in 1...5 { inflight.add(MQTTUnacknowledged(packetID: id, message: message("xx"))) }
        let weight = message("xx").weight
        #expect(inflight.bytes == 5 * weight)
        let removed = [inflight.remove(3), inflight.remove(3), inflight.remove(1)].map { $0 != nil }
        #expect(removed == [true, false, true], "a second acknowledgement of one identifier is ignored")
        #expect(inflight.inOrder.map(\.packetID) == [2, 4, 5])
        #expect(inflight.bytes == 3 * weight)
    }

    @Test func releaseIsForQoS2Only() {
        var inflight = MQTTInflight()
        inflight.add(MQTTUnacknowledged(packetID: 1, message: message("a", .atLeastOnce)))
        inflight.add(MQTTUnacknowledged(packetID: 2, message: message("b", .exactlyOnce)))
        let released = [inflight.release(1), inflight.release(2)]
        #expect(released == [false, true], "PUBREC for a QoS 1 message is not QoS 2's handshake")
        #expect(inflight.inOrder.last?.released == true)
    }

    /// The order kept for a returning session stays bounded when one message is never acknowledged while
    /// thousands after it are (its identifiers would otherwise pile up behind it).
    @Test func orderStaysBoundedBehindAMessageNeverAcknowledged() {
        var inflight = MQTTInflight()
        inflight.add(MQTTUnacknowledged(packetID: 1, message: message("stuck")))
        for round in 0..<20_000 {
            let id = UInt16(2 + round % 1000)
            inflight.add(MQTTUnacknowledged(packetID: id, message: message("x")))
            inflight.remove(id)
        }
        #expect(inflight.count == 1)
        #expect(inflight.inOrder.map(\.packetID) == [1])
        #expect(inflight.orderCount <= 2 * inflight.count + 65)
    }
}
