import Foundation
import Testing

/// Debian's mosquitto_sub and mosquitto_pub, unmodified, at QoS 0, 1 and 2 against fanoutd's MQTT listener.
@Suite("MQTT command-line clients", .threadPerTest, .timeLimit(.minutes(2)))
struct MQTTCLITests {
    /// How every received message is printed: `MSG <topic> <qos> <retain> <payload>`, apart from `-d`'s lines.
    static let format = ["-F", "MSG %t %q %r %p"]

    /// The path of one of mosquitto-clients' programs, or a failure that says what to install.
    private func installed(_ program: String) throws -> String {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/local/bin", "/usr/bin", "/bin"]
        guard let path = directories.map({ $0 + "/" + program }).first(where: FileManager.default.isExecutableFile)
        else { throw TestFailure("\(program) is not installed (./dev deps installs mosquitto-clients)") }
        return path
    }

    /// mosquitto_sub connected and subscribed (its `-d` output says SUBACK came), bounded by `-W`. Its output
    /// is line-buffered (`stdbuf -oL`): into a pipe, stdio would hold the SUBACK line until it exits.
    private func subscriber(_ mqttPort: Int, _ filter: String, qos: Int, count: Int) throws -> ExternalProgram {
        let sub = try ExternalProgram("stdbuf", ["-oL", try installed("mosquitto_sub"), "-h", "127.0.0.1",
                                                 "-p", String(mqttPort), "-t", filter, "-q", String(qos),
                                                 "-C", String(count), "-W", "30", "-d"] + Self.format)
        do {
            _ = try sub.stdout.waitForLine(containing: "received SUBACK", timeout: 20)
        } catch {
            throw TestFailure("mosquitto_sub did not subscribe: \(error)\n\(sub.stderr.all.joined(separator: "\n"))")
        }
        return sub
    }

    private func publish(_ mqttPort: Int, _ topic: String, _ message: String, qos: Int, retain: Bool = false,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try ExternalProgram(try installed("mosquitto_pub"), ["-h", "127.0.0.1", "-p", String(mqttPort), "-t", topic,
                                                        "-m", message, "-q", String(qos)] + (retain ? ["-r"] : []))
            .finish(timeout: 30)
        #expect(run.status == 0, "mosquitto_pub: \((run.stdout + run.stderr).joined(separator: "\n"))",
                sourceLocation: sourceLocation)
    }

    /// What mosquitto_sub printed once it exits (after `-C` messages), or is killed at `timeout`.
    private func messages(of sub: ExternalProgram, timeout: TimeInterval = 40)
        -> (status: Int32?, messages: [String], output: String) {
        let run = sub.finish(timeout: timeout)
        return (run.status, run.stdout.filter { $0.hasPrefix("MSG ") }, (run.stdout + run.stderr).joined(separator: "\n"))
    }

    /// `mosquitto_sub -C 2` receives what `mosquitto_pub` and a TCP `PUB` send, at the QoS it asked (a fanout
    /// client's message counts as QoS 2), and exits 0.
    @Test(arguments: [0, 1, 2]) func subscriberReceivesMQTTAndTCPPublishes(qos: Int) throws {
        let (daemon, mqttPort) = try mqttDaemon()
        try withExtendedLifetime(daemon) {
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
    }

    /// `mosquitto_pub -r` at each QoS: a later mosquitto_sub receives it with the retain flag, at its QoS; a
    /// fanout client's `LAST` is not asked here (the retained store's own suite does).
    @Test(arguments: [0, 1, 2]) func retainedPublishReachesALaterSubscriber(qos: Int) throws {
        let (daemon, mqttPort) = try mqttDaemon()
        try withExtendedLifetime(daemon) {
            try publish(mqttPort, "cli/retained/q\(qos)", "kept at \(qos)", qos: qos, retain: true)
            let sub = try subscriber(mqttPort, "cli/retained/#", qos: 2, count: 1)
            // A retained message follows the SUBACK at once: a shorter wait than for live messages.
            let run = messages(of: sub, timeout: 15)
            #expect(run.status == 0, "mosquitto_sub: \(run.output)")
            #expect(run.messages == ["MSG cli/retained/q\(qos) \(qos) 1 kept at \(qos)"], "\(run.output)")
        }
    }

    /// mosquitto_pub to a TCP subscriber at each QoS: the message arrives as MSG on the mapped subject.
    @Test(arguments: [0, 1, 2]) func publisherReachesATCPSubscriber(qos: Int) throws {
        let (daemon, mqttPort) = try mqttDaemon()
        try withExtendedLifetime(daemon) {
            let line = try LineClient(port: daemon.port)
            #expect(try line.readLine().hasPrefix("+HELLO "))
            #expect(try line.command("SUB cli.tcp.>") == "+OK 1")
            try publish(mqttPort, "cli/tcp/q\(qos)", "to a line client", qos: qos)
            let pushed = try line.readLine()
            #expect(pushed.hasPrefix("MSG cli.tcp.q\(qos) ") && pushed.hasSuffix(" to a line client"), "\(pushed)")
        }
    }
}
