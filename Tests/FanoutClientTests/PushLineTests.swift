import FanoutProtocol
import Testing

/// The pushes of protocol 1.2 as a client parses them: `BMSG` headers, questions, answers and `DONE`.
@Suite("Server lines of protocol 1.2")
struct PushLineTests {
    @Test func parsesBinaryMessageHeaders() {
        #expect(ServerLine.parse("BMSG blobs.a 7 12") == .binaryMessage(subject: "blobs.a", seq: 7, length: 12))
        #expect(ServerLine.parse("BMSG blobs.a 7 0") == .binaryMessage(subject: "blobs.a", seq: 7, length: 0))
        #expect(ServerLine.parse("BMSG blobs.a 7") == nil, "no length")
        #expect(ServerLine.parse("BMSG blobs.a 7 -1") == nil)
        #expect(ServerLine.parse("BMSG blobs.a x 3") == nil)
        #expect(ServerLine.parse("BMSG  a 1 3") == nil, "an empty subject")
        #expect(ServerLine.parse("BMSG a 1 3 extra") == nil)
    }

    @Test func parsesQuestionsAndAnswersWithTheirPayloadsUnchanged() {
        #expect(ServerLine.parse("ASK svc.time q17 what  time is it?")
            == .question(subject: "svc.time", id: "q17", payload: Array("what  time is it?".utf8)))
        #expect(ServerLine.parse("ASK svc.time q17 ") == .question(subject: "svc.time", id: "q17", payload: []))
        #expect(ServerLine.parse("ASK svc.time q17") == .question(subject: "svc.time", id: "q17", payload: []))
        #expect(ServerLine.parse("ASK svc.time") == nil)
        #expect(ServerLine.parse("ANSWER q17 12 noon ") == .answer(id: "q17", responder: "12", payload: Array("noon ".utf8)))
        #expect(ServerLine.parse("ANSWER q17 n2/12 x") == .answer(id: "q17", responder: "n2/12", payload: [UInt8(ascii: "x")]))
        #expect(ServerLine.parse("ANSWER q17") == nil)
        #expect(ServerLine.parse("ASKED x y z") == nil)
    }

    @Test func parsesDone() {
        #expect(ServerLine.parse("DONE q17 asked=4 answered=3 gone=1") == .done(id: "q17", asked: 4, answered: 3, gone: 1))
        #expect(ServerLine.parse("DONE q17 gone=0 asked=0 answered=0 node=2") == .done(id: "q17", asked: 0, answered: 0, gone: 0),
                "fields in any order; unknown ones ignored")
        #expect(ServerLine.parse("DONE q17 asked=4 answered=3") == nil)
        #expect(ServerLine.parse("DONE q17 asked=x answered=3 gone=1") == nil)
    }

    @Test func earlierLinesStillParse() {
        #expect(ServerLine.parse("MSG a.b 12 x y") == .message(subject: "a.b", seq: 12, payload: Array("x y".utf8)))
        #expect(ServerLine.parse("RESET a epoch=e seq=3 missed=unknown") == .reset(subject: "a", epoch: "e", seq: 3, missed: nil))
        #expect(ServerLine.parse("+OK q1 3") == .success(word: "OK", text: "q1 3"))
    }
}
