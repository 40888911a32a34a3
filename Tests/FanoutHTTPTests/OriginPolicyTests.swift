import FanoutHTTP
import Testing

@Suite("Origin policy (http_allowed_origins)")
struct OriginPolicyTests {
    private func verdict(_ origin: String?, host: String? = "fanout.example:7412",
                         _ allowed: [String] = []) -> OriginPolicy.Verdict {
        OriginPolicy(allowed: allowed).verdict(origin: origin, host: host)
    }

    private func allows(_ origin: String?, host: String? = "fanout.example:7412", _ allowed: [String] = []) -> Bool {
        if case .refused = verdict(origin, host: host, allowed) { return false }
        return true
    }

    private static let malformed = "malformed Origin header: refused (http_allowed_origins takes scheme://host[:port])"

    @Test func aRequestWithoutOriginIsAProgramAndAllowed() {
        #expect(verdict(nil) == .noOrigin)
        #expect(verdict(nil, ["https://app.example"]) == .noOrigin)
    }

    /// The default: this listener's own origin over http or https (the Host header's host and port), and
    /// loopback pages on any port; nothing else.
    @Test func theDefaultAllowsTheListenersOwnOriginAndLoopbackPages() {
        #expect(verdict("http://fanout.example:7412") == .allowed("http://fanout.example:7412"))
        #expect(allows("https://fanout.example:7412"), "https_listen pages are the same host and port")
        #expect(allows("HTTP://Fanout.Example:7412"), "scheme and host compare case-insensitively")
        #expect(!allows("http://fanout.example:7413"), "another port is another origin")
        #expect(!allows("http://fanout.example"), "port 80 is not the listener's 7412")
        #expect(!allows("http://evil.example:7412"))
        #expect(!allows("http://fanout.example.evil.example:7412"))
        #expect(allows("https://fanout.example", host: "fanout.example"), "a Host without port names the default")
        #expect(allows("https://fanout.example:443", host: "fanout.example"))
        #expect(allows("http://fanout.example", host: "fanout.example:80"))
        #expect(!allows("https://fanout.example", host: "fanout.example:80"))
        #expect(allows("http://[2001:db8::1]:7412", host: "[2001:DB8::1]:7412"))
        for loopback in ["http://localhost:3000", "https://127.0.0.1:8443", "http://[::1]:9000", "http://localhost"] {
            #expect(allows(loopback), "\(loopback) is a page on this machine")
        }
        #expect(!allows("http://localhost.evil.example"))
        #expect(!allows("http://127.0.0.2:3000"), "only the three loopback names")
        #expect(!allows("ftp://localhost"), "loopback pages are http or https")
        #expect(!allows("http://evil.example", host: nil), "without Host only loopback pages pass")
        #expect(!allows("http://evil.example", host: "evil.example\r\nX: y"), "a malformed Host names no origin")
    }

    @Test func listedOriginsReplaceTheDefault() {
        let listed = ["https://app.example.com", "http://LOCALHOST:8080"]
        #expect(verdict("https://app.example.com", listed) == .allowed("https://app.example.com"))
        #expect(allows("https://APP.example.com:443", listed), "the default port is the same origin")
        #expect(allows("http://localhost:8080", listed), "entries compare case-insensitively")
        #expect(!allows("http://app.example.com", listed), "the scheme is part of the origin")
        #expect(!allows("https://app.example.com:8443", listed))
        #expect(!allows("https://evil.app.example.com", listed))
        #expect(!allows("http://localhost:3000", listed), "loopback pages are the default's, not a list's")
        #expect(!allows("http://fanout.example:7412", listed), "nor is the listener's own origin")
        #expect(allows("https://anything.example", ["*"]))
        #expect(allows("chrome-extension://abcdef", ["*"]))
    }

    @Test func subdomainEntriesAllowSubdomainsOnly() {
        let listed = ["https://*.example.com"]
        #expect(allows("https://app.example.com", listed))
        #expect(allows("https://a.b.example.com", listed))
        #expect(!allows("https://example.com", listed), "the name itself is not its subdomain")
        #expect(!allows("https://evilexample.com", listed))
        #expect(!allows("http://app.example.com", listed))
        #expect(!allows("https://app.example.com:8443", listed))
        #expect(allows("https://app.example.com:8443", ["https://*.example.com:8443"]))
        #expect(OriginPolicy.problem(inEntry: "https://*.example.com") == nil)
        #expect(OriginPolicy.problem(inEntry: "https://a*.example.com") != nil)
        #expect(OriginPolicy.problem(inEntry: "https://*.[::1]") != nil)
    }

