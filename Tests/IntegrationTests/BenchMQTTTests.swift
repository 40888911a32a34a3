import Foundation
import Testing

@Suite("fanout bench over MQTT", .threadPerTest, .timeLimit(.minutes(3)))
struct BenchMQTTTests {
    /// `--protocol mqtt` at QoS 0, 1 and 2 against fanoutd's MQTT listener: every message reaches every
    /// subscriber (QoS 0 publishes each followed by a PINGREQ, QoS 1 acknowledged by PUBACK, QoS 2 by its
    /// four-packet handshake, both sides), and a `$share` group takes each message once.
    @Test(arguments: [0, 1, 2])
    func benchRunsOverMQTTAtEachQoS(qos: Int) throws {
        let (daemon, mqttPort) = try Daemon.withMQTT()
        let result = try FanoutTool.run(["bench", "--protocol", "mqtt", "--server", "127.0.0.1:\(mqttPort)",
                                         "--mqtt-qos", String(qos), "--subscribers", "5", "--subjects", "2",
                                         "--messages", "3000", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let run = try #require((report?["results"] as? [[String: Any]])?.first)
        #expect(run["lost"] as? Int == 0, "\(run)")
        #expect(run["delivered"] as? Int == 7500, "3000 messages over 2 subjects with 3 and 2 subscribers: \(run)")
        _ = daemon
    }

    @Test func aSharedSubscriptionTakesEachMessageOnce() throws {
        let (daemon, mqttPort) = try Daemon.withMQTT()
        let result = try FanoutTool.run(["bench", "--protocol", "mqtt", "--server", "127.0.0.1:\(mqttPort)",
                                         "--mqtt-qos", "1", "--subscribers", "4", "--group", "workers",
                                         "--messages", "2000", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let run = try #require((report?["results"] as? [[String: Any]])?.first)
        #expect(run["delivered"] as? Int == 2000, "one member of the group per message: \(run)")
        _ = daemon
    }
}
