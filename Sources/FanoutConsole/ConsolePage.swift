/// The operator's console at `GET /`: one self-contained page (HTML, CSS and JS, no CDN, no framework)
/// compiled into the binary, so that it works offline and always matches the server it comes from.
///
/// The page is written as real files in `Page/`: `console.html`, `console.css`, `console.js` (the page's own
/// script), and `fanout.browser.js`, the Fanout JavaScript client's one-file browser build (clients/js), so that
/// the browser side of the protocol is written once. SwiftPM embeds each file's bytes at build time
/// (`.embedInCode`, `PackageResources`); the page served is `console.html` with each linked file inlined in
/// place of its tag, so that one response holds everything. `node clients/js/scripts/embed-console.mjs` copies
/// the current browser build into `Page/` after a change to the client, and the client's tests fail while the
/// copy is stale.
///
/// The page shows INFO every second for the counters and the messages-per-second chart (the last five
/// minutes), CHANNELS every two seconds, CLIENTS every five (admins only on a server with users); the subscribe
/// box subscribes (concrete subjects resume after a reconnect, and resumes and `RESET` pushes are shown among
/// the messages), and the publish form publishes; the subjects table shows the groups holding each pattern
/// (`GET /groups`), and the ask box puts a question and lists the answers as they arrive. It asks for a token
/// when the greeting says `auth=required`, keeps it for the tab's session only, and reconnects by itself. The
/// event-stream panel opens an `EventSource` on `/events`, which resumes by itself after a drop.
public enum ConsolePage {
    /// The page as served, before the server fills in its connect hint (`{{nc-command}}`, `{{server-option}}`).
    /// Put together on first use, not at start: a server whose console nobody opens keeps no copy.
    public static let html: [UInt8] = inlining(inlined, into: PackageResources.console_html)

    /// A tag of `console.html` that links a file, and what the served page has in its place: `opening`, a line
    /// break, the file's bytes (each ends with its own line break), `closing`.
    struct Inlined {
        let tag: String
        let opening: String
        let file: [UInt8]
        let closing: String
    }

    /// Every file `console.html` links, each by the one tag that names it.
    static var inlined: [Inlined] {
        [
            Inlined(tag: #"<link rel="stylesheet" href="console.css">"#, opening: "<style>",
                    file: PackageResources.console_css, closing: "</style>"),
            Inlined(tag: #"<script id="fanout-client" src="fanout.browser.js"></script>"#,
                    opening: #"<script id="fanout-client">"#, file: PackageResources.fanout_browser_js,
                    closing: "</script>"),
            Inlined(tag: #"<script src="console.js"></script>"#, opening: "<script>",
                    file: PackageResources.console_js, closing: "</script>"),
        ]
    }

    /// `page` with each of `files` in place of its tag. A tag that is missing, or there twice, is a page edited
    /// out of step with this list: a programming error, which ConsolePageTests catch before a build ships.
    static func inlining(_ files: [Inlined], into page: [UInt8]) -> [UInt8] {
        var page = page
        for file in files {
            let tag = Array(file.tag.utf8)
            let found = ranges(of: tag, in: page)
            precondition(found.count == 1, "console.html links \(file.tag) \(found.count) times, not once")
            page.replaceSubrange(found[0], with: Array(file.opening.utf8) + [UInt8(ascii: "\n")] + file.file
                                 + Array(file.closing.utf8))
        }
        return page
    }

    /// Where `needle` starts in `haystack`, without overlaps. O(haystack × needle); runs once, on about 90 KB.
    static func ranges(of needle: [UInt8], in haystack: [UInt8]) -> [Range<Int>] {
        var found: [Range<Int>] = []
        var index = 0
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0], haystack[index..<index + needle.count].elementsEqual(needle) {
                found.append(index..<index + needle.count)
                index += needle.count
            } else {
                index += 1
            }
        }
        return found
    }
}
