import Foundation
import Testing

/// What an MQTT connection has as every fanout connection has (mqtt_server_checks.py): an application's JWT as
/// its password, the per-user connection limit, presence membership, KICK.
@Suite("MQTT connections are fanout connections", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTConnectionFeatureTests {
    private func expectPasses(_ check: String, arguments: [String] = [], environment: [String: String] = [:],
                              extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (daemon, mqttPort) = try Daemon.withMQTT(arguments: ["--http-listen", "127.0.0.1:0"] + arguments,
                                                     environment: environment)
        let script = try fixture("mqtt_server_checks.py")
        let run = try ExternalProgram("python3", [script, check, String(try daemon.httpPort()), String(daemon.port),
                                                  String(mqttPort)] + extra).finish(timeout: 100)
        #expect(run.status == 0 && run.stdout.contains { $0.hasPrefix("ok \(check) ") },
                "\(check): \((run.stdout + run.stderr).joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    /// A JWT as the password: its subject or `token` as user name connects, another name gets CONNACK 4, and
    /// its grant decides SUBACK's codes.
    @Test func anApplicationTokenIsAPassword() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fanout-mqtt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret").path
        try "secret-of-the-mqtt-tests\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let claims = #"{"sub":"alice","exp":"+120","fanout":{"subscribe":["rooms.>"],"publish":["rooms.>"]}}"#
        let mint = try ExternalProgram("python3", [try fixture("mint_token.py"), "HS256", secret, claims])
            .finish(timeout: 30)
        let token = try #require(mint.stdout.first, "mint: \(mint.stderr)")
        try expectPasses("jwt", environment: ["FANOUTD_TOKEN_SECRET_FILE": secret], extra: [token])
    }

    /// max_connections_per_user=1: the user's second MQTT connection gets CONNACK 3 and is closed.
    @Test func thePerUserLimitRefusesWithServerUnavailable() throws {
        try expectPasses("user-limit", arguments: ["--config", try fixture("auth.yaml")],
                         environment: ["FANOUTD_MAX_CONNECTIONS_PER_USER": "1"])
    }

    /// An MQTT subscriber of a kept subject is a member: WHO lists it, its join and leave are published.
    @Test func anMQTTSubscriberIsAPresenceMember() throws {
        try expectPasses("presence", environment: ["FANOUTD_PRESENCE": "room.>"])
    }

    /// KICK closes an MQTT connection, and its will is published.
    @Test func kickClosesAnMQTTConnectionAndItsWillGoes() throws {
        try expectPasses("kick")
    }

    /// A message whose subject has no MQTT topic is not sent to MQTT clients, and is counted.
    @Test func aSubjectWithoutATopicIsCounted() throws {
        try expectPasses("unmappable")
    }
}
