import Foundation
import Testing

/// Runs `check` of an MQTT fixture (Fixtures/mqtt_*.py, paho-mqtt and raw sockets) against `daemon`, giving it the
/// HTTP, protocol and MQTT ports, and expects "ok". A machine without paho-mqtt fails here, saying so.
func expectMQTTCheckPasses(_ script: String, _ check: String, daemon: Daemon, mqttPort: Int,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
    let arguments = [try fixture(script), check, String(try daemon.httpPort()), String(daemon.port), String(mqttPort)]
    let run = try ExternalProgram("python3", arguments).finish(timeout: 100)
    #expect(run.status == 0 && run.stdout.contains { $0.hasPrefix("ok \(check) ") },
            "\(script) \(check): \((run.stdout + run.stderr).joined(separator: "\n"))", sourceLocation: sourceLocation)
}

/// A daemon with the protocol, HTTP and MQTT listeners, each on a port the kernel chooses.
func mqttDaemon(arguments: [String] = [], environment: [String: String] = [:]) throws -> (Daemon, Int) {
    try Daemon.withMQTT(arguments: ["--http-listen", "127.0.0.1:0"] + arguments, environment: environment)
}

/// paho-mqtt, an unmodified third-party client, speaking MQTT 3.1.1 only (mqtt_client_checks.py; every check
/// holds against Debian's mosquitto broker too).
@Suite("MQTT clients", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTClientTests {
    private func expectPasses(_ check: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (daemon, mqttPort) = try mqttDaemon()
        try expectMQTTCheckPasses("mqtt_client_checks.py", check, daemon: daemon, mqttPort: mqttPort,
                                  sourceLocation: sourceLocation)
    }

    /// QoS 0, 1 and 2: every byte value, line feeds and an empty payload arrive unchanged at the QoS asked; a
    /// message goes at the lower of its publisher's and its filter's QoS.
    @Test func qosRoundTrips() throws { try expectPasses("qos-roundtrip") }

    /// `+` one level, `#` its parent too (`a/#` matches `a`), a leading wildcard never a `$` topic.
    @Test func wildcards() throws { try expectPasses("wildcards") }

    /// A retained message at each QoS reaches a later subscriber with the retain flag; live ones carry none; an
    /// empty retained payload clears it.
    @Test func retainedMessages() throws { try expectPasses("retained") }

    /// A connection lost without DISCONNECT has its will published at its QoS (and retained when asked); after
    /// DISCONNECT there is none.
    @Test func wills() throws { try expectPasses("will") }

    /// Keep-alive 1 and silence: closed within about 1.5 s and the will published; PINGREQs keep it open.
    @Test func keepAliveExpiry() throws { try expectPasses("keepalive") }

    /// Clean session 0 at QoS 1 and 2: what was published while the client was away arrives when it returns,
    /// an unacknowledged message is sent again with DUP, clean session 1 ends the session.
    @Test func sessionsKeepMessagesWhileAway() throws { try expectPasses("session") }

    /// A second connection with a connected client's id closes the first, whose will goes.
    @Test func sessionTakeover() throws { try expectPasses("takeover") }

    /// `$share/<group>/<filter>`: each message to one member, and both members take some.
    @Test func sharedSubscriptions() throws { try expectPasses("shared") }
}
