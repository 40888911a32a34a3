import FanoutHTTP

/// What a WebSocket client carries beyond a TCP one: its frame decoder and a scratch buffer for framing
/// replies. Made at the upgrade and kept in the connection's extras.
final class WebSocketSession {
    var decoder: WebSocketDecoder
    /// Reused for framing replies: one frame per line.
    var scratch: [UInt8] = []
    /// Whether our close frame has been queued: nothing is framed after it.
    var closeSent = false

    init(maxLine: Int) {
        // A message is one or more lines; a line of max_line bytes may come with its CRLF.
        decoder = WebSocketDecoder(maxMessage: maxLine + 2)
    }
}
