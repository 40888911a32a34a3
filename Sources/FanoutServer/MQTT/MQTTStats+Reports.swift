import FanoutMQTT
import Metrics

extension MQTTStats {
    /// INFO's fields, shown whether or not an MQTT listener is configured (0s then), so that scripts find the
    /// same fields on every server. `sessions` and `retained` are what the components hold now.
    func infoFields(sessions: Int, retained: Int) -> [InfoFields.Field] {
        [
            ("mqtt_connections", connections),
            ("mqtt_sessions", sessions),
            ("mqtt_retained", retained),
            ("mqtt_packets_in", packetsInTotal),
            ("mqtt_packets_out", packetsOutTotal),
            ("mqtt_unmappable", unmappable),
            ("mqtt_wills", willsPublished),
            ("mqtt_session_messages_dropped", sessionMessagesDropped),
        ]
    }

    /// `/metrics`' MQTT series, moved up to the counters on each read. One packet series per type that can
    /// flow that way: 9 in, 9 out.
    final class Metrics {
        private let connections = Gauge(label: "fanout_mqtt_connections")
        private let retained = Gauge(label: "fanout_mqtt_retained_messages")
        private let sessions = Gauge(label: "fanout_mqtt_sessions")
        private let sessionMessagesDropped = Counter(label: "fanout_mqtt_session_messages_dropped_total")
        private let wills = Counter(label: "fanout_mqtt_wills_total")
        private let unmappable = Counter(label: "fanout_mqtt_unmappable_total")
        private let packetsIn: [(MQTTPacketType, Counter)]
        private let packetsOut: [(MQTTPacketType, Counter)]
        private var reported = MQTTStats()

        /// Packet types a server sends (section 2.2.1); the ones it receives are `isSentByClients`.
        static let sentByServers: [MQTTPacketType] = [
            .connack, .publish, .puback, .pubrec, .pubrel, .pubcomp, .suback, .unsuback, .pingresp,
        ]

        init() {
            func counter(_ direction: String, _ type: MQTTPacketType) -> (MQTTPacketType, Counter) {
                (type, Counter(label: "fanout_mqtt_packets_total",
                               dimensions: [("direction", direction), ("type", "\(type)")]))
            }
            packetsIn = MQTTPacketType.allCases.filter(\.isSentByClients).map { counter("in", $0) }
            packetsOut = Self.sentByServers.map { counter("out", $0) }
        }

        func sync(_ stats: MQTTStats, sessions sessionCount: Int, retained retainedCount: Int) {
            connections.record(stats.connections)
            sessions.record(sessionCount)
            retained.record(retainedCount)
            sessionMessagesDropped.increment(by: Int64(stats.sessionMessagesDropped &- reported.sessionMessagesDropped))
            wills.increment(by: Int64(stats.willsPublished &- reported.willsPublished))
            unmappable.increment(by: Int64(stats.unmappable &- reported.unmappable))
            for (type, counter) in packetsIn {
                let index = Int(type.rawValue)
                counter.increment(by: Int64(stats.packetsIn[index] &- reported.packetsIn[index]))
            }
            for (type, counter) in packetsOut {
                let index = Int(type.rawValue)
                counter.increment(by: Int64(stats.packetsOut[index] &- reported.packetsOut[index]))
            }
            reported = stats
        }
    }
}
