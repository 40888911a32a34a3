import FanoutMQTT

/// What the decoder made of `input` fed in pieces of `chunk` bytes: its packets, and its failure if it
/// refused the stream (then nothing after it). `maxBuffered` is the most it held at once.
struct DecodeOutcome: Equatable {
    var packets: [MQTTPacket] = []
    var failure: MQTTDecodeError?
    var maxBuffered = 0
    /// What the last call asked for, when it ran out of input.
    var needed: Int?
}

func decodeAll(_ input: [UInt8], chunk: Int = .max, maxPacketSize: Int = 1 << 20) -> DecodeOutcome {
    decodeAll(input, splits: stride(from: 0, to: input.count, by: max(1, min(chunk, input.count))).map { $0 },
              maxPacketSize: maxPacketSize)
}

/// Feeds the pieces that start at each offset of `splits` (sorted, beginning with 0).
func decodeAll(_ input: [UInt8], splits: [Int], maxPacketSize: Int = 1 << 20) -> DecodeOutcome {
    var decoder = MQTTDecoder(maxPacketSize: maxPacketSize)
    var outcome = DecodeOutcome()
    let bounds = splits + [input.count]
    for (start, end) in zip(bounds, bounds.dropFirst()) where start < end {
        var offset = start
        while true {
            let (step, consumed) = input[offset..<end].withUnsafeBytes { decoder.decode($0) }
            offset += consumed
            outcome.maxBuffered = max(outcome.maxBuffered, decoder.bufferedCount)
            switch step {
            case .packet(let packet):
                outcome.packets.append(packet)
                outcome.needed = nil
                continue
            case .needMore(let count):
                precondition(offset == end, "needMore before the piece was consumed")
                outcome.needed = count
            case .failure(let error):
                outcome.failure = error
                return outcome
            }
            break
        }
    }
    return outcome
}

/// One packet's bytes as the encoder writes them.
func encoded(_ packet: MQTTPacket) -> [UInt8] {
    var out: [UInt8] = []
    MQTTEncoder.encode(packet, into: &out)
    return out
}

/// A length-prefixed field, written by hand as section 1.5.3 draws it.
func field(_ text: String) -> [UInt8] { field(Array(text.utf8)) }

func field(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes }
