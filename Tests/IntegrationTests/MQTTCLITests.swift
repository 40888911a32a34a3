import Foundation
import Testing

/// Debian's mosquitto_sub and mosquitto_pub, unmodified, at QoS 0, 1 and 2 against fanoutd's MQTT listener.
@Suite("MQTT command-line clients", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTCLITests {
    /// How every received message is printed: `MSG <topic> <qos> <retain> <payload>`, apart from `-d`'s lines.
    static let format = ["-F", "MSG %t %q %r %p"]

    /// mosquitto_sub connected and subscribed (its `-d` output says SUBACK came), bounded by `-W`.
    private func subscriber(_ mqttPort: Int, _ filter: String, qos: Int, count: Int) throws -> ExternalProgram {
        let sub = try ExternalProgram("mosquitto_sub", ["-h", "127.0.0.1", "-p", String(mqttPort), "-t", filter,
                                                        "-q", String(qos), "-C", String(count), "-W", "30", "-d"]
                                                        + Self.format)
        _ = try sub.stdout.waitForLine(containing: "received SUBACK", timeout: 20)
        return sub
    }

    private func publish(_ mqttPort: Int, _ topic: String, _ message: String, qos: Int, retain: Bool = false,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try ExternalProgram("mosquitto_pub", ["-h", "127.0.0.1", "-p", String(mqttPort), "-t", topic,
                                                        "-m", message, "-q", String(qos)] + (retain ? ["-r"] : []))
            .finish(timeout: 30)
        #expect(run.status == 0, "mosquitto_pub: \((run.stdout + run.stderr).joined(separator: "\n"))",
                sourceLocation: sourceLocation)
    }

    private func messages(of sub: ExternalProgram) -> (status: Int32?, messages: [String], output: String) {
        let run = sub.finish(timeout: 40)
        return (run.status, run.stdout.filter { $0.hasPrefix("MSG ") }, (run.stdout + run.stderr).joined(separator: "\n"))
    }

    /// `mosquitto_sub -C 2` receives what `mosquitto_pub` and a TCP `PUB` send, at the QoS it asked (a fanout
    /// client's message counts as QoS 2), and exits 0.
    @Test(arguments: [0, 1, 2]) func subscriberReceivesMQTTAndTCPPublishes(qos: Int) throws {
        let (daemon, mqttPort) = try mqttDaemon()
        let sub = try subscriber(mqttPort, "cli/q\(qos)/#", qos: qos, count: 2)
        try publish(mqttPort, "cli/q\(qos)/mqtt", "from mosquitto_pub", qos: qos)
        let line = try LineClient(port: daemon.port)
        #expect(try line.readLine().hasPrefix("+HELLO "))
        #expect(try line.command("PUB cli.q\(qos).tcp from a line client") == "+OK 1")
        let run = messages(of: sub)
        #expect(run.status == 0, "mosquitto_sub: \(run.output)")
        #expect(run.messages == ["MSG cli/q\(qos)/mqtt \(qos) 0 from mosquitto_pub",
                                 "MSG cli/q\(qos)/tcp \(qos) 0 from a line client"], "\(run.output)")
    }

    /// `mosquitto_pub -r` at each QoS: a later mosquitto_sub receives it with the retain flag, at its QoS; a
    /// fanout client's `LAST` is not asked here (the retained store's own suite does).
    @Test(arguments: [0, 1, 2]) func retainedPublishReachesALaterSubscriber(qos: Int) throws {
        let (_, mqttPort) = try mqttDaemon()
        try publish(mqttPort, "cli/retained/q\(qos)", "kept at \(qos)", qos: qos, retain: true)
        let sub = try subscriber(mqttPort, "cli/retained/#", qos: 2, count: 1)
        let run = messages(of: sub)
        #expect(run.status == 0, "mosquitto_sub: \(run.output)")
        #expect(run.messages == ["MSG cli/retained/q\(qos) \(qos) 1 kept at \(qos)"], "\(run.output)")
    }

    /// mosquitto_pub to a TCP subscriber at each QoS: the message arrives as MSG on the mapped subject.
    @Test(arguments: [0, 1, 2]) func publisherReachesATCPSubscriber(qos: Int) throws {
        let (daemon, mqttPort) = try mqttDaemon()
        let line = try LineClient(port: daemon.port)
        #expect(try line.readLine().hasPrefix("+HELLO "))
        #expect(try line.command("SUB cli.tcp.>") == "+OK 1")
        try publish(mqttPort, "cli/tcp/q\(qos)", "to a line client", qos: qos)
        let pushed = try line.readLine()
        #expect(pushed.hasPrefix("MSG cli.tcp.q\(qos) ") && pushed.hasSuffix(" to a line client"), "\(pushed)")
    }
}
