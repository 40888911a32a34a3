import ArgumentParser
import FanoutBench
import FanoutClient
import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure round-trip times with PING.",
        discussion: "  fanout ping\n  fanout ping --count 100 --interval 0.01"
    )

    @OptionGroup var connection: ConnectionOptions
    @Option(name: .shortAndLong, help: "Number of pings.") var count: Int = 4
    @Option(name: .shortAndLong, help: "Seconds between pings.") var interval: Double = 1

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count must be at least 1") }
        guard interval >= 0, interval.isFinite else { throw ValidationError("--interval must be 0 or more seconds") }
    }

    func run() throws {
        let session = try Session(connection)
        let server = connection.serverText
        var times: [Duration] = []
        var timer: LoopTimer?
        func pingOnce() {
            session.client.ping { result in
                switch result {
                case .success(let rtt):
                    times.append(rtt)
                    print("PONG from \(server): seq=\(times.count) time=\(Self.milliseconds(rtt)) ms")
                    if times.count == count {
                        session.finish()
                    } else {
                        timer?.schedule(after: .milliseconds(Int64(interval * 1000)))
                    }
                case .failure(let error):
                    session.fail(error)
                }
            }
        }
        timer = LoopTimer(loop: session.loop) { pingOnce() }
        try session.run { pingOnce() }
        let sorted = times.sorted()
        let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
        print("--- \(server) ping statistics ---")
        print("\(times.count) replies, min/median/p99/max = \(Self.milliseconds(sorted.first!))/"
              + "\(Self.milliseconds(sorted[sorted.count / 2]))/\(Self.milliseconds(p99))/\(Self.milliseconds(sorted.last!)) ms")
        timer = nil
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return cFormat("%.3f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}
