/// An HTTP request executed as a protocol line (`POST /publish/...`): its reply, which may come later (several
/// nodes), is handed to whoever waits for it, once. It reads nothing: the request's body is its line.
final class HTTPRequestTransport: TransportAdapter {
    private var reply: ((String) -> Void)?

    init(reply: @escaping (String) -> Void) {
        self.reply = reply
    }

    var isAnswered: Bool { reply == nil }

    override func consume(_ chunk: UnsafeRawBufferPointer, for connection: ClientConnection, turn: inout ReadTurn) -> Int {
        0
    }

    override func write(_ lines: UnsafeRawBufferPointer, to connection: ClientConnection) {
        guard let reply else { return }
        self.reply = nil
        let end = lines.firstIndex(of: 10) ?? lines.endIndex
        reply(String(decoding: lines[..<end], as: UTF8.self))
    }
}
