import Foundation
import Testing

/// The man pages keep up with the programs: fanoutd(8) names every option `fanoutd --help` shows and every
/// verb the server's HELP lists (it lacked --hash-token and the verbs of 1.1 and 1.2); fanout(1) names every
/// subcommand and every option of the common ones.
@Suite("The man pages", .threadPerTest, .timeLimit(.minutes(2)))
struct ManPageTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// The page's text with roff's escaped hyphens made plain.
    private func page(_ name: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent("man/\(name)"), encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
    }

    /// The long options a --help text lists, at the start of its lines.
    private func options(_ help: [String]) -> Set<String> {
        Set(help.compactMap { line in
            let text = line.drop { $0 == " " }
            guard text.hasPrefix("--") else { return nil }
            let option = String(text.prefix { $0 == "-" || $0.isLetter })
            return option.count > 2 ? option : nil
        })
    }

    @Test func fanoutdsPageNamesEveryOptionAndVerb() throws {
        let text = try page("fanoutd.8")
        let help = try ExternalProgram(path: Daemon.executable.path, ["--help"], input: .none).finish(timeout: 20)
        let shown = options(help.stdout)
        #expect(shown.contains("--hash-token"))
        for option in shown.subtracting(["--help"]) {
            #expect(text.contains(option), "fanoutd.8 names \(option)")
        }
        let daemon = try Daemon()
        let verbs = try daemon.client().command("HELP").split(separator: " ").dropFirst()
        #expect(verbs.contains("QSUB") && verbs.contains("RESUME"))
        for verb in verbs {
            #expect(text.contains("\\fB\(verb)\\fR"), "fanoutd.8 names the verb \(verb)")
        }
    }

    @Test func fanoutsPageNamesEverySubcommandAndCommonOption() throws {
        let text = try page("fanout.1")
        let subcommands = ["sub", "pub", "ask", "answer", "who", "kick", "info", "channels", "clients", "ping", "bench"]
        for subcommand in subcommands {
            #expect(text.contains(".BR \(subcommand) ") || text.contains(".B \(subcommand)\n"),
                    "fanout.1 has \(subcommand)")
            let help = try FanoutTool.run(["help", subcommand])
            for option in options(help.stdout).subtracting(["--help", "--version"]) {
                #expect(text.contains(option), "fanout.1 names \(option) of \(subcommand)")
            }
        }
    }
}
