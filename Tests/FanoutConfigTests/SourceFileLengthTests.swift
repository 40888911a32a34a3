import Foundation
import Testing

/// One concern per file: a source file past 400 lines holds two ideas, or generated text that should be cut
/// into parts (as embed-console.mjs cuts the console's copy of the JavaScript client).
@Suite("No source file is over 400 lines")
struct SourceFileLengthTests {
    static let maxLines = 400

    @Test func everySwiftFileUnderSourcesIsAtMost400Lines() throws {
        let sources = ShippedFilesTests.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var checked = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            let bytes = try Data(contentsOf: file)
            // Counted as `wc -l` does, plus a last line without its line break.
            let lines = bytes.filter { $0 == UInt8(ascii: "\n") }.count + (bytes.last == UInt8(ascii: "\n") ? 0 : 1)
            #expect(lines <= Self.maxLines, "\(file.path) has \(lines) lines: split it by concern")
            checked += 1
        }
        #expect(checked > 0, "found the Swift files under \(sources.path)")
    }
}
