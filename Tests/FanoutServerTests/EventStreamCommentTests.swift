@testable import FanoutServer
import Testing

@Suite("Event stream comments")
struct EventStreamCommentTests {
    /// A comment is one line whatever its text holds: CR, LF and NUL are written escaped, so that no byte of
    /// a client's can end it and start a `data:` line.
    @Test(arguments: [
        ("ASK news.uk q.1 x\rdata: {}\r\rZ", #": ASK news.uk q.1 x\rdata: {}\r\rZ"# + "\n"),
        ("a\nb\0c", #": a\nb\0c"# + "\n"),
        ("+OK 1 epoch=e seq=0 replayed=0 missed=0", ": +OK 1 epoch=e seq=0 replayed=0 missed=0\n"),
    ])
    func aCommentIsOneLine(text: String, written: String) {
        var buffer: [UInt8] = []
        EventStreamTransport.appendComment(text, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == written)
        #expect(buffer.filter { $0 == 0x0D || $0 == 0x00 }.isEmpty && buffer.filter { $0 == 0x0A }.count == 1)
    }
}
