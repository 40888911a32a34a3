import Foundation
import Testing

/// One concern per file: a hand-written source file past 400 lines holds two ideas. Judged: every file under
/// Sources/ that people write (Swift, C, and the console's HTML, CSS and JavaScript). Left out: copies of a
/// build, each by its exact path and only while the one script that writes it names that path.
@Suite("No hand-written source file is over 400 lines")
struct SourceFileLengthTests {
    static let maxLines = 400
    static let judgedExtensions: Set<String> = ["swift", "c", "h", "html", "css", "js"]
    /// Copies of a build, by path from the repository's root, and the script that writes each.
    static let copies = ["Sources/FanoutConsole/Page/fanout.browser.js": "clients/js/scripts/embed-console.mjs"]

    /// Counted as `wc -l` does, plus a last line without its line break.
    static func lines(_ bytes: Data) -> Int {
        bytes.filter { $0 == UInt8(ascii: "\n") }.count + (bytes.isEmpty || bytes.last == UInt8(ascii: "\n") ? 0 : 1)
    }

    /// Every file under Sources/ with a judged extension, by path from the repository's root.
    static func sourceFiles() throws -> [String] {
        let root = ShippedFilesTests.root.standardizedFileURL.path
        let sources = ShippedFilesTests.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        return files.compactMap { ($0 as? URL)?.standardizedFileURL }
            .filter { judgedExtensions.contains($0.pathExtension) }
            .map { String($0.path.dropFirst(root.count + 1)) }
    }

    @Test func everyHandWrittenFileUnderSourcesIsAtMost400Lines() throws {
        var judged: Set<String> = []
        for path in try Self.sourceFiles() where Self.copies[path] == nil {
            let lines = Self.lines(try Data(contentsOf: ShippedFilesTests.root.appendingPathComponent(path)))
            #expect(lines <= Self.maxLines, "\(path) has \(lines) lines: split it by concern")
            judged.insert(URL(fileURLWithPath: path).pathExtension)
        }
        #expect(judged == Self.judgedExtensions, "found files of every judged kind under Sources/")
    }

    /// A copy is left out only while it is one: its file is there and its script writes exactly that path.
    @Test func theFilesLeftOutAreCopiesTheirScriptsWrite() throws {
        let files = Set(try Self.sourceFiles())
        for (path, script) in Self.copies {
            #expect(files.contains(path), "\(path) is under Sources/")
            let text = try String(contentsOf: ShippedFilesTests.root.appendingPathComponent(script), encoding: .utf8)
            #expect(text.contains("\"\(path)\""), "\(script) writes \(path)")
        }
    }

    /// Generated Swift would be judged as hand-written: there is none to judge.
    @Test func noSwiftFileUnderSourcesIsGenerated() throws {
        for path in try Self.sourceFiles() where path.hasSuffix(".swift") {
            let text = try String(contentsOf: ShippedFilesTests.root.appendingPathComponent(path), encoding: .utf8)
            let generated = text.hasPrefix("// Generated")
            #expect(!generated, "\(path) is generated: make it a resource or a build step")
        }
    }

    @Test func linesAreCountedAsWcCountsThemPlusAnUnendedLastOne() {
        #expect(Self.lines(Data()) == 0)
        #expect(Self.lines(Data("a\nb\n".utf8)) == 2)
        #expect(Self.lines(Data("a\nb".utf8)) == 2)
    }
}
