import Foundation
import Testing

/// INFO is read by scripts as well as people: its fields keep their names and their order, whichever part of
/// the server gathers them.
@Suite("INFO's fields and their order", .threadPerTest, .timeLimit(.minutes(2)))
struct InfoFieldOrderTests {
    static let standaloneFields = [
        "version", "server_name", "uptime_s", "clients", "connection_objects", "subjects", "subscriptions",
        "published", "delivered", "slow_consumers", "backpressure_pauses", "limit_refusals", "connections_total",
        "tracked_subjects", "epoch", "history_subjects", "history_messages", "history_bytes", "history_evicted",
        "replayed", "replays_active", "replays_waiting", "max_connections", "max_pending_bytes", "max_memory",
        "backlog_bytes", "index_bytes_estimate", "memory_drops", "groups", "group_deliveries", "group_paced_runs",
        "binary_published", "open_questions", "questions", "answers", "ask_timeouts",
        "token_auth", "tokens_expired", "token_refreshes", "token_failures",
        "max_connections_per_user", "user_publish_rate", "user_publish_burst", "user_connection_refusals",
        "user_publish_refusals",
        "presence_subjects", "presence_members", "presence_events",
        "mqtt_connections", "mqtt_sessions", "mqtt_retained", "mqtt_packets_in", "mqtt_packets_out",
        "mqtt_unmappable", "mqtt_wills", "mqtt_session_messages_dropped",
    ]

    @Test func aStandaloneServerListsItsFieldsInOrder() throws {
        let daemon = try Daemon(environment: ["FANOUTD_SERVER_NAME": "order-host"])
        let client = try LineClient(port: daemon.port)
        _ = try client.readLine()
        #expect(try client.command("QSUB workers jobs.*") == "+OK 1")
        #expect(try client.command("PUB jobs.a one") == "+OK 1")
        #expect(try client.readLine().hasPrefix("MSG jobs.a "))
        let reply = try client.command("INFO")
        #expect(reply.hasPrefix("+OK "))
        let pairs = reply.dropFirst(4).split(separator: " ").map { $0.split(separator: "=", maxSplits: 1) }
        #expect(pairs.map { String($0[0]) } == Self.standaloneFields)
        let values = infoFields(reply)
        #expect(values["server_name"] == "order-host")
        #expect(values["groups"] == "1")
        #expect(values["group_deliveries"] == "1")
        #expect(values["delivered"] == "1")
        #expect(values["subscriptions"] == "1")
    }
}
