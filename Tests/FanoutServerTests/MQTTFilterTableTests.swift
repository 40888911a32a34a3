import FanoutMQTT
@testable import FanoutServer
import Testing

@Suite("MQTTFilterTable")
struct MQTTFilterTableTests {
    private func filter(_ text: String, _ qos: MQTTQoS) throws -> MQTTFilter {
        MQTTFilter(filter: text, qos: qos, patterns: try MQTTTopicMapping.patterns(forFilter: text))
    }

    @Test func aPatternSharedByTwoFiltersStaysUntilBothAreGone() throws {
        var table = MQTTFilterTable()
        let added = [table.add(try filter("a/#", .atMostOnce)), table.add(try filter("a", .atLeastOnce))]
        #expect(added == [["a.>", "a"], []], "`a` is held already, for a/#")
        let dropped = [table.remove("a/#"), table.remove("a"), table.remove("a")]
        #expect(dropped == [["a.>"], ["a"], []], "`a` stays for filter a; a filter not held drops nothing")
        #expect(table.isEmpty)
    }

    @Test func subscribingAFilterAgainReplacesItsQoS() throws {
        var table = MQTTFilterTable()
        table.add(try filter("s/+", .atMostOnce))
        let again = table.add(try filter("s/+", .exactlyOnce))
        #expect(again == [])
        #expect(table.grantedQoS(for: "s.x") == .exactlyOnce)
        #expect(table.all.count == 1)
    }

    @Test func theHighestMatchingQoSWins() throws {
        var table = MQTTFilterTable()
        table.add(try filter("a/+", .atMostOnce))
        table.add(try filter("a/b", .exactlyOnce))
        table.add(try filter("c/#", .atLeastOnce))
        #expect(table.grantedQoS(for: "a.b") == .exactlyOnce)
        #expect(table.grantedQoS(for: "a.z") == .atMostOnce)
        #expect(table.grantedQoS(for: "c") == .atLeastOnce, "c/# matches its parent (section 4.7.1.2)")
    }

    /// MQTT-4.7.2-1: a filter starting with a wildcard does not match `$` topics, even when its QoS is everyone's.
    @Test func wildcardFirstLevelsDoNotMatchDollarSubjects() throws {
        var table = MQTTFilterTable()
        table.add(try filter("#", .atLeastOnce))
        #expect(table.grantedQoS(for: "$SYS.x") == nil)
        #expect(table.grantedQoS(for: "plain") == .atLeastOnce)
        table.add(try filter("$SYS/#", .atLeastOnce))
        #expect(table.grantedQoS(for: "$SYS.x") == .atLeastOnce)
        table.add(try filter("+/x", .atMostOnce))
        #expect(table.grantedQoS(for: "$SYS.x") == .atLeastOnce, "`+/x` does not lower what $SYS/# grants")
    }
}
