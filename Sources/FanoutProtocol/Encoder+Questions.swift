/// The lines of questions (1.2): the push of a question, its reply, each answer and its `DONE`. Built from bytes
/// into the caller's buffer: a question's lines once cost a String interpolation each, a third of its CPU.
extension Encoder {
    /// Appends `ASK <subject> <id> <payload>\n`, a question put to a receiver: the fields before the payload in
    /// one copy (`ShortLine`), then the payload.
    public static func appendQuestion(subject: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
                                      payload: UnsafeRawBufferPointer, to buffer: inout [UInt8]) {
        buffer.reserveCapacity(buffer.count + subject.count + id.count + payload.count + 7)
        ShortLine.append(capacity: subject.count + id.count + 6, to: &buffer) { line in
            line.put("ASK ")
            line.put(subject)
            line.put(CommandParser.space)
            line.put(id)
            line.put(CommandParser.space)
        }
        buffer.append(contentsOf: payload)
        buffer.append(UInt8(ascii: "\n"))
    }

    public static func appendQuestion(subject: UnsafeRawBufferPointer, id: String, payload: UnsafeRawBufferPointer,
                                      to buffer: inout [UInt8]) {
        var id = id
        id.withUTF8 { appendQuestion(subject: subject, id: UnsafeRawBufferPointer($0), payload: payload, to: &buffer) }
    }

    /// Appends `+OK <id> <asked>\n`, the reply to an ASK.
    public static func appendQuestionReply(id: UnsafeRawBufferPointer, asked: Int, to buffer: inout [UInt8]) {
        ShortLine.append(capacity: id.count + 26, to: &buffer) { line in
            line.put("+OK ")
            line.put(id)
            line.put(CommandParser.space)
            line.putDecimal(UInt64(asked))
            line.put(UInt8(ascii: "\n"))
        }
    }

    /// Appends `ANSWER <id> <responder> <payload>\n`, an answer pushed to its asker, from a connection of this
    /// server (`responder` is its id).
    public static func appendAnswer(id: UnsafeRawBufferPointer, responder: UInt64, payload: UnsafeRawBufferPointer,
                                    to buffer: inout [UInt8]) {
        buffer.reserveCapacity(buffer.count + id.count + payload.count + 30)
        ShortLine.append(capacity: id.count + 29, to: &buffer) { line in
            line.put("ANSWER ")
            line.put(id)
            line.put(CommandParser.space)
            line.putDecimal(responder)
            line.put(CommandParser.space)
        }
        buffer.append(contentsOf: payload)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends `ANSWER <id> <responder> <payload>\n` from a responder named by another node (`<node>/<id>`).
    public static func appendAnswer(id: String, responder: String, payload: UnsafeRawBufferPointer,
                                    to buffer: inout [UInt8]) {
        buffer.append(contentsOf: answerPrefix)
        buffer.append(contentsOf: id.utf8)
        buffer.append(CommandParser.space)
        buffer.append(contentsOf: responder.utf8)
        buffer.append(CommandParser.space)
        buffer.append(contentsOf: payload)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends `DONE <id> asked=<a> answered=<b> gone=<g>\n`: a question closed.
    public static func appendDone(id: UnsafeRawBufferPointer, asked: Int, answered: Int, gone: Int,
                                  to buffer: inout [UInt8]) {
        ShortLine.append(capacity: id.count + 89, to: &buffer) { line in
            line.put("DONE ")
            line.put(id)
            line.put(" asked=")
            line.putDecimal(UInt64(asked))
            line.put(" answered=")
            line.putDecimal(UInt64(answered))
            line.put(" gone=")
            line.putDecimal(UInt64(gone))
            line.put(UInt8(ascii: "\n"))
        }
    }

    /// `+OK 1\n` and `+OK 0\n`: an answer taken, or not.
    public static let answerTaken: [UInt8] = Array("+OK 1\n".utf8)
    public static let answerNotTaken: [UInt8] = Array("+OK 0\n".utf8)

    private static let answerPrefix: [UInt8] = Array("ANSWER ".utf8)
}
