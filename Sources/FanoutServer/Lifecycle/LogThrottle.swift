import FanoutEventLoop

/// A log line that an attacker can make the server want thousands of times a second (a failed AUTH, a
/// refused connection): the first of each interval is written, the rest are counted and summed up in one line
/// when the interval ends, so the log grows by a few lines a minute whatever the rate.
final class LogThrottle {
    private var log = SuppressedLog()
    private var timer: LoopTimer?
    private let loop: EventLoop
    private let summarize: (_ count: Int, _ sources: [String]) -> Void

    init(loop: EventLoop, summarize: @escaping (_ count: Int, _ sources: [String]) -> Void) {
        self.loop = loop
        self.summarize = summarize
    }

    /// Whether this occurrence is to be written now; if not, it is counted for the interval's summary.
    func shouldWrite(from source: String) -> Bool {
        if log.shouldWrite(from: source, at: .now) { return true }
        if timer == nil {
            timer = LoopTimer(loop: loop) { [unowned self] in
                if let summary = self.log.takeSummary() { self.summarize(summary.count, summary.sources) }
            }
        }
        if timer?.isScheduled == false { timer?.schedule(after: SuppressedLog.interval) }
        return false
    }
}
