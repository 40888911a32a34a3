/// The lines of questions (1.2): the push of a question, its reply, each answer and its `DONE`. Built from bytes
/// into the caller's buffer: a question's lines once cost a String interpolation each, a third of its CPU.
extension Encoder {
    /// Appends `ASK <subject> <id> <payload>\n`, a question put to a receiver.
    public static func appendQuestion(subject: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
                                      payload: UnsafeRawBufferPointer, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: askPrefix)
        buffer.append(contentsOf: subject)
        buffer.append(CommandParser.space)
        buffer.append(contentsOf: id)
        buffer.append(CommandParser.space)
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
        buffer.append(contentsOf: okPrefix)
        buffer.append(contentsOf: id)
        buffer.append(CommandParser.space)
        appendDecimal(UInt64(asked), to: &buffer)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends `ANSWER <id> <responder> <payload>\n`, an answer pushed to its asker, from a connection of this
    /// server (`responder` is its id).
    public static func appendAnswer(id: UnsafeRawBufferPointer, responder: UInt64, payload: UnsafeRawBufferPointer,
                                    to buffer: inout [UInt8]) {
        buffer.append(contentsOf: answerPrefix)
        buffer.append(contentsOf: id)
        buffer.append(CommandParser.space)
        appendDecimal(responder, to: &buffer)
        buffer.append(CommandParser.space)
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
        buffer.append(contentsOf: donePrefix)
        buffer.append(contentsOf: id)
        buffer.append(contentsOf: askedField)
        appendDecimal(UInt64(asked), to: &buffer)
        buffer.append(contentsOf: answeredField)
        appendDecimal(UInt64(answered), to: &buffer)
        buffer.append(contentsOf: goneField)
        appendDecimal(UInt64(gone), to: &buffer)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// `+OK 1\n` and `+OK 0\n`: an answer taken, or not.
    public static let answerTaken: [UInt8] = Array("+OK 1\n".utf8)
    public static let answerNotTaken: [UInt8] = Array("+OK 0\n".utf8)

    private static let askPrefix: [UInt8] = Array("ASK ".utf8)
    private static let okPrefix: [UInt8] = Array("+OK ".utf8)
    private static let answerPrefix: [UInt8] = Array("ANSWER ".utf8)
    private static let donePrefix: [UInt8] = Array("DONE ".utf8)
    private static let askedField: [UInt8] = Array(" asked=".utf8)
    private static let answeredField: [UInt8] = Array(" answered=".utf8)
    private static let goneField: [UInt8] = Array(" gone=".utf8)
}
