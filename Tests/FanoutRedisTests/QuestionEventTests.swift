@testable import FanoutRedisEngine
import Testing

/// What nodes tell a question's origin on its channel: counts are decimals of at most 32 bits, never negative, so
/// a stray message cannot make a question's counts go wrong.
@Suite("Question events from other nodes")
struct QuestionEventTests {
    private func event(_ text: String) -> RedisEngine.QuestionEvent? { RedisEngine.originEvent(Array(text.utf8)) }

    @Test func reportsGonesAndAnswersAreRead() {
        guard case .report(let id, let asked)? = event("R abc.7 3") else { Issue.record("no report"); return }
        #expect(id == "abc.7" && asked == 3)
        guard case .gone(_, let count)? = event("G abc.7 2") else { Issue.record("no gone"); return }
        #expect(count == 2)
        guard case .answer(_, let responder, let payload)? = event("A abc.7 node1/4 it is 21.5") else {
            Issue.record("no answer")
            return
        }
        #expect(responder == "node1/4" && payload == Array("it is 21.5".utf8))
    }

    @Test func aCountThatIsNotACountIsRefusedWhole() {
        for text in ["R abc.7 -5", "G abc.7 -1", "R abc.7 99999999999", "R abc.7 x", "G abc.7", "Q abc.7 1"] {
            #expect(event(text) == nil, "\(text)")
        }
    }
}
