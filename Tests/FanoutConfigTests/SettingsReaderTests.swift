import FanoutConfig
import Testing

@Suite("Typed settings say where, what was expected and what was found")
struct SettingsReaderTests {
    private func reader(_ text: String, environment: [String: String] = [:]) throws -> SettingsReader {
        SettingsReader(file: try YAMLReader.read(text), environment: { environment[$0] })
    }

    @Test func valuesOfEachKind() throws {
        let reader = try reader("max_line: \"4096\"\nwrite_timeout: 1.5\nlisten: a\nadmin_commands: [INFO, CLIENTS]\n")
        #expect(try reader.int("max_line") == 4096)
        #expect(try reader.seconds("write_timeout") == .milliseconds(1500))
        #expect(try reader.strings("listen") == ["a"])
        #expect(try reader.strings("admin_commands") == ["INFO", "CLIENTS"])
        #expect(try reader.int("max_connections") == nil, "absent is nil, not the default")
    }

    @Test func theEnvironmentWinsAndSplitsListsOnCommas() throws {
        let reader = try reader("max_line: 100\n", environment: ["FANOUTD_MAX_LINE": "200", "FANOUTD_LISTEN": "a, b"])
        #expect(try reader.int("max_line") == 200)
        #expect(try reader.strings("listen") == ["a", "b"])
        #expect(reader.line(of: "max_line") == nil, "the value came from the environment")
    }

    @Test func aWrongValueNamesItsLineAndWhatWasFound() throws {
        let reader = try reader("# x\nmax_line: a lot\nlisten:\n  - a\n  - [b]\nwrite_timeout: [1]\n")
        #expect(throws: ConfigProblem(line: 2, "max_line: expected a whole number, found 'a lot'")) { try reader.int("max_line") }
        #expect(throws: ConfigProblem(line: 5, "listen[1]: expected text, found a list")) { try reader.strings("listen") }
        #expect(throws: ConfigProblem(line: 6, "write_timeout: expected a number of seconds (0 to 1000000000), found a list")) {
            try reader.seconds("write_timeout")
        }
    }

    @Test func aWrongEnvironmentValueNamesTheVariable() throws {
        let reader = try reader("", environment: ["FANOUTD_IDLE_TIMEOUT": "-1"])
        #expect(throws: ConfigProblem(line: nil, "FANOUTD_IDLE_TIMEOUT: expected a number of seconds (0 to 1000000000), found '-1'")) {
            try reader.seconds("idle_timeout")
        }
    }
}
