@testable import FanoutConsole
import Foundation
import Testing

/// The page fanoutd serves at `GET /` is console.html with console.css, the client's browser build and
/// console.js inlined at their tags, from the bytes SwiftPM embedded at build time.
@Suite("The console page is its files put together")
struct ConsolePageTests {
    static let page: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Sources/FanoutConsole/Page")
    }()

    private func file(_ name: String) throws -> String {
        try String(contentsOf: Self.page.appendingPathComponent(name), encoding: .utf8)
    }

    @Test func theServedPageIsTheHTMLFileWithEachLinkedFileInPlaceOfItsTag() throws {
        var expected = try file("console.html")
        let replacements = [
            (#"<link rel="stylesheet" href="console.css">"#, "<style>\n" + (try file("console.css")) + "</style>"),
            (#"<script id="fanout-client" src="fanout.browser.js"></script>"#,
             "<script id=\"fanout-client\">\n" + (try file("fanout.browser.js")) + "</script>"),
            (#"<script src="console.js"></script>"#, "<script>\n" + (try file("console.js")) + "</script>"),
        ]
        for (tag, inlined) in replacements {
            #expect(expected.components(separatedBy: tag).count == 2, "console.html has \(tag) once")
            expected = expected.replacingOccurrences(of: tag, with: inlined)
        }
        #expect(ConsolePage.html == Array(expected.utf8))
    }

    @Test func theEmbeddedBytesAreTheFilesInTheTree() throws {
        let embedded = ["console.html": PackageResources.console_html, "console.css": PackageResources.console_css,
                        "console.js": PackageResources.console_js,
                        "fanout.browser.js": PackageResources.fanout_browser_js]
        for (name, bytes) in embedded {
            #expect(bytes == Array(try Data(contentsOf: Self.page.appendingPathComponent(name))), "\(name)")
        }
    }

    /// The browser build sits whole in one script element; the JavaScript client's tests hold its copy current.
    @Test func thePageCarriesTheClientsBrowserBuildWhole() throws {
        let client = "<script id=\"fanout-client\">\n" + (try file("fanout.browser.js")) + "</script><script>\n"
        #expect(ConsolePage.ranges(of: Array(client.utf8), in: ConsolePage.html).count == 1)
        #expect(try file("fanout.browser.js").contains("globalThis.Fanout"))
    }

    /// No link is left for a browser to fetch, and ConsoleConnectHint finds both of its markers.
    @Test func theServedPageLinksNothingAndKeepsTheConnectHintsMarkers() {
        let page = ConsolePage.html
        for link in [" src=\"", "<link "] {
            #expect(ConsolePage.ranges(of: Array(link.utf8), in: page).isEmpty, "\(link) left in the page")
        }
        for marker in ["{{nc-command}}", "{{server-option}}"] {
            #expect(ConsolePage.ranges(of: Array(marker.utf8), in: page).count >= 1, "\(marker) in the page")
        }
    }

    @Test func aTagIsFoundWhereverItIsWithoutOverlaps() {
        let tag = Array("<a>".utf8)
        #expect(ConsolePage.ranges(of: tag, in: Array("x<a>y<a><a".utf8)) == [1..<4, 5..<8])
        #expect(ConsolePage.ranges(of: tag, in: Array("<a".utf8)).isEmpty)
        #expect(ConsolePage.ranges(of: Array("aa".utf8), in: Array("aaa".utf8)) == [0..<2])
    }

    @Test func aFileIsInlinedOnItsOwnLinesBetweenItsElementsTags() {
        let file = ConsolePage.Inlined(tag: "<x>", opening: "<s>", file: Array("body\n".utf8), closing: "</s>")
        #expect(ConsolePage.inlining([file], into: Array("a<x>b".utf8)) == Array("a<s>\nbody\n</s>b".utf8))
    }
}
