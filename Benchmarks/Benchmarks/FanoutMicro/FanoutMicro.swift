// In-process micro-benchmarks: the parser, the subject index, and fan-out over weak subscriber sets.
// Run from Benchmarks/: `swift package benchmark` (add `--filter 'index.*'` to pick some).
import Benchmark
import FanoutEngine
import FanoutMulticast
import FanoutProtocol
import FanoutSubjects

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )
    parserBenchmarks()
    indexBenchmarks()
    fanoutBenchmarks()
    engineSeamBenchmarks()
}

/// A subscriber as the index sees one: only the mark it uses to count a member once per publish.
final class Member: Subscriber {
    var deliveryMark: UInt64 = 0
    var received = 0
}

/// Pipelined input as a publisher sends it: `count` PUB lines with 100-byte payloads.
func pipelinedPublishes(count: Int, subjects: Int = 1) -> [UInt8] {
    let payload = String(repeating: "x", count: 100)
    return Array((0..<count).map { "PUB bench.\($0 % subjects) \(payload)\n" }.joined().utf8)
}

func parserBenchmarks() {
    let input = pipelinedPublishes(count: 1_000)
    // Framing and parsing of a read batch, as the server does per read callback: per line, not per byte.
    Benchmark("parser: frame+parse 1000 PUB lines", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var framer = LineFramer(maxLine: 1_048_576)
        var published = 0
        for _ in benchmark.scaledIterations {
            input.withUnsafeBytes { chunk in
                _ = framer.feed(chunk) { event in
                    if case .line(let line) = event, case .pub(_, let payload)? = try? CommandParser.parse(line) {
                        published &+= payload.count
                    }
                    return .goOn
                }
            }
        }
        blackHole(published)
    }

    let sub = Array("SUB orders.*.eu orders.> metrics.cpu.host1".utf8)
    Benchmark("parser: SUB with three patterns") { benchmark in
        for _ in benchmark.scaledIterations {
            sub.withUnsafeBytes { blackHole(try? CommandParser.parse($0)) }
        }
    }

    let subject = Array("orders.created.eu".utf8)
    let payload = Array(String(repeating: "x", count: 100).utf8)
    Benchmark("encoder: 1000 MSG lines") { benchmark in
        var bytes: [UInt8] = []
        bytes.reserveCapacity(200_000)
        for _ in benchmark.scaledIterations {
            bytes.removeAll(keepingCapacity: true)
            subject.withUnsafeBytes { subject in
                payload.withUnsafeBytes { payload in
                    for seq in 1...1_000 { Encoder.appendMessage(subject: subject, seq: UInt64(seq), payload: payload, to: &bytes) }
                }
            }
            blackHole(bytes.count)
        }
    }
}

func indexBenchmarks() {
    for subscriptions in [1, 100, 10_000, 100_000] {
        // Exact: every member on its own subject, lookups of one of them (B's shape).
        let exactMembers = (0..<subscriptions).map { _ in Member() }
        let exact = SubjectIndex<Member>()
        for (number, member) in exactMembers.enumerated() { exact.subscribe(member, to: "s.\(number)") }
        let probe = "s.\(subscriptions / 2)"
        Benchmark("index: exact lookup, \(subscriptions) subscriptions") { benchmark in
            var receivers: [Member] = []
            for _ in benchmark.scaledIterations {
                receivers.removeAll(keepingCapacity: true)
                blackHole(exact.collectReceivers(of: probe, into: &receivers))
            }
            withExtendedLifetime(exactMembers) {}
        }

        // Wildcard: members spread over `a.<n>.*` and `a.>` patterns; one publish matches a few of them.
        let wildMembers = (0..<subscriptions).map { _ in Member() }
        let wild = SubjectIndex<Member>()
        for (number, member) in wildMembers.enumerated() {
            wild.subscribe(member, to: number % 10 == 0 ? "a.>" : "a.\(number % 1_000).*")
        }
        Benchmark("index: wildcard match, \(subscriptions) subscriptions") { benchmark in
            var receivers: [Member] = []
            for _ in benchmark.scaledIterations {
                receivers.removeAll(keepingCapacity: true)
                blackHole(wild.collectReceivers(of: "a.7.x", into: &receivers))
            }
            withExtendedLifetime(wildMembers) {}
        }
    }

    Benchmark("index: subscribe+unsubscribe 10000 members") { benchmark in
        let members = (0..<10_000).map { _ in Member() }
        let index = SubjectIndex<Member>()
        benchmark.startMeasurement()
        for (number, member) in members.enumerated() { index.subscribe(member, to: "s.\(number % 100)") }
        for (number, member) in members.enumerated() { index.unsubscribe(member, from: "s.\(number % 100)") }
        benchmark.stopMeasurement()
        index.sweep()
    }
}

