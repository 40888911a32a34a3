import ArgumentParser
@_spi(Bench) import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The threads that run the responder's command, at most `jobs` at once, and the way their outcomes come
/// back to the loop thread (which alone may touch the client): a socketpair whose read end the loop watches.
///
/// Bound: the loop hands out at most `jobs + maxWaiting` questions at a time (`Answer.run` checks
/// `outstanding` before `submit`), so the queue holds at most `maxWaiting`.
final class ResponderPool: @unchecked Sendable {
    struct Job: Sendable {
        let question: String
        let subject: String
        let payload: [UInt8]
    }

    private let condition = ConditionLock()
    // Guarded by `condition`.
    private var waiting: [Job] = []
    private var finished: [(question: String, outcome: CommandRun.Outcome)] = []
    private var running: Set<pid_t> = []

    private let command: CommandRun
    private let wakeWriter: Int32
    /// The read end, on the loop. Loop thread only.
    private let wakeReader: RawStream
    /// Questions submitted and not yet handed back. Loop thread only.
    private(set) var outstanding = 0

    /// Starts `jobs` worker threads; `done` runs on the loop thread for each finished question.
    init(loop: EventLoop, command: CommandRun, jobs: Int,
         done: @escaping (_ question: String, _ outcome: CommandRun.Outcome) -> Void) throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw ValidationError("socketpair: \(String(cString: strerror(errno)))")
        }
        self.command = command
        wakeWriter = fds[1]
        wakeReader = RawStream(loop: loop, fd: fds[0])
        wakeReader.onReadable = { [unowned self] in
            var scratch = [UInt8](repeating: 0, count: 256)
            while case .bytes = scratch.withUnsafeMutableBytes({ self.wakeReader.receive(into: $0) }) {}
            for (question, outcome) in self.takeFinished() {
                self.outstanding -= 1
                done(question, outcome)
            }
        }
        wakeReader.startReading()
        for _ in 0..<jobs {
            detachThread { [self] in work() }
        }
    }

    /// Queues a question for the next free worker (loop thread).
    func submit(_ job: Job) {
        outstanding += 1
        condition.lock()
        waiting.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Kills every command still running, with its process group (on the way out).
    func killRunning() {
        condition.lock()
        for pid in running { kill(-pid, SIGKILL) }
        condition.unlock()
    }

    private func takeFinished() -> [(question: String, outcome: CommandRun.Outcome)] {
        condition.lock()
        defer { condition.unlock() }
        let taken = finished
        finished.removeAll()
        return taken
    }

    private func work() {
        while true {
            condition.lock()
            while waiting.isEmpty { condition.wait() }
            let job = waiting.removeFirst()
            condition.unlock()
            var environment = ProcessEnvironment.all
            environment["FANOUT_SUBJECT"] = job.subject
            environment["FANOUT_QUESTION_ID"] = job.question
            let run = CommandRun(arguments: command.arguments, environment: environment, timeout: command.timeout,
                                 maxOutput: command.maxOutput)
            // The payload is one line: the command reads it as one, LF included.
            let outcome = run.run(input: job.payload + [0x0A], started: { pid in
                condition.lock()
                running.insert(pid)
                condition.unlock()
            }, ended: { pid in
                condition.lock()
                running.remove(pid)
                condition.unlock()
            })
            condition.lock()
            finished.append((job.question, outcome))
            condition.unlock()
            var byte: UInt8 = 1
            _ = send(wakeWriter, &byte, 1, Int32(MSG_NOSIGNAL))
        }
    }
}
