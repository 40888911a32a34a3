import Foundation
import Testing

/// MQTT sessions against a real fanoutd, driven by paho-mqtt (and a raw socket where a client must misbehave):
/// Tests/IntegrationTests/Fixtures/mqtt_session_checks.py.
@Suite("MQTT sessions", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTSessionTests {
    private func check(_ name: String, arguments: [String] = [], environment: [String: String] = [:]) throws {
        let (daemon, mqttPort) = try Daemon.withMQTT(arguments: arguments, environment: environment)
        let run = try ExternalProgram("python3", [try fixture("mqtt_session_checks.py"), name, String(mqttPort)])
            .finish(timeout: 60)
        #expect(run.status == 0 && run.stdout.contains("ok \(name)"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
        _ = daemon
    }

    /// Clean session 0: QoS 1 and 2 messages published while the client is away arrive on its return, with
    /// CONNACK's session present; QoS 0 ones are not kept; clean session 1 then finds no session.
    @Test func messagesPublishedWhileAwayArriveOnReturn() throws { try check("persistent") }

    /// Messages sent and not acknowledged before the client went are sent again on return, in the order first
    /// sent: QoS 1 and 2 PUBLISHes with DUP and their packet ids, a QoS 2 one whose PUBREC came with PUBREL.
    @Test func unacknowledgedMessagesAreResentWithDup() throws { try check("resend") }

    /// A CONNECT with a client identifier already connected closes the older connection (MQTT-3.1.4-2): its will
    /// goes, and with clean session 0 its session (subscriptions included) is the newer connection's.
    @Test func aSecondConnectionTakesOverTheFirst() throws { try check("takeover") }

    /// The will is published when the connection ends without DISCONNECT, and not after DISCONNECT.
    @Test func theWillGoesOnAnAbnormalCloseOnly() throws { try check("will") }

    /// A subject whose history is kept, named exactly by a session's filter, is caught up from history on the
    /// client's return, as RESUME does: what history keeps bounds it, not mqtt_session_max_messages.
    @Test func aReturningSessionCatchesUpFromHistory() throws {
        try check("history", arguments: ["--config", try fixture("history.yaml")],
                  environment: ["FANOUTD_MQTT_SESSION_MAX_MESSAGES": "2"])
    }
}
