import FanoutConfig
import Foundation
import Testing

/// config/fanoutd.yaml and docs/configuration.md cannot drift from the catalogue of settings, nor docs/protocol.md
/// from the shared contract and the error codes the server sends.
@Suite("The shipped config and the reference agree with the catalogue")
struct ShippedFilesTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// The shipped file serves the console; every other value it sets is the default. history_dir, whose
    /// default has no literal form, is set to off, so that any user can run the file from a clone (see
    /// `theInstalledCopiesKeepHistoryOnDisk`).
    static let shippedOverDefaults = ["http_listen": YAMLNode.scalar("127.0.0.1:7412"),
                                      "history_dir": YAMLNode.scalar("off")]

    private func text(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func everySettingIsInTheShippedConfigWithItsDefault() throws {
        let text = try text("config/fanoutd.yaml")
        let document = try YAMLReader.read(text)
        try SettingNames.checkFile(document)
        let lines = text.split(separator: "\n").map(String.init)
        for setting in Setting.all {
            guard let node = document.settings[setting.name], setting.hasLiteralDefault || Self.shippedOverDefaults[setting.name] != nil else {
                #expect(lines.contains { $0.hasPrefix("# \(setting.name):") },
                        "\(setting.name) is shown in config/fanoutd.yaml, set or as a '# \(setting.name):' example")
                continue
            }
            let expected = try Self.shippedOverDefaults[setting.name]
                ?? YAMLReader.read("value: \(setting.defaultValue)").settings["value"]
            #expect(node == expected, "config/fanoutd.yaml sets \(setting.name) to its default \(setting.defaultValue)")
        }
    }

    /// The package and `make install` turn history on disk on in the unit's state directory, by rewriting the
    /// one `history_dir: off` line of the tree's file; scripts/test-deb.sh checks the result on a real install.
    @Test func theInstalledCopiesKeepHistoryOnDisk() throws {
        let lines = try text("config/fanoutd.yaml").split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("history_dir:") } == ["history_dir: off"])
        let rewrite = "sed 's|^history_dir: off$$|history_dir: /var/lib/fanout/history|' config/fanoutd.yaml"
        for installer in ["debian/rules", "Makefile"] {
            #expect(try text(installer).contains(rewrite), "\(installer) installs the file with history on disk")
        }
    }

    /// An example is `# some_name: value`, or `# section:` alone on its line; prose has neither form.
    @Test func theCommentedExamplesNameOnlySettings() throws {
        for line in try text("config/fanoutd.yaml").split(separator: "\n") where line.hasPrefix("# ") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[line.index(line.startIndex, offsetBy: 2)..<colon]
            guard name.allSatisfy({ $0.isLowercase || $0 == "_" }), !name.isEmpty,
                  name.contains("_") || line.index(after: colon) == line.endIndex else { continue }
            #expect(Setting.named(String(name)) != nil, "'\(line)' names a setting")
        }
    }

    @Test func theReferenceTableIsGeneratedFromTheCatalogue() throws {
        let path = Self.root.appendingPathComponent("docs/configuration.md")
        let text = try String(contentsOf: path, encoding: .utf8)
        let begin = "<!-- settings table: generated from Sources/FanoutConfig/Setting+Catalogue.swift -->\n"
        let end = "<!-- end of settings table -->"
        let start = try #require(text.range(of: begin), "docs/configuration.md has the table's start marker")
        let stop = try #require(text.range(of: end, range: start.upperBound..<text.endIndex))
        let table = Setting.referenceTable()
        if String(text[start.upperBound..<stop.lowerBound]) != table,
           ProcessInfo.processInfo.environment["FANOUT_WRITE_DOCS"] == "1" {
            try (String(text[..<start.upperBound]) + table + String(text[stop.lowerBound...]))
                .write(to: path, atomically: true, encoding: .utf8)
            return
        }
        #expect(String(text[start.upperBound..<stop.lowerBound]) == table,
                "regenerate with: FANOUT_WRITE_DOCS=1 swift test --filter ShippedFilesTests")
    }

    /// docs/protocol.md is the shared contract, copied verbatim. Every run: it is the contract (its title), and
    /// the error codes the server can send are the contract's (`theServerSendsOnlyTheContractsErrorCodes`).
    /// Where the shared copy sits beside the repository (../shared/PROTOCOL.md; a clean clone has none), the two
    /// must also be equal.
    @Test func theProtocolDocumentIsTheSharedContract() throws {
        let copy = try text("docs/protocol.md")
        #expect(copy.hasPrefix("# Fanout wire protocol, version 1"), "docs/protocol.md is the wire protocol")
        let shared = Self.root.deletingLastPathComponent().appendingPathComponent("shared/PROTOCOL.md")
        guard FileManager.default.fileExists(atPath: shared.path) else { return }
        #expect(copy == (try String(contentsOf: shared, encoding: .utf8)), "copy \(shared.path) to docs/protocol.md")
    }

    /// Every `ErrorCode("<code>")` under Sources/ is named by the contract, as `-ERR <code>` or as `<code>` in
    /// backquotes (the list of codes sent before a close), or by the "Beyond the contract" section of
    /// docs/protocol-summary.md, where this server states what it sends that the shared contract does not yet
    /// describe: a client can rely on the words they document.
    @Test func theServerSendsOnlyTheContractsErrorCodes() throws {
        let summary = try text("docs/protocol-summary.md")
        let beyond = try #require(summary.components(separatedBy: "\n## Beyond the contract\n").dropFirst().first,
                                  "docs/protocol-summary.md has a section \"Beyond the contract\"")
        let contract = try text("docs/protocol.md") + beyond
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var codes: Set<String> = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let source = try String(contentsOf: file, encoding: .utf8)
            for piece in source.components(separatedBy: "ErrorCode(\"").dropFirst() {
                codes.insert(String(piece.prefix { $0 != "\"" }))
            }
        }
        #expect(codes.count >= 10, "found the server's error codes under Sources/: \(codes.sorted())")
        for code in codes.sorted() {
            #expect(contract.contains("-ERR \(code)") || contract.contains("`\(code)`"),
                    "docs/protocol.md names the error code \(code)")
        }
    }
}
