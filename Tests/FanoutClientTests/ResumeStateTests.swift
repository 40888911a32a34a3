@testable import FanoutClient
import Testing

/// A reply as the server writes it after `+OK `.
private func reply(
    _ subscriptions: Int = 1, epoch: String, seq: UInt64, replayed: UInt64 = 0, missed: UInt64? = 0
) -> ResumeReply {
    ResumeReply(subscriptions: subscriptions, epoch: epoch, seq: seq, replayed: replayed, missed: missed)
}

@Suite("ResumeReply")
struct ResumeReplyTests {
    @Test func parsesEveryField() {
        #expect(ResumeReply("3 epoch=k2x9.4 seq=120 replayed=12 missed=5")
            == reply(3, epoch: "k2x9.4", seq: 120, replayed: 12, missed: 5))
        #expect(ResumeReply("1 epoch=e seq=0 replayed=0 missed=unknown")?.missed == nil)
        #expect(ResumeReply("1 epoch=e seq=7 replayed=0 missed=0 shard=2")?.seq == 7, "unknown fields are ignored")
    }

    @Test(arguments: [
        "", "x epoch=e seq=1 replayed=0 missed=0", "1 seq=1 replayed=0 missed=0", "1 epoch= seq=1 replayed=0 missed=0",
        "1 epoch=e seq=-1 replayed=0 missed=0", "1 epoch=e seq=1 replayed=0 missed=some", "1 epoch=e seq=1 replayed=0",
        "1 epoch=e seq=1 stray replayed=0 missed=0",
    ])
    func refusesMalformedReplies(text: String) {
        #expect(ResumeReply(text) == nil)
    }
}

