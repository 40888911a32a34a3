/// A question put to this connection (protocol 1.2, `ASK <subject> <id> <payload>`): answer it with
/// `FanoutClient.answer(_:payload:completion:)`, or let it go unanswered.
public struct Question: Equatable, Sendable {
    /// The concrete subject the question was asked on.
    public let subject: String
    /// The server's token for the question, which the answer names.
    public let id: String
    public let payload: [UInt8]

    public init(subject: String, id: String, payload: [UInt8]) {
        self.subject = subject
        self.id = id
        self.payload = payload
    }

    /// The payload as text (invalid UTF-8 repaired).
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// One answer to a question this client asked (`ANSWER <id> <responder> <payload>`).
public struct Answer: Equatable, Sendable {
    public let questionID: String
    /// The answering connection's id, as `CLIENTS` shows it (`<node>/<id>` on several nodes).
    public let responder: String
    public let payload: [UInt8]

    public init(questionID: String, responder: String, payload: [UInt8]) {
        self.questionID = questionID
        self.responder = responder
        self.payload = payload
    }

    /// The payload as text (invalid UTF-8 repaired).
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// How a question closed (`DONE <id> asked=<a> answered=<b> gone=<g>`).
public struct QuestionSummary: Equatable, Sendable {
    public let questionID: String
    /// Connections the question was put to.
    public let asked: Int
    /// Answers taken (each was handed to the answer callback before this summary).
    public let answered: Int
    /// Asked connections that vanished before answering.
    public let gone: Int

    public init(questionID: String, asked: Int, answered: Int, gone: Int) {
        self.questionID = questionID
        self.asked = asked
        self.answered = answered
        self.gone = gone
    }

    /// Asked connections still silent when the question closed (timeout, or the cap of answers).
    public var silent: Int { max(asked - answered - gone, 0) }
}
