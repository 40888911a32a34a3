import FanoutConfig
import Testing

@Suite("The YAML subset reader")
struct YAMLReaderTests {
    @Test func readsEveryFormTheDocumentationUses() throws {
        let document = try YAMLReader.read("""
            --- # a comment after the document start
            listen:
            - "127.0.0.1:0"   # double-quoted
            - '127.0.0.1:1'
            server_name: 'it''s-a-host'
            max_line: "4096"
            write_timeout: 1.5
            admin_commands: [INFO,
              "CLIENTS",
            ]
            metrics_listen: ~
            empty: {}
            users:
              alice:
                publish:
                  - "a.>"
                  - b.*
                admin: yes
            history:
              - subjects: "orders.>"
                max_messages: 10
            """)
        let settings = document.settings
        #expect(settings["listen"] == .sequence([.scalar("127.0.0.1:0"), .scalar("127.0.0.1:1")]))
        #expect(settings["server_name"] == .scalar("it's-a-host"))
        #expect(settings["max_line"] == .scalar("4096"))
        #expect(settings["admin_commands"] == .sequence([.scalar("INFO"), .scalar("CLIENTS")]))
        #expect(settings["metrics_listen"] == .null)
        #expect(settings["empty"] == .mapping([:]))
        #expect(settings["users"] == .mapping(["alice": .mapping([
            "publish": .sequence([.scalar("a.>"), .scalar("b.*")]), "admin": .scalar("yes"),
        ])]))
        #expect(settings["history"] == .sequence([.mapping(["subjects": .scalar("orders.>"), "max_messages": .scalar("10")])]))
    }

    @Test func remembersTheLineOfEveryValue() throws {
        let document = try YAMLReader.read("""
            # heading

            max_line: 5
            admin_commands: [INFO,
              CLIENTS]
            users:
              alice:
                publish:
                  - "a.>"
            history:
              - subjects: "x"
                max_messages: 1
            """)
        #expect(document.line(of: "max_line") == 3)
        #expect(document.line(of: "admin_commands[1]") == 5)
        #expect(document.line(of: "users.alice.publish[0]") == 9)
        #expect(document.line(of: "history[0]") == 11)
        #expect(document.line(of: "history[0].subjects") == 11)
        #expect(document.line(of: "history[0].max_messages") == 12)
        #expect(document.line(of: "absent") == nil)
    }

    /// YAML the reader does not take is refused with its line, never read some other way.
    @Test(arguments: [
        ("max_line: &anchor 5\n", "line 1: '&'"), ("server_name: |\n  text\n", "line 1: '|'"),
        ("users: {a: b}\n", "line 1: {...} maps"), ("max_line: 5\nmax_line: 6\n", "line 2: 'max_line' is given twice"),
        ("listen:\n\t- a\n", "line 2: tabs"), ("listen: [a, b\n", "line 1: the '[' list is not closed"),
        ("server_name: a: b\n", "line 1: a ': ' inside a value"), ("a: 1\n---\nb: 2\n", "line 2: only one YAML document"),
        ("- a\n- b\n", "line 1: the file must be 'setting: value' lines"), ("a: \"open\n", "line 1: the quoted value"),
    ])
    func refusesWhatItDoesNotReadWithTheLine(text: String, message: String) {
        #expect {
            _ = try YAMLReader.read(text)
        } throws: { error in
            "\(error)".hasPrefix(message)
        }
    }

    @Test func anEmptyFileHasNoSettings() throws {
        #expect(try YAMLReader.read("").settings.isEmpty)
        #expect(try YAMLReader.read("# only comments\n\n").settings.isEmpty)
    }

    /// Whatever the bytes, the reader answers with a document or a problem on a line that exists.
    @Test func arbitraryTextNeverCrashesAndProblemsNameARealLine() {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["a", ":", " ", "-", "\n", "\"", "'", "[", "]", ",", "#", "{", "}", "\t", "  ", "x: ", "- y\n", "\\"]
        for _ in 0..<2000 {
            let text = (0..<Int.random(in: 0...40, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
            do {
                _ = try YAMLReader.read(text)
            } catch {
                if let line = error.line { #expect(line >= 1 && line <= lineCount, "\(text.debugDescription)") }
            }
        }
    }
}
