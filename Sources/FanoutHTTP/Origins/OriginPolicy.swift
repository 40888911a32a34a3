/// Which web pages may use the listener's browser routes (`/ws`, `/events`, `/publish/...`), judged by the
/// `Origin` header a browser sends with them (RFC 6454): the guard against cross-site WebSocket hijacking, and
/// against a foreign page publishing or reading streams with the user's network position.
///
/// `http_allowed_origins` as read here: empty allows the listener's own origin (the Host header's host and port,
/// http or https) and loopback pages (`localhost`, `127.0.0.1`, `[::1]`, any port); `*` allows any page with a
/// real origin; otherwise exact origins (`https://app.example.com`, compared case-insensitively with default
/// ports made explicit), `https://*.example.com` for the subdomains of a name (not the name itself), and `null`
/// for sandboxed frames and `file:` pages, which nothing else allows since every such page shares that origin.
/// A request without Origin comes from a program, not a page, and is allowed.
///
/// Pure, no I/O. Built per request from the configured list: O(entries) to build and to decide, each entry and
/// the Origin header refused beyond `maxLength` bytes before any other work.
public struct OriginPolicy: Sendable {
    /// An origin as compared: scheme and host lower-cased (an IPv6 host keeps its brackets), the port explicit
    /// where the scheme has a default (http 80, https 443), nil where it has none and none was given.
    public struct Origin: Sendable, Hashable {
        public let scheme: String
        public let host: String
        public let port: Int?

        public init(scheme: String, host: String, port: Int?) {
            self.scheme = scheme
            self.host = host
            self.port = port
        }
    }

    /// What to do with one request.
    public enum Verdict: Sendable, Equatable {
        /// No Origin header: a program, not a page.
        case noOrigin
        /// A page this policy allows; the Origin as the browser sent it, for `Access-Control-Allow-Origin`.
        case allowed(String)
        /// Refused: the text of the 403, naming http_allowed_origins (the Origin is quoted only when well formed).
        case refused(String)
    }

    /// The longest Origin header or entry read: a scheme, a 253-byte DNS name or an IPv6 literal, and a port fit
    /// well within it.
    public static let maxLength = 300

    private enum Entry {
        case exact(Origin)
        /// Hosts ending in `.<suffix>`, with this scheme and port.
        case subdomains(Origin)
        case null
    }

    private let allowsAny: Bool
    /// Whether a list was given at all: a list of entries that all fail to parse allows nothing, not the default.
    private let isListed: Bool
    private let entries: [Entry]

    /// The policy for `allowed` (http_allowed_origins); an entry that `problem(inEntry:)` rejects matches nothing.
    public init(allowed: [String]) {
        allowsAny = allowed.contains("*")
        isListed = !allowed.isEmpty
        entries = allowed.compactMap(Self.entry)
    }

    /// Whether a page whose `Origin` header is `origin` (nil when absent) may use a route of a listener that the
    /// request reached as `host` (its Host header).
    public func verdict(origin: String?, host: String?) -> Verdict {
        guard let origin else { return .noOrigin }
        if origin == "null" {
            let listed = entries.contains { if case .null = $0 { true } else { false } }
            return listed ? .allowed(origin)
                : .refused("origin null (a sandboxed or file: page) is not allowed: "
                    + "list \"null\" in http_allowed_origins")
        }
        guard let parsed = Self.parse(origin) else {
            return .refused("malformed Origin header: refused (http_allowed_origins takes scheme://host[:port])")
        }
        if allowsAny { return .allowed(origin) }
        if !isListed {
            if Self.isLoopback(parsed) || Self.isSameOrigin(parsed, host: host) { return .allowed(origin) }
            return .refused("origin \(origin) is not allowed: http_allowed_origins is empty, which allows only "
                + "this listener's own pages and loopback pages")
        }
        return entries.contains { Self.matches(parsed, $0) } ? .allowed(origin)
            : .refused("origin \(origin) is not in http_allowed_origins")
    }