func fanoutBenchmarks() {
    // The server's shape: resolve the weak set once per run of messages, then deliver by strong reference.
    for fanout in [100, 5_000] {
        let members = (0..<fanout).map { _ in Member() }
        let index = SubjectIndex<Member>()
        for member in members { index.subscribe(member, to: "fan") }
        Benchmark("fanout: 100 messages to \(fanout) subscribers, resolved once per run") { benchmark in
            var receivers: [Member] = []
            for _ in benchmark.scaledIterations {
                receivers.removeAll(keepingCapacity: true)
                index.collectReceivers(of: "fan", into: &receivers)
                for _ in 0..<100 {
                    for receiver in receivers { receiver.received &+= 1 }
                }
            }
            withExtendedLifetime(members) {}
        }
        // The naive shape, for contrast: a weak load per message per subscriber.
        let set = MulticastDelegate<Member>()
        for member in members { set.add(member) }
        Benchmark("fanout: 100 messages to \(fanout) subscribers, weak set walked per message") { benchmark in
            for _ in benchmark.scaledIterations {
                for _ in 0..<100 { set.notify { $0.received &+= 1 } }
            }
            withExtendedLifetime(members) {}
        }
    }
}

/// Receipts nobody reads: the memory engine numbers at once and never asks for them.
final class NoReceipts: PublishReceipts {
    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {}
}

/// The engine seam, the two ways a server could hold it: as `any Engine` (what fanoutd does, taking the
/// reference once per read) or as a generic parameter specialized for the memory engine. 1,000 publishes to one
/// subject per iteration, numbered as a read's run is.
func engineSeamBenchmarks() {
    let subject = Array("bench.seam".utf8)
    let payload = [UInt8](repeating: 0x78, count: 100)
    let receipts = NoReceipts()

    /// `count` publishes of one subject through `publish`, inlined into each caller so that only the call
    /// into the engine differs between them.
    @inline(__always)
    func publishAll(count: Int, _ publish: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> PublishOutcome) -> UInt64 {
        var last: UInt64 = 0
        subject.withUnsafeBytes { subject in
            payload.withUnsafeBytes { payload in
                for _ in 0..<count {
                    if case .numbered(let seq, _, _) = publish(subject, payload) { last = seq }
                }
            }
        }
        return last
    }

    @inline(never)
    func publishThroughExistential(_ engine: any Engine, count: Int) -> UInt64 {
        let last = publishAll(count: count) {
            engine.publish(subject: $0, payload: $1, anyBytes: false, receipt: (receipts, 0))
        }
        engine.endOfRead()
        return last
    }

    @inline(never)
    func publishThroughGeneric<E: Engine>(_ engine: E, count: Int) -> UInt64 {
        let last = publishAll(count: count) {
            engine.publish(subject: $0, payload: $1, anyBytes: false, receipt: (receipts, 0))
        }
        engine.endOfRead()
        return last
    }

    let existential: any Engine = MemoryEngine(subjectLimit: 1000)
    Benchmark("engine seam: 1000 publishes through any Engine", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(publishThroughExistential(existential, count: 1_000)) }
    }
    let concrete = MemoryEngine(subjectLimit: 1000)
    Benchmark("engine seam: 1000 publishes through a generic Engine", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(publishThroughGeneric(concrete, count: 1_000)) }
    }
}