@Suite("ResumeState")
struct ResumeStateTests {
    /// A state greeted by a server with epoch `e1` that has resumed `orders` at seq 10.
    private func resumedAtTen() -> ResumeState {
        var state = ResumeState()
        state.connected(epoch: "e1")
        #expect(state.answered(subject: "orders", request: .position, reply: reply(epoch: "e1", seq: 10)) == nil,
                "a RESUME with no position reports nothing")
        return state
    }

    @Test func dropsDuplicatesWithinAnEpochAndReportsGaps() {
        var state = resumedAtTen()
        #expect(state.observe(subject: "orders", seq: 11) == .deliver)
        #expect(state.observe(subject: "orders", seq: 11) == .duplicate)
        #expect(state.observe(subject: "orders", seq: 3) == .duplicate)
        #expect(state.observe(subject: "orders", seq: 14) == .gap(expected: 12, received: 14), "a gap inside a connection")
        #expect(state.observe(subject: "orders", seq: 15) == .deliver)
        #expect(state.observe(subject: "other", seq: 40) == .deliver, "joining mid-stream is not a gap")
        #expect(state.observe(subject: "other", seq: 40) == .duplicate)
    }

    /// A RESET (several nodes) moves the position: the new numbering's messages are neither duplicates nor a
    /// gap, and a reconnect resumes from the new position in the new epoch.
    @Test func aResetMovesThePositionToTheNewNumbering() {
        var state = resumedAtTen()
        #expect(state.observe(subject: "orders", seq: 11) == .deliver)
        state.reset(subject: "orders", epoch: "e1.2", seq: 0)
        #expect(state.observe(subject: "orders", seq: 1) == .deliver)
        #expect(state.observe(subject: "orders", seq: 2) == .deliver)
        state.reset(subject: "orders", epoch: "e1.2", seq: 9)
        #expect(state.observe(subject: "orders", seq: 10) == .deliver)
        state.connected(epoch: "e1")
        #expect(state.restorePlan(subscriptions: ["orders"]).resumes == [
            .init(subject: "orders", request: .after(epoch: "e1.2", seq: 10)),
        ])
    }

    @Test func resumesEveryConcreteSubjectBeforeTheWildcards() {
        var state = resumedAtTen()
        _ = state.observe(subject: "orders", seq: 11)
        _ = state.observe(subject: "news.uk", seq: 7)     // through news.*
        _ = state.observe(subject: "news.fr", seq: 2)
        state.connected(epoch: "e1")
        let plan = state.restorePlan(subscriptions: ["news.*", "orders", "quiet"])
        #expect(plan.resumes == [
            .init(subject: "news.fr", request: .after(epoch: "e1", seq: 2)),
            .init(subject: "news.uk", request: .after(epoch: "e1", seq: 7)),
            .init(subject: "orders", request: .after(epoch: "e1", seq: 11)),
            .init(subject: "quiet", request: .position),
        ], "a subscribed subject never heard of just asks where it stands")
        #expect(plan.patterns == ["news.*"])
        #expect(plan.resumes.map { $0.request.line(subject: $0.subject) }.first == "RESUME news.fr e1 2")
    }

    @Test func aServerWithoutEpochsGetsOneSubAndGapReports() {
        var state = ResumeState()
        state.connected(epoch: nil)
        #expect(!state.canResume)
        #expect(state.observe(subject: "a", seq: 41) == .deliver)
        #expect(state.observe(subject: "a", seq: 42) == .deliver)
        #expect(state.observe(subject: "a", seq: 45) == .gap(expected: 43, received: 45))
        state.connected(epoch: nil)
        #expect(state.restorePlan(subscriptions: ["a", "b.*"]) == .init(resumes: [], patterns: ["a", "b.*"]))
        #expect(state.observe(subject: "a", seq: 1) == .gap(expected: 46, received: 1),
                "a restarted server: numbers may go back, and nothing is dropped as a duplicate")
        #expect(state.observe(subject: "a", seq: 1) == .gap(expected: 2, received: 1))
    }

    @Test func reportsWhatAResumeRecovered() {
        var state = resumedAtTen()
        _ = state.observe(subject: "orders", seq: 11)
        state.connected(epoch: "e1")
        let report = state.answered(subject: "orders", request: .after(epoch: "e1", seq: 11),
                                    reply: reply(epoch: "e1", seq: 23, replayed: 12, missed: 0))
        #expect(report == ResumeReport(subject: "orders", recovered: 12, missed: .count(0)))
        #expect(state.observe(subject: "orders", seq: 12) == .deliver, "the replay follows")
        #expect(state.observe(subject: "orders", seq: 12) == .duplicate)
    }

    @Test func reportsWhatTheHistoryNoLongerHeld() {
        var state = resumedAtTen()
        state.connected(epoch: "e1")
        // Messages 11 to 15 are gone; 16 to 18 are replayed.
        let report = state.answered(subject: "orders", request: .after(epoch: "e1", seq: 10),
                                    reply: reply(epoch: "e1", seq: 18, replayed: 3, missed: 5))
        #expect(report == ResumeReport(subject: "orders", recovered: 3, missed: .count(5)))
        #expect(state.observe(subject: "orders", seq: 16) == .deliver, "what was reported missing is no gap")
    }

    @Test func aSubjectWithoutHistoryCountsWhatWasPublishedMeanwhile() {
        var state = resumedAtTen()
        state.connected(epoch: "e1")
        let report = state.answered(subject: "orders", request: .after(epoch: "e1", seq: 10),
                                    reply: reply(epoch: "e1", seq: 12, replayed: 0, missed: 2))
        #expect(report == ResumeReport(subject: "orders", recovered: 0, missed: .count(2)))
        #expect(state.observe(subject: "orders", seq: 13) == .deliver)
    }

    @Test func aNewEpochRestartsDuplicateTracking() {
        var state = resumedAtTen()
        _ = state.observe(subject: "orders", seq: 11)
        state.connected(epoch: "e2")
        let report = state.answered(subject: "orders", request: .after(epoch: "e1", seq: 11),
                                    reply: reply(epoch: "e2", seq: 2, replayed: 2, missed: nil))
        #expect(report == ResumeReport(subject: "orders", recovered: 2, missed: .unknown))
        #expect(state.observe(subject: "orders", seq: 1) == .deliver, "seq 1 of the new epoch is new")
        #expect(state.observe(subject: "orders", seq: 2) == .deliver)
        #expect(state.observe(subject: "orders", seq: 2) == .duplicate)
        state.connected(epoch: "e2")
        #expect(state.restorePlan(subscriptions: ["orders"]).resumes == [.init(subject: "orders",
                                                                           request: .after(epoch: "e2", seq: 2))])
    }

    @Test func anUnknownMissInTheSameEpochAlsoRestartsTracking() {
        var state = resumedAtTen()
        state.connected(epoch: "e1")
        // The client stood past the subject's last seq: its position means nothing there.
        let report = state.answered(subject: "orders", request: .after(epoch: "e1", seq: 10),
                                    reply: reply(epoch: "e1", seq: 4, replayed: 4, missed: nil))
        #expect(report?.missed == .unknown)
        #expect(state.observe(subject: "orders", seq: 1) == .deliver)
    }

    @Test func aWildcardSubjectTakesTheGreetingsEpochOfItsConnection() {
        var state = ResumeState()
        state.connected(epoch: "e1")
        _ = state.observe(subject: "news.uk", seq: 5)
        state.connected(epoch: "e2")
        #expect(state.restorePlan(subscriptions: ["news.>"]).resumes
            == [.init(subject: "news.uk", request: .after(epoch: "e1", seq: 5))])
        // Its RESUME failed: a message numbered in another epoch is a restart, not a duplicate.
        #expect(state.observe(subject: "news.uk", seq: 1) == .restarted)
        #expect(state.observe(subject: "news.uk", seq: 2) == .deliver)
    }

    @Test func aSubjectNotResumedOnThisConnectionKeepsItsPlaceInTheSameEpoch() {
        var state = ResumeState()
        state.connected(epoch: "e1")
        _ = state.observe(subject: "news.uk", seq: 5)
        state.connected(epoch: "e1")
        #expect(state.observe(subject: "news.uk", seq: 5) == .duplicate)
        #expect(state.observe(subject: "news.uk", seq: 6) == .deliver)
    }

    @Test func lastStartsBeforeTheReplayAndDropsWhatWasSeen() {
        var state = ResumeState()
        state.connected(epoch: "e1")
        #expect(state.answered(subject: "orders.y", request: .newest(count: 2),
                               reply: reply(epoch: "e1", seq: 5, replayed: 2)) == nil)
        #expect(state.observe(subject: "orders.y", seq: 4) == .deliver)
        #expect(state.observe(subject: "orders.y", seq: 5) == .deliver)
        // LAST again: the replay repeats 4 and 5, which were printed already.
        _ = state.answered(subject: "orders.y", request: .newest(count: 2), reply: reply(epoch: "e1", seq: 5, replayed: 2))
        #expect(state.observe(subject: "orders.y", seq: 4) == .duplicate)
        #expect(state.observe(subject: "orders.y", seq: 6) == .deliver)
        #expect(ResumeState.Request.newest(count: 2).line(subject: "orders.y") == "LAST orders.y 2")
    }

    @Test func unsubscribingForgetsOnlyWhatNothingCoversAnyMore() {
        var state = ResumeState()
        state.connected(epoch: "e1")
        _ = state.observe(subject: "news.uk", seq: 5)
        _ = state.observe(subject: "sport.f1", seq: 9)
        state.forget(keeping: ["sport.>"])
        #expect(state.trackedSubjects == 1)
        #expect(state.observe(subject: "news.uk", seq: 9) == .deliver, "a first message again")
    }

    @Test func subjectsResumedForAWildcardAreUnsubscribedWithIt() {
        var state = ResumeState()
        state.connected(epoch: "e1")
        _ = state.observe(subject: "news.uk", seq: 5)
        _ = state.observe(subject: "news.fr", seq: 5)
        _ = state.answered(subject: "orders", request: .position, reply: reply(epoch: "e1", seq: 1))
        #expect(state.implicitSubscriptions(droppingPatterns: ["news.*"], keeping: ["orders"]).isEmpty,
                "not resumed on this connection: the server holds only the wildcard")
        state.connected(epoch: "e1")
        for subject in ["news.uk", "news.fr", "orders"] {
            _ = state.answered(subject: subject, request: .after(epoch: "e1", seq: 5), reply: reply(epoch: "e1", seq: 5))
        }
        #expect(state.implicitSubscriptions(droppingPatterns: ["news.*"], keeping: ["orders"]) == ["news.fr", "news.uk"])
        #expect(state.implicitSubscriptions(droppingPatterns: ["news.*"], keeping: ["news.>"]).isEmpty,
                "still covered by another pattern")
        #expect(state.implicitSubscriptions(droppingPatterns: ["orders"], keeping: ["news.*"]).isEmpty,
                "a subject subscribed by name is unsubscribed by name")
    }
}
