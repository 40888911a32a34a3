import Foundation
import Testing

/// Every text that reaches an event stream is escaped: a CR, which ends a line in an event stream as LF does,
/// never lets a client's bytes start a line of their own; and a stream, which can never answer, is never put
/// a question.
@Suite("Event streams carry only escaped text", .threadPerTest, .timeLimit(.minutes(2)))
struct EventStreamSafetyTests {
    /// The lines of a raw event stream as an EventSource splits them: at CRLF, LF and a lone CR.
    private func eventSourceLines(_ lines: [String]) -> [String] {
        lines.flatMap { $0.split(separator: "\r", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Reads a raw stream's lines up to and including the first that contains `text`.
    private func readStream(_ stream: LineClient, until text: String, into lines: inout [String]) throws {
        while true {
            let line = try stream.readLine()
            lines.append(line)
            if line.contains(text) { return }
        }
    }

    /// The report's ASK: its payload's CRs would end the stream's comment line and forge a `message` event.
    /// The stream is not asked (the reply says 0 and DONE follows at once, with nothing to wait for); a PUB with
    /// the same bytes reaches the stream as one escaped JSON string that decodes to exactly those bytes.
    @Test func aPayloadWithCRNeverForgesAnEvent() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let port = try daemon.httpPort()
        let stream = try LineClient(port: port, timeout: 10)
        try stream.send("GET /events?subject=news.uk HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        var received: [String] = []
        try readStream(stream, until: ": +OK 1", into: &received)

        let forged = #"data: {"subject":"news.uk","seq":7,"payload":"FORGED"}"#
        let payload = "x\r\(forged)\r\rZ"
        let asker = try daemon.client()
        let reply = try asker.command("ASK news.uk 100 0 \(payload)")
        let words = reply.split(separator: " ")
        #expect(words.count == 3 && words[0] == "+OK" && words[2] == "0", "an event stream is never asked: \(reply)")
        let done = try asker.readLine()
        #expect(done == "DONE \(words[1]) asked=0 answered=0 gone=0", "\(done)")

        #expect(try asker.command("PUB news.uk \(payload)") == "+OK 1")
        #expect(try asker.command("PUB news.uk end") == "+OK 1")
        try readStream(stream, until: #""payload":"end""#, into: &received)
        let lines = eventSourceLines(received)
        #expect(!lines.contains { $0.hasPrefix("data:") && $0.contains("FORGED") && !$0.contains(#"\r"#) },
                "a data line of the client's own: \(lines)")
        let data = lines.filter { $0.hasPrefix("data: ") }
        #expect(data.count == 2, "one event per PUB, nothing else: \(data)")
        let first = try #require(data.first)
        let object = try JSONSerialization.jsonObject(with: Data(first.dropFirst(6).utf8)) as? [String: Any]
        #expect(object?["payload"] as? String == payload, "the exact bytes, escaped: \(first)")
        #expect(object?["seq"] as? Int == 1)
        stream.close()
    }
}