    /// Why `entry` cannot be an entry of http_allowed_origins, or nil when it can.
    public static func problem(inEntry entry: String) -> String? {
        if entry == "*" || Self.entry(entry) != nil { return nil }
        return "'\(entry.prefix(80))' is not an origin: write scheme://host[:port] with no path "
            + "(https://app.example.com), https://*.example.com, \"null\" or \"*\""
    }

    /// `text` as an origin (`scheme://host[:port]`), or nil for anything else: userinfo, a path, a query, a space
    /// or control byte, non-ASCII (browsers send internationalised names as punycode), an empty label, a port
    /// beyond 65535, or more than `maxLength` bytes.
    public static func parse(_ text: String) -> Origin? {
        guard text.utf8.count <= maxLength, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard let first = scheme.first, first.isLetter,
              scheme.allSatisfy({ isAlphanumeric($0) || "+-.".contains($0) }) else { return nil }
        guard let (host, port) = authority(text[separator.upperBound...]) else { return nil }
        return Origin(scheme: scheme, host: host, port: port ?? defaultPort(scheme))
    }

    /// `host[:port]` (as in a Host header, or after an origin's scheme): the host lower-cased and the port if
    /// given, or nil when malformed.
    static func authority(_ text: Substring) -> (host: String, port: Int?)? {
        let host: Substring
        var rest: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let inside = text[text.index(after: text.startIndex)..<close]
            guard inside.contains(":"), inside.allSatisfy({ $0.isASCII && ($0.isHexDigit || ":.".contains($0)) }) else {
                return nil
            }
            host = text[...close]
            rest = text[text.index(after: close)...]
        } else {
            host = text.prefix { $0 != ":" }
            rest = text[host.endIndex...]
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            guard labels.allSatisfy({ !$0.isEmpty && $0.allSatisfy { isAlphanumeric($0) || "-_".contains($0) } }) else {
                return nil
            }
        }
        guard !rest.isEmpty else { return (host.lowercased(), nil) }
        guard rest.first == ":" else { return nil }
        rest = rest.dropFirst()
        guard (1...5).contains(rest.count), rest.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(rest),
              (1...65535).contains(port) else { return nil }
        return (host.lowercased(), port)
    }

    private static func isAlphanumeric(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber)
    }

    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    private static func entry(_ text: String) -> Entry? {
        if text.lowercased() == "null" { return .null }
        if let separator = text.firstRange(of: "://*.") {
            let named = String(text[..<separator.lowerBound]) + "://" + text[separator.upperBound...]
            guard let suffix = parse(named), !suffix.host.hasPrefix("[") else { return nil }
            return .subdomains(suffix)
        }
        return parse(text).map(Entry.exact)
    }

    private static func matches(_ origin: Origin, _ entry: Entry) -> Bool {
        switch entry {
        case .exact(let allowed): origin == allowed
        case .subdomains(let suffix):
            origin.scheme == suffix.scheme && origin.port == suffix.port && origin.host.hasSuffix("." + suffix.host)
        case .null: false
        }
    }

    private static func isWeb(_ origin: Origin) -> Bool { origin.scheme == "http" || origin.scheme == "https" }

    /// A page served from this machine's loopback address, such as a developer's own app.
    private static func isLoopback(_ origin: Origin) -> Bool {
        isWeb(origin) && ["localhost", "127.0.0.1", "[::1]"].contains(origin.host)
    }

    /// A page of this listener: the host and port the request names, over http or https (a Host without a port
    /// names the scheme's default one).
    private static func isSameOrigin(_ origin: Origin, host: String?) -> Bool {
        guard isWeb(origin), let host, host.utf8.count <= maxLength, let named = authority(Substring(host)) else {
            return false
        }
        return origin.host == named.host && origin.port == (named.port ?? defaultPort(origin.scheme))
    }
}
