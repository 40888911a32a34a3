import FanoutConfig
import Testing

/// The MQTT listener's six settings are known by name, in the file and in the environment, with the kinds and
/// defaults docs/mqtt.md states.
@Suite("The MQTT settings are in the catalogue")
struct MQTTSettingsCatalogueTests {
    @Test(arguments: [
        ("mqtt_listen", Setting.Kind.texts, "[]"), ("mqtt_tls_listen", .texts, "[]"),
        ("mqtt_max_retained", .wholeNumber, "10000"), ("mqtt_max_sessions", .wholeNumber, "10000"),
        ("mqtt_session_max_messages", .wholeNumber, "1000"), ("mqtt_session_expiry", .seconds, "86400"),
    ])
    func eachIsKnownWithItsKindAndDefault(name: String, kind: Setting.Kind, defaultValue: String) throws {
        let setting = try #require(Setting.named(name))
        #expect(setting.kind == kind)
        #expect(setting.defaultValue == defaultValue)
        #expect(setting.environmentName == "FANOUTD_" + name.uppercased())
        try SettingNames.checkEnvironment([setting.environmentName ?? ""])
    }

    @Test func eachReadsFromTheFileAndTheEnvironment() throws {
        let file = try YAMLReader.read("""
            mqtt_listen: ["127.0.0.1:1883"]
            mqtt_tls_listen: ["127.0.0.1:8883", "[::1]:8883"]
            mqtt_max_retained: 5
            mqtt_max_sessions: 6
            mqtt_session_max_messages: 7
            mqtt_session_expiry: 0.5
            """)
        try SettingNames.checkFile(file)
        let fromFile = SettingsReader(file: file, environment: { _ in nil })
        #expect(try fromFile.strings("mqtt_listen") == ["127.0.0.1:1883"])
        #expect(try fromFile.strings("mqtt_tls_listen") == ["127.0.0.1:8883", "[::1]:8883"])
        #expect(try fromFile.int("mqtt_max_retained") == 5)
        #expect(try fromFile.int("mqtt_max_sessions") == 6)
        #expect(try fromFile.int("mqtt_session_max_messages") == 7)
        #expect(try fromFile.seconds("mqtt_session_expiry") == .milliseconds(500))

        let environment = ["FANOUTD_MQTT_LISTEN": "127.0.0.1:1, 127.0.0.1:2", "FANOUTD_MQTT_TLS_LISTEN": "127.0.0.1:3",
                           "FANOUTD_MQTT_MAX_RETAINED": "8", "FANOUTD_MQTT_MAX_SESSIONS": "9",
                           "FANOUTD_MQTT_SESSION_MAX_MESSAGES": "10", "FANOUTD_MQTT_SESSION_EXPIRY": "0"]
        let fromEnvironment = SettingsReader(file: file, environment: { environment[$0] })
        #expect(try fromEnvironment.strings("mqtt_listen") == ["127.0.0.1:1", "127.0.0.1:2"])
        #expect(try fromEnvironment.strings("mqtt_tls_listen") == ["127.0.0.1:3"])
        #expect(try fromEnvironment.int("mqtt_max_retained") == 8)
        #expect(try fromEnvironment.int("mqtt_max_sessions") == 9)
        #expect(try fromEnvironment.int("mqtt_session_max_messages") == 10)
        #expect(try fromEnvironment.seconds("mqtt_session_expiry") == .zero)
        #expect(fromEnvironment.line(of: "mqtt_max_sessions") == nil, "the value came from the environment")
    }

    @Test func aMisspelledNameGetsTheNearestOne() throws {
        let file = try YAMLReader.read("mqtt_listn: [\"127.0.0.1:1883\"]\n")
        #expect { try SettingNames.checkFile(file) } throws: { error in
            "\(error)".contains("mqtt_listen")
        }
    }
}
