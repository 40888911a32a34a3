import FanoutHTTP
import FanoutTestSupport
import Testing

private func parse(_ text: String, chunkSize: Int = .max) -> HTTPRequestParser.Outcome {
    var parser = HTTPRequestParser(maxHeadBytes: 512)
    let bytes = Array(text.utf8)
    var start = 0
    while start < bytes.count {
        let end = min(start + chunkSize, bytes.count)
        let outcome = bytes[start..<end].withUnsafeBytes { parser.feed($0) }
        if case .incomplete = outcome { start = end; continue }
        if case .complete(let head, let consumed) = outcome { return .complete(head, consumed: start + consumed) }
        return outcome
    }
    return .incomplete
}

@Suite("HTTP request head")
struct HTTPRequestTests {
    static let upgrade = "GET /ws?x=1 HTTP/1.1\r\nHost: localhost:7412\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

    @Test func parsesAtEveryChunking() throws {
        for size in [1, 2, 5, 1000] {
            guard case .complete(let head, let consumed) = parse(Self.upgrade + "frames", chunkSize: size) else {
                Issue.record("chunk \(size): not complete")
                continue
            }
            #expect(consumed == Self.upgrade.utf8.count, "the bytes after the head are left for the next reader")
            #expect(head.method == "GET" && head.path == "/ws" && head.query == "x=1")
            #expect(head.header("upgrade") == "websocket")
            #expect(head.headerLists("connection", "upgrade"))
        }
    }

    @Test func refusals() {
        #expect(parse("GET / HTTP/1.1\r\n" + String(repeating: "X-A: b\r\n", count: 100)) == .invalid(status: 431, reason: "request head exceeds 512 bytes"))
        guard case .invalid(400, _) = parse("GARBAGE\r\n\r\n") else { Issue.record("garbage"); return }
        guard case .invalid(505, _) = parse("GET / HTTP/2.0\r\n\r\n") else { Issue.record("version"); return }
        guard case .invalid(400, _) = parse("GET / HTTP/1.1\r\nno colon\r\n\r\n") else { Issue.record("header"); return }
        guard case .invalid(400, _) = parse("POST /p HTTP/1.1\r\nContent-Length: -1\r\n\r\n") else { Issue.record("length"); return }
        guard case .invalid(411, _) = parse("POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") else { Issue.record("chunked"); return }
        guard case .invalid(400, _) = parse("GET http://x/ HTTP/1.1\r\n\r\n") else { Issue.record("absolute"); return }
    }

    /// A bare CR (or NUL, or another control byte) in a header value is refused: Origin is written back into a
    /// response header, where a CR would let the client add a header line of its own.
    @Test func controlBytesInTheHeadAreRefused() {
        for value in ["http://x\rSet-Cookie: pwned=1", "http://x\u{0}", "http://x\u{1b}[0m"] {
            let head = "GET /events?subject=a HTTP/1.1\r\nHost: x\r\nOrigin: \(value)\r\n\r\n"
            guard case .invalid(400, _) = parse(head) else { Issue.record("accepted: \(value.debugDescription)"); continue }
        }
        guard case .complete = parse("GET / HTTP/1.1\r\nHost: x\r\nX-Tab: a\tb\r\n\r\n") else {
            Issue.record("a tab in a value is allowed")
            return
        }
    }

    @Test func queryValuesAreDecoded() {
        guard case .complete(let head, _) = parse("GET /events?subject=a.%3E&subject=b+c&token=t HTTP/1.1\r\n\r\n") else {
            Issue.record("not complete"); return
        }
        #expect(head.queryValues("subject") == ["a.>", "b c"])
        #expect(head.queryValues("token") == ["t"])
    }

    @Test func randomHeadsNeverCrash() {
        var generator = SeededGenerator(seed: 9)
        let alphabet = Array("GET /ws HTTP/1.1\r\n:%?&= abcXYZ\u{0}\u{7F}".utf8)
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            var parser = HTTPRequestParser(maxHeadBytes: 128)
            _ = bytes.withUnsafeBytes { parser.feed($0) }
            #expect(parser.bufferedCount <= 129)
        }
    }
}

@Suite("WebSocket handshake")
struct WebSocketHandshakeTests {
    static func head(_ extra: [(String, String)] = [], dropping: String? = nil) -> HTTPRequestHead {
        var headers: [(name: String, value: String)] = [("host", "localhost:7412"), ("upgrade", "websocket"),
            ("connection", "Upgrade"), ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="), ("sec-websocket-version", "13")]
        headers.removeAll { $0.name == dropping }
        for (name, value) in extra {
            headers.removeAll { $0.name == name }
            headers.append((name, value))
        }
        return HTTPRequestHead(method: "GET", path: "/ws", query: "", headers: headers, contentLength: 0)
    }

    @Test func acceptValueOfTheRFCExample() {
        // RFC 6455 §1.3: the key "dGhlIHNhbXBsZSBub25jZQ==" gives "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
        let sha1OfRFCInput: [UInt8] = [0xb3, 0x7a, 0x4f, 0x2c, 0xc0, 0x62, 0x4f, 0x16, 0x90, 0xf6, 0x46, 0x06, 0xcf, 0x38,
                                       0x59, 0x45, 0xb2, 0xbe, 0xc4, 0xea]
        let value = WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") { input in
            #expect(String(decoding: input, as: UTF8.self) == "dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
            return sha1OfRFCInput
        }
        #expect(value == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func refusals() throws {
        #expect(try WebSocketHandshake.validate(Self.head(), allowedOrigins: []).get() == "dGhlIHNhbXBsZSBub25jZQ==")
        func status(_ head: HTTPRequestHead, _ origins: [String] = []) -> Int? {
            if case .failure(let refusal) = WebSocketHandshake.validate(head, allowedOrigins: origins) { return refusal.status }
            return nil
        }
        #expect(status(Self.head(dropping: "sec-websocket-key")) == 400)
        #expect(status(Self.head([("sec-websocket-key", "c2hvcnQ=")])) == 400)
        #expect(status(Self.head([("sec-websocket-version", "8")])) == 426)
        #expect(status(Self.head(dropping: "upgrade")) == 426)
        #expect(status(Self.head([("origin", "http://evil.example")])) == 403)
        #expect(status(Self.head([("origin", "http://localhost:7412")])) == nil, "same host")
        #expect(status(Self.head([("origin", "https://app.example")]), ["https://app.example"]) == nil)
        #expect(status(Self.head([("origin", "http://localhost:7412")]), ["https://app.example"]) == 403)
        #expect(status(Self.head([("origin", "http://evil.example")]), ["*"]) == nil)
    }
}
