import FanoutEventLoop

/// The timer that closes a question at its timeout. A closed question's timer is kept in
/// `QuestionDesk.spareDeadlines` and armed again for a later question: arming and disarming one is an
/// `event_add` and an `event_del` in libevent's min-heap, O(log open questions), where making one per
/// question cost an object, a closure and a libevent event, each allocated and freed.
final class QuestionDeadline {
    /// The question it closes, read when it fires: a question closed meanwhile is not found.
    var number: UInt64 = 0
    fileprivate(set) var timer: LoopTimer!
}

extension QuestionDesk {
    /// Arms a spare timer, or a new one, to close `question` after `milliseconds`.
    func armDeadline(of question: Question, after milliseconds: UInt64) {
        let deadline = spareDeadlines.popLast() ?? makeDeadline()
        deadline.number = question.number
        deadline.timer.schedule(after: .milliseconds(Int64(milliseconds)))
        question.deadline = deadline
    }

    /// Disarms a closing question's timer and keeps it for a later question, up to the spare limit.
    func releaseDeadline(of question: Question) {
        guard let deadline = question.deadline else { return }
        question.deadline = nil
        deadline.timer.cancel()
        deadline.number = 0
        if spareDeadlines.count < Self.spareDeadlineLimit {
            spareDeadlines.append(deadline)
        }
    }

    private func makeDeadline() -> QuestionDeadline {
        let deadline = QuestionDeadline()
        deadline.timer = LoopTimer(loop: host.loop) { [unowned self, unowned deadline] in
            self.timedOut(deadline.number)
        }
        return deadline
    }

    private func timedOut(_ number: UInt64) {
        guard let question = byNumber[number] else { return }
        host.stats.askTimeouts += 1
        close(question)
    }
}
