/// Transports that are not the line protocol itself: the connection's lines are adapted on the way out
/// (WebSocket frames, Server-Sent Events, an HTTP request's captured reply) and input is read their way.
extension ClientConnection {
    func writeAdapted(_ bytes: [UInt8]) {
        switch transport {
        case .webSocket: bytes.withUnsafeBytes { writeFramed($0) }
        case .eventStream: bytes.withUnsafeBytes { writeEvents($0) }
        case .httpRequest: answerHTTP(bytes)
        case .tcp, .tls, .unix: socket?.write(bytes)
        }
    }

    func readAdapted() {
        switch transport {
        case .webSocket: readFrames()
        // An event stream's client has nothing more to say after its request: what it sends is dropped.
        case .eventStream: socket?.readInput { $0.count }
        case .httpRequest, .tcp, .tls, .unix: break
        }
    }
}
