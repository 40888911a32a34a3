/// Reads one HTTP/1.1 request head (request line and headers, RFC 9112 §2-5) from a byte stream.
///
/// Pure: no I/O, fed chunk by chunk like `LineFramer`. Memory is bounded by `maxHeadBytes`; a head that
/// does not end within it is refused with 431, a malformed one with 400. Bodies are not read here: the
/// head says how long the body is (`Content-Length`; chunked bodies are refused with 411).
public struct HTTPRequestParser {
    public enum Outcome: Equatable {
        /// More bytes are needed.
        case incomplete
        /// The head is complete; `consumed` bytes of the last chunk belong to it.
        case complete(HTTPRequestHead, consumed: Int)
        /// The request cannot be served: answer `status` with `reason`, then close.
        case invalid(status: Int, reason: String)
    }

    public let maxHeadBytes: Int
    public let maxHeaders: Int
    private var buffer: [UInt8] = []

    public init(maxHeadBytes: Int = 8192, maxHeaders: Int = 64) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaders = maxHeaders
    }

    /// Bytes held from an unfinished head.
    public var bufferedCount: Int { buffer.count }

    /// The bytes its buffer can hold before it grows: how a test counts the moves growth costs.
    public var bufferCapacity: Int { buffer.capacity }

    /// Feeds one chunk. Cost: linear in the bytes held (at most `maxHeadBytes`).
    public mutating func feed(_ chunk: UnsafeRawBufferPointer) -> Outcome {
        let before = buffer.count
        // The end of the head may straddle chunks: search from three bytes before the new ones.
        buffer.append(contentsOf: chunk.prefix(maxHeadBytes + 1 - min(before, maxHeadBytes + 1)))
        guard let end = Self.endOfHead(in: buffer, from: max(0, before - 3)) else {
            if buffer.count > maxHeadBytes { return .invalid(status: 431, reason: "request head exceeds \(maxHeadBytes) bytes") }
            return .incomplete
        }
        let head = Array(buffer[..<end.start])
        buffer.removeAll()
        switch Self.parse(head, maxHeaders: maxHeaders) {
        case .success(let parsed): return .complete(parsed, consumed: end.after - before)
        case .failure(let problem): return .invalid(status: problem.status, reason: problem.reason)
        }
    }

    /// Where the blank line ends the head: CRLF CRLF, or bare LF LF (tolerated, RFC 9112 §2.2).
    static func endOfHead(in bytes: [UInt8], from start: Int) -> (start: Int, after: Int)? {
        var index = start
        while index < bytes.count {
            if bytes[index] == 0x0A {
                if index + 1 < bytes.count && bytes[index + 1] == 0x0A { return (index, index + 2) }
                if index + 2 < bytes.count && bytes[index + 1] == 0x0D && bytes[index + 2] == 0x0A { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    struct Problem: Error {
        let status: Int
        let reason: String
    }

    static func parse(_ head: [UInt8], maxHeaders: Int) -> Result<HTTPRequestHead, Problem> {
        guard let text = String(validating: head, as: UTF8.self) else {
            return .failure(Problem(status: 400, reason: "request head is not UTF-8"))
        }
        // Split on the LF byte: as Characters, CR LF is one grapheme and never equals "\n".
        var lines = text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            Substring(line.last == 0x0D ? line.dropLast() : line)
        }
        guard !lines.isEmpty else { return .failure(Problem(status: 400, reason: "empty request")) }
        // A bare CR, a NUL or another control byte inside a line (RFC 9110, 5.5): refused, since a value such as
        // Origin may be written back into a response header, where a CR could start a line of its own.
        let control = lines.contains { line in line.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F } }
        if control { return .failure(Problem(status: 400, reason: "a control character in the request head")) }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[0].allSatisfy({ $0.isUppercase }) else {
            return .failure(Problem(status: 400, reason: "malformed request line"))
        }
        guard requestLine[2] == "HTTP/1.1" || requestLine[2] == "HTTP/1.0" else {
            return .failure(Problem(status: 505, reason: "only HTTP/1.1 is served"))
        }
        let target = requestLine[1]
        guard target.hasPrefix("/") else { return .failure(Problem(status: 400, reason: "request target must be a path")) }
        let pathPart = target.prefix { $0 != "?" }
        let query = target.dropFirst(pathPart.count + (pathPart.count < target.count ? 1 : 0))
        guard let path = PercentDecoding.decode(pathPart, plusIsSpace: false) else {
            return .failure(Problem(status: 400, reason: "malformed percent-escape in the path"))
        }
        guard lines.count <= maxHeaders else { return .failure(Problem(status: 431, reason: "more than \(maxHeaders) headers")) }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                return .failure(Problem(status: 400, reason: "malformed header line"))
            }
            let name = line[..<colon]
            guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_!#$%&'*+.^`|~".contains($0)) }) else {
                return .failure(Problem(status: 400, reason: "malformed header name"))
            }
            headers.append((name.lowercased(), String(line[line.index(after: colon)...].trimmingSpaces)))
        }
        var contentLength = 0
        let lengths = headers.filter { $0.name == "content-length" }
        if let first = lengths.first {
            guard lengths.allSatisfy({ $0.value == first.value }), first.value.count <= 12, let value = Int(first.value), value >= 0 else {
                return .failure(Problem(status: 400, reason: "malformed Content-Length"))
            }
            contentLength = value
        }
        if headers.contains(where: { $0.name == "transfer-encoding" }) {
            return .failure(Problem(status: 411, reason: "send the body with a Content-Length"))
        }
        return .success(HTTPRequestHead(method: String(requestLine[0]), path: path, query: String(query),
                                        headers: headers, contentLength: contentLength))
    }
}
