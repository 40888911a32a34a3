import CLibevent

extension BufferedSocket {
    /// Puts `bytes` back in front of the unread input, for a reader that took more than it consumed (the load
    /// generator's WebSocket handshake reads whole chunks and hands the rest on).
    @_spi(Bench) public func prependInput(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { raw in
            _ = evbuffer_prepend(bufferevent_get_input(bev), raw.baseAddress, raw.count)
        }
    }
}
