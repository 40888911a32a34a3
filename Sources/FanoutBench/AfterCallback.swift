import FanoutEventLoop

/// Work run on the loop once the current callback has returned: a connection handed from a peer to a sink or
/// a pump from inside the peer's own read callback must wait until that callback is over.
final class AfterCallback {
    private let loop: EventLoop
    private var work: [() -> Void] = []
    private var timer: LoopTimer?

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Runs `body` on the loop once the current callback has returned.
    func run(_ body: @escaping () -> Void) {
        work.append(body)
        if timer == nil {
            timer = LoopTimer(loop: loop) { [unowned self] in
                let due = self.work
                self.work.removeAll()
                due.forEach { $0() }
            }
        }
        if timer?.isScheduled == false { timer?.schedule(after: .zero) }
    }

    /// Lets go of the timer (and what its closure holds), once the loop has stopped.
    func tearDown() {
        timer = nil
        work.removeAll()
    }
}
