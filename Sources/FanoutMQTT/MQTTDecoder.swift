/// The incremental MQTT 3.1.1 packet decoder: bytes arrive in any split; each call consumes what it can and
/// either hands out one packet, says how many more bytes it needs at least, or refuses the stream.
///
/// Worst case held: `bufferedCount` never exceeds `maxPacketSize` - 2 (a packet's remaining length; the
/// fixed header is kept in four integers). A packet whose fixed header announces more than `maxPacketSize`
/// bytes in all is refused as soon as its remaining length is read, before any of its bytes is buffered. A
/// whole packet already in the caller's buffer is parsed from there, without a copy into the decoder's own.
public struct MQTTDecoder: Sendable {
    /// What one call of `decode` came to.
    public enum Step: Equatable, Sendable {
        /// One whole packet.
        case packet(MQTTPacket)
        /// Everything given was consumed; at least this many more bytes are needed for the next step.
        case needMore(Int)
        /// The stream is refused; the decoder keeps answering this until `reset()`.
        case failure(MQTTDecodeError)
    }

    /// The largest packet accepted, fixed header included (the server passes `max_payload` plus headers).
    public let maxPacketSize: Int

    private var first: UInt8?
    private var lengthValue = 0
    private var lengthBytes = 0
    /// The remaining length, once its last byte has been read.
    private var bodyLength: Int?
    /// A packet's remaining bytes that arrived in several pieces; empty otherwise.
    private var body: [UInt8] = []
    private var failed: MQTTDecodeError?

    /// `maxPacketSize` is at least 2 (PINGREQ's size) and at most what four length bytes can announce.
    public init(maxPacketSize: Int) {
        self.maxPacketSize = min(max(maxPacketSize, 2), 1 + 4 + MQTTLimits.maxRemainingLength)
    }

    /// The bytes held for a packet not yet whole.
    public var bufferedCount: Int { body.count }

    /// Starts over, forgetting a partial packet and a failure.
    public mutating func reset() {
        first = nil
        lengthValue = 0
        lengthBytes = 0
        bodyLength = nil
        body = []
        failed = nil
    }

    /// Decodes from the start of `bytes`; returns what came of it and how many bytes it consumed. Call it again
    /// with the bytes after `consumed` while it answers `.packet`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) -> (step: Step, consumed: Int) {
        if let failed { return (.failure(failed), 0) }
        var consumed = 0
        while bodyLength == nil {
            guard consumed < bytes.count else { return (.needMore(first == nil ? 2 : 1), consumed) }
            let byte = bytes[consumed]
            consumed += 1
            guard first != nil else {
                guard MQTTPacketType(rawValue: byte >> 4) != nil else {
                    return (fail(.malformed("MQTT-2.2.1", "packet type \(byte >> 4) is reserved")), consumed)
                }
                first = byte
                continue
            }
            lengthValue |= Int(byte & 0x7F) << (7 * lengthBytes)
            lengthBytes += 1
            if byte & 0x80 != 0 {
                guard lengthBytes < 4 else {
                    return (fail(.malformed("MQTT-2.2.3", "remaining length continues past four bytes")), consumed)
                }
                continue
            }
            let total = 1 + lengthBytes + lengthValue
            guard total <= maxPacketSize else {
                let error = MQTTDecodeError(.tooLarge, rule: "MQTT-2.2.3",
                                            "a packet of \(total) bytes; the limit is \(maxPacketSize)")
                return (fail(error), consumed)
            }
            bodyLength = lengthValue
        }
        let length = bodyLength ?? 0
        let available = bytes.count - consumed
        if body.isEmpty && available >= length {
            let packetBody = UnsafeRawBufferPointer(rebasing: bytes[consumed..<consumed + length])
            return (finish(packetBody), consumed + length)
        }
        let taken = min(available, length - body.count)
        body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[consumed..<consumed + taken]))
        consumed += taken
        guard body.count == length else { return (.needMore(length - body.count), consumed) }
        let whole = body
        let step = whole.withUnsafeBytes { finish($0) }
        return (step, consumed)
    }

    private mutating func finish(_ packetBody: UnsafeRawBufferPointer) -> Step {
        let firstByte = first ?? 0
        first = nil
        lengthValue = 0
        lengthBytes = 0
        bodyLength = nil
        body = []
        do throws(MQTTDecodeError) {
            return .packet(try MQTTPacketParser.parse(first: firstByte, body: packetBody))
        } catch {
            return fail(error)
        }
    }

    private mutating func fail(_ error: MQTTDecodeError) -> Step {
        failed = error
        body = []
        return .failure(error)
    }
}
