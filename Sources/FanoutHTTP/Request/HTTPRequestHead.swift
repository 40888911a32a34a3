/// One request's line and headers, as read by `HTTPRequestParser`.
public struct HTTPRequestHead: Sendable, Equatable {
    public var method: String
    /// The path, percent-decoding left to the route (subjects are plain ASCII).
    public var path: String
    /// The raw query string without its `?` (never logged: it may carry a token).
    public var query: String
    /// Header names lower-cased, in arrival order; repeated names are kept apart.
    public var headers: [(name: String, value: String)]
    /// The request body's length (Content-Length), 0 when absent.
    public var contentLength: Int

    public init(method: String, path: String, query: String, headers: [(name: String, value: String)], contentLength: Int) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.contentLength = contentLength
    }

    /// The first value of `name` (lower case).
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Whether the comma-separated header `name` lists `token`, case-insensitively (`Connection: keep-alive, Upgrade`).
    public func headerLists(_ name: String, _ token: String) -> Bool {
        headers.contains { header in
            header.name == name && header.value.split(separator: ",").contains {
                $0.trimmingSpaces.lowercased() == token.lowercased()
            }
        }
    }

    /// Every value of the query parameter `name`, percent-decoded (`subject=a&subject=b`).
    public func queryValues(_ name: String) -> [String] {
        query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { return nil }
            return PercentDecoding.decode(parts[1])
        }
    }

    public static func == (lhs: HTTPRequestHead, rhs: HTTPRequestHead) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query
            && lhs.contentLength == rhs.contentLength
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}

/// `%XX` and `+` decoding for query values and paths; nil for a malformed escape or non-UTF-8 result.
public enum PercentDecoding {
    public static func decode(_ text: Substring, plusIsSpace: Bool = true) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard iterator.count >= 2, let high = hex(iterator.popFirst()!), let low = hex(iterator.popFirst()!) else { return nil }
                bytes.append(high << 4 | low)
            } else if byte == UInt8(ascii: "+") && plusIsSpace {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