    /// `null` (sandboxed frames, file: pages) is shared by every such page: only an entry of its own allows it.
    @Test func nullIsRefusedUnlessListed() {
        #expect(!allows("null"))
        #expect(!allows("null", ["*"]))
        #expect(!allows("null", ["https://app.example"]))
        #expect(verdict("null", ["null"]) == .allowed("null"))
        #expect(!allows("NULL", ["null"]), "browsers send null in lower case; anything else is malformed")
    }

    /// Hostile headers are refused (never allowed by `*` either), in bounded time, and never quoted back when
    /// malformed.
    @Test(arguments: [
        String(repeating: "a", count: 100_000), "https://" + String(repeating: "a.", count: 200) + "example",
        "https://app.example\r\nSet-Cookie: x=1", "https://app.example\n", "https://app.example\0",
        "https://app.exämple", "https://ápp.example", "https://app.example/", "https://app.example/path",
        "https://app.example?x=1", "https://app.example#x", "https://user@app.example", "https://u:p@app.example",
        "https://app.example:", "https://app.example:0", "https://app.example:65536", "https://app.example:123456",
        "https://app.example:80a", "https://app.example:-1", "https://app.example:+80", "https://app.example:1:2",
        "https://[::1", "https://[::1]x", "https://[::g]", "https://[]", "https://[127.0.0.1]", "https://::1",
        "https://", "://app.example", "app.example", "https//app.example", "1https://app.example",
        "https://app..example", "https://.app.example", "https://app.example.", "https://app example",
        "https:// app.example", "", " ", "*", "https://*.example.com", "https://app.example ",
    ])
    func malformedOriginsAreRefused(_ origin: String) {
        for allowed in [[], ["*"], ["https://app.example"]] {
            #expect(verdict(origin, allowed) == .refused(Self.malformed), "\(origin.prefix(60).debugDescription)")
        }
    }

    @Test func wellFormedOriginsParse() {
        #expect(OriginPolicy.parse("https://App.Example.COM") == .init(scheme: "https", host: "app.example.com",
                                                                        port: 443))
        #expect(OriginPolicy.parse("http://127.0.0.1:8080") == .init(scheme: "http", host: "127.0.0.1", port: 8080))
        #expect(OriginPolicy.parse("http://[::FFFF:127.0.0.1]:1") == .init(scheme: "http", host: "[::ffff:127.0.0.1]",
                                                                            port: 1))
        #expect(OriginPolicy.parse("https://xn--mnchen-3ya.de") != nil, "internationalised names come as punycode")
        #expect(OriginPolicy.parse("chrome-extension://abc") == .init(scheme: "chrome-extension", host: "abc",
                                                                       port: nil))
        #expect(OriginPolicy.parse("https://app.example:65535")?.port == 65535)
        #expect(OriginPolicy.parse("https://app.example:00443")?.port == 443)
    }

    @Test func refusalsNameTheSetting() {
        #expect(verdict("https://evil.example") == .refused("origin https://evil.example is not allowed: "
            + "http_allowed_origins is empty, which allows only this listener's own pages and loopback pages"))
        #expect(verdict("https://evil.example", ["https://app.example"])
            == .refused("origin https://evil.example is not in http_allowed_origins"))
        guard case .refused(let text) = verdict("null") else { Issue.record("null allowed"); return }
        #expect(text.contains("http_allowed_origins"))
    }

    /// A configured entry that is no origin is a configuration error, not a silent never-match; a list whose
    /// entries all fail allows nothing rather than falling back to the default.
    @Test func entriesThatAreNoOriginAreProblems() {
        for entry in ["*", "null", "https://app.example.com", "http://localhost:8080", "https://*.example.com"] {
            #expect(OriginPolicy.problem(inEntry: entry) == nil, "\(entry)")
        }
        for entry in ["app.example.com", "https://app.example.com/", "https://app.example.com/path", "", "https://*",
                      "https://user@app.example.com", String(repeating: "x", count: 400)] {
            #expect(OriginPolicy.problem(inEntry: entry) != nil, "\(entry.prefix(40))")
        }
        #expect(!allows("http://localhost:3000", ["app.example.com"]))
    }
}
