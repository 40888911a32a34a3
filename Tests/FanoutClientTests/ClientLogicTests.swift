import FanoutClient
import Testing

@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    @Test func growsExponentiallyUpToTheCap() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2), jitter: 0)
        #expect(policy.delay(forAttempt: 1, random: 0.7) == .milliseconds(100))
        #expect(policy.delay(forAttempt: 2, random: 0.7) == .milliseconds(200))
        #expect(policy.delay(forAttempt: 4, random: 0.7) == .milliseconds(800))
        #expect(policy.delay(forAttempt: 6, random: 0.7) == .seconds(2))
        #expect(policy.delay(forAttempt: 500, random: 0.7) == .seconds(2), "no overflow for huge attempt counts")
    }

    @Test func jitterSpreadsDelaysAroundTheBase() {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(10), jitter: 0.5)
        #expect(policy.delay(forAttempt: 1, random: 0) == .milliseconds(500))
        #expect(policy.delay(forAttempt: 1, random: 0.5) == .seconds(1))
        #expect(policy.delay(forAttempt: 1, random: 0.999_999) < .milliseconds(1500))
        #expect(policy.delay(forAttempt: 1, random: 0.999_999) > .milliseconds(1499))
    }
}
