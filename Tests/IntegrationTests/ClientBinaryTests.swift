import Foundation
import Testing

/// The `fanout` executable links no full Foundation, and so no ICU: with it, a statically linked client was
/// 60 MB, most of it ICU's data. Checked on the built binary, linked either way: a dynamic build would name
/// libFoundation.so or libFoundationInternationalization.so, a static one would hold their module names in
/// its Swift metadata. FoundationEssentials (which swift-argument-parser uses) has no ICU and is allowed.
@Suite("The fanout executable", .threadPerTest, .threadPerTest)
struct ClientBinaryTests {
    @Test func linksNoFoundationWithICU() throws {
        let path = Daemon.binDirectory.appendingPathComponent("fanout").path
        let bytes = try #require(FileManager.default.contents(atPath: path), "\(path) is built")
        for name in ["libFoundation.so", "FoundationInternationalization", "_FoundationICU"] {
            #expect(bytes.range(of: Data(name.utf8)) == nil, "fanout names \(name)")
        }
    }
}
