@_spi(Bench) import FanoutEventLoop
import FanoutProtocol
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A set-up connection (greeted, subscribed) read and written raw, for the request/reply peers: its input is
/// read into one buffer and handed to `consume`, which says how much it used; what is queued with `append` goes
/// out with one `send` per `flush`, the rest when the kernel has room. Runs on the benchmark's loop thread.
final class RawConnection: TakenOverConnection {
    private let stream: RawStream
    private let input: UnsafeMutableRawBufferPointer
    private var filled = 0
    private var output: [UInt8] = []
    private var unsentStart = 0
    private var waitingToWrite = false
    private var failed = false
    /// Parses the complete frames at the start of the input: the bytes used, or a reason to give up.
    var consume: ((UnsafeRawBufferPointer) -> Result<Int, BenchFailure>)?
    var onFailure: ((String) -> Void)?
    var afterRead: (() -> Void)?

    static let inputCapacity = 1 << 20

    init(loop: EventLoop, fd: Int32, unread: [UInt8]) {
        stream = RawStream(loop: loop, fd: fd)
        (input, filled) = takenOverInput(unread, capacity: Self.inputCapacity)
        output.reserveCapacity(64 * 1024)
        startReading(stream, for: self)
    }

    deinit {
        input.deallocate()
    }

    /// Starts on what the handshake read past its last reply; call once `consume` is set.
    func start() {
        if filled > 0 { parse() }
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        output.append(contentsOf: bytes)
    }

    func append(_ bytes: [UInt8]) {
        output.append(contentsOf: bytes)
    }

    func flush() {
        guard !waitingToWrite, !failed, output.count > unsentStart else { return }
        let result = output.withUnsafeBytes { stream.send(UnsafeRawBufferPointer(rebasing: $0[unsentStart...])) }
        switch result {
        case .bytes(let count):
            unsentStart += count
            if unsentStart == output.count {
                output.removeAll(keepingCapacity: true)
                unsentStart = 0
                return
            }
        case .wouldBlock:
            break
        case .failed(let errno):
            return fail("write failed: \(String(cString: strerror(errno)))")
        }
        if unsentStart > 1 << 20 {
            output.removeFirst(unsentStart)
            unsentStart = 0
        }
        waitingToWrite = true
        stream.waitUntilWritable()
    }

    func writable() {
        waitingToWrite = false
        flush()
    }

    func readable() {
        guard !failed else { return }
        // Drain what the kernel has, up to a few reads, then let the other connections have a turn.
        reading: for _ in 0..<4 {
            let space = UnsafeMutableRawBufferPointer(rebasing: input[filled...])
            switch stream.receive(into: space) {
            case .bytes(let count):
                filled += count
                parse()
                if failed { return }
                if count < space.count { break reading }
            case .wouldBlock:
                break reading
            case .end:
                return fail("connection closed by the server")
            case .failed(let errno):
                return fail("read failed: \(String(cString: strerror(errno)))")
            }
        }
        flush()
        afterRead?()
    }

    private func parse() {
        guard let consume else { return }
        switch consume(UnsafeRawBufferPointer(rebasing: input[..<filled])) {
        case .success(let used):
            if used > 0 && used < filled {
                input.baseAddress!.copyMemory(from: input.baseAddress! + used, byteCount: filled - used)
            }
            filled -= used
            if filled == Self.inputCapacity { fail("a frame longer than \(Self.inputCapacity) bytes") }
        case .failure(let failure):
            fail(failure.description)
        }
    }

    private func fail(_ reason: String) {
        guard !failed else { return }
        failed = true
        stream.stopReading()
        onFailure?(reason)
    }
}

/// Reading frames out of a buffer of input.
enum FrameScan {
    /// The index of the first LF at or after `from`, or nil.
    @inline(__always)
    static func newline(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < bytes.count, let found = memchr(bytes.baseAddress! + from, 0x0A, bytes.count - from) else {
            return nil
        }
        return bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
    }

    /// The index of the `n`th space (1-based) in `bytes[range]`, or nil.
    @inline(__always)
    static func space(_ n: Int, in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        var seen = 0
        for index in range where bytes[index] == UInt8(ascii: " ") {
            seen += 1
            if seen == n { return index }
        }
        return nil
    }

    /// The number after the last `.` of `bytes[range]` (a question's id or an inbox subject), or nil.
    @inline(__always)
    static func trailingNumber(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        var start = range.upperBound
        while start > range.lowerBound && bytes[start - 1] != UInt8(ascii: ".") { start -= 1 }
        guard start < range.upperBound else { return nil }
        return DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: bytes[start..<range.upperBound]))
    }

    static func text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// The length that ends the header line `bytes[range]` (a NATS `MSG`), or nil.
    static func lastNumber(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        DeliverySink.lastNumber(UnsafeRawBufferPointer(rebasing: bytes[range]))
    }

    /// Giving up on the line `bytes[range]`, quoted after `what`.
    static func failure(_ what: String, _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> LineStep {
        .failed(BenchFailure(description: "\(what): \(text(bytes, range))"))
    }

    /// Where a walk of the lines goes after one.
    enum LineStep {
        /// To the next line.
        case next
        /// To `at`: the line began a frame that ends there (a NATS payload and its CRLF).
        case resume(at: Int)
        /// Nowhere yet: the line began a frame whose end has not arrived; it is read again with more input.
        case incomplete
        case failed(BenchFailure)
    }

    /// Hands each complete line, `start..<end` with its LF at `end`, to `line` in order: the bytes used up to the
    /// first incomplete line or frame, or the failure `line` gave up with. The walk of every request/reply peer.
    @inline(__always)
    static func lines(_ bytes: UnsafeRawBufferPointer,
                      _ line: (_ start: Int, _ end: Int) -> LineStep) -> Result<Int, BenchFailure> {
        var position = 0
        while let end = newline(bytes, from: position) {
            switch line(position, end) {
            case .next: position = end + 1
            case .resume(let at): position = at
            case .incomplete: return .success(position)
            case .failed(let failure): return .failure(failure)
            }
        }
        return .success(position)
    }
}
