import Foundation
import Testing

/// Runs each test of a suite on a thread of its own instead of on the Swift concurrency pool.
///
/// Swift Testing calls a synchronous test on the cooperative pool, which is as wide as the machine has CPUs. A
/// test that blocks (a socket read with a timeout, a wait for a process, a harness stepping its loop) holds one
/// of those threads while the CPU is idle, and with two CPUs two such tests held every thread: the rest of the
/// run, the time-limit checks included, waited behind them, and tests that had not yet had a turn failed their
/// limit. Under this trait a test case waits (without a thread) for one of `ThreadPerTestSlots`' slots, then
/// runs on a new thread that ends with it; the pool is left to the tests that compute.
public struct ThreadPerTestTrait: TestTrait, SuiteTrait, TestScoping {
    /// Whether the test takes every slot: no other blocking test runs beside it.
    let alone: Bool

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        // A test's time limit counts from its start, the wait for a slot included: the nearest limit goes first.
        let deadline = ContinuousClock.now + (test.timeLimit ?? .seconds(3600))
        let slots = alone ? ThreadPerTestSlots.shared.width : 1
        await ThreadPerTestSlots.shared.acquire(slots, before: deadline)
        let executor = OwnThreadExecutor()
        defer { executor.finish() }
        do {
            try await withTaskExecutorPreference(executor) { try await function() }
        } catch {
            await ThreadPerTestSlots.shared.release(slots)
            throw error
        }
        await ThreadPerTestSlots.shared.release(slots)
    }
}

extension Trait where Self == ThreadPerTestTrait {
    /// Each test case of the suite on a thread of its own (see `ThreadPerTestTrait`).
    public static var threadPerTest: Self { Self(alone: false) }

    /// The same, with no other blocking test beside it: for tests that measure what the machine gives their
    /// daemon (its RSS under a bound, a latency), which other tests' daemons and builds on two cores skew.
    public static var threadPerTestAlone: Self { Self(alone: true) }
}

/// How many blocking tests run at once, and which waiting test goes next: the one whose time limit ends first.
/// Worst case: `width` threads, each with a default stack, and one waiter per test case of the run (a few
/// hundred). The tests wait mostly on the daemons they start, so a few per CPU keep the CPUs busy without
/// starving what they measure.
public actor ThreadPerTestSlots {
    public static let shared = ThreadPerTestSlots(width: max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))
    let width: Int
    private var free: Int
    private var waiting: [(count: Int, deadline: ContinuousClock.Instant, turn: CheckedContinuation<Void, Never>)] = []

    init(width: Int) {
        self.width = width
        free = width
    }

    func acquire(_ count: Int, before deadline: ContinuousClock.Instant) async {
        if waiting.isEmpty && free >= count {
            free -= count
            return
        }
        await withCheckedContinuation { waiting.append((count, deadline, $0)) }
    }

    /// Hands the slots to the waiters with the earliest deadlines (the first to come among equals), in that
    /// order only: one that needs every slot is not passed by later ones while the others drain.
    func release(_ count: Int) {
        free += count
        while let next = waiting.indices.min(by: { waiting[$0].deadline < waiting[$1].deadline }),
              waiting[next].count <= free {
            free -= waiting[next].count
            waiting.remove(at: next).turn.resume()
        }
    }
}

/// A task executor with one thread of its own, which ends once `finish()` is called and its queue is empty.
/// A job that comes after that (an unstructured task that outlived its test) goes to the global executor.
final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var finishing = false
    private var ended = false

    init() {
        let thread = Thread { [self] in work() }
        thread.name = "test"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if ended {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    func finish() {
        condition.lock()
        finishing = true
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while head == jobs.count && !finishing { condition.wait() }
            if head == jobs.count {
                ended = true
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
