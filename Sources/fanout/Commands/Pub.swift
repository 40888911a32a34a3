import ArgumentParser
import FanoutClient
import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

struct Pub: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish one message, or every line of stdin.",
        discussion: """
              fanout pub news.uk 'hello world'        prints the receivers count
              tail -f app.log | fanout pub logs.app   one message per line
              fanout pub metrics < samples.txt
              fanout pub --file order.json orders.new   the whole file as one message, any bytes
              protoc ... | fanout pub --binary blobs.x  all of stdin as one message

            Reading stdin, up to --window publishes are in flight at once (not one round trip per line); \
            at the end it prints how many were published and the total receivers.

            --file and --binary send one message with BPUB (protocol 1.2), whatever its bytes (LF and NUL \
            included, up to the server's max_payload), and print the receivers count. A MESSAGE argument \
            with a LF in it goes the same way.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "Concrete subject to publish to.")
    var subject: String

    @Argument(help: "The message. Without it, each line of stdin is published as its own message.")
    var message: String?

    @Option(name: .long, help: "Publishes in flight at once when reading stdin.")
    var window: Int = 100

    @Option(name: .long, help: ArgumentHelp("Publish this file's bytes as one message.", valueName: "path"))
    var file: String?

    @Flag(name: .long, help: "Publish all of stdin, unchanged, as one message.")
    var binary = false

    func validate() throws {
        guard window >= 1 else { throw ValidationError("--window must be at least 1") }
        try checkWord { () throws(ClientError) in try CommandWords.checkSubject(subject) }
        if (file != nil || binary) && message != nil {
            throw ValidationError("give a MESSAGE, --file or --binary, not several")
        }
        if file != nil && binary { throw ValidationError("--file already sends one message: drop --binary") }
    }

    func run() throws {
        let session = try Session(connection)
        let client = session.client
        if file != nil || binary {
            let bytes = try file.map(Self.readFile) ?? Self.readAll(fd: 0)
            try publishOne(session) { client.publishBinary(subject, bytes, completion: $0) }
            return
        }
        if let message {
            try publishOne(session) { client.publish(subject, message, completion: $0) }
            return
        }
        try session.connectAndWait()
        try publishLines(from: LineReader(fd: 0), session: session)
    }

    /// Publishes one message and prints its receivers count.
    private func publishOne(
        _ session: Session, _ publish: @escaping (@escaping (Result<Int, ClientError>) -> Void) -> Void
    ) throws {
        var receivers = 0
        try session.run {
            publish { result in
                switch result {
                case .success(let count):
                    receivers = count
                    session.finish()
                case .failure(let error):
                    session.fail(error)
                }
            }
        }
        print(receivers)
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("--file: cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        return try readAll(fd: fd)
    }

    /// Everything on `fd` up to its end.
    static func readAll(fd: Int32) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ValidationError("cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Streams stdin with a bounded window: reads only while fewer than `window` publishes are unanswered.
    private func publishLines(from reader: LineReader, session: Session) throws {
        let client = session.client
        var published = 0
        var receivers = 0
        var failure: ClientError?
        let loop = session.loop
        while failure == nil {
            while client.inFlight >= window && failure == nil { loop.runOnce(blocking: true) }
            // Send what is queued before a read that may block (tail -f): nothing should wait on stdin.
            if !reader.hasLine { loop.runOnce(blocking: false) }
            guard failure == nil, let line = try reader.nextLine() else { break }
            line.withUnsafeBytes { payload in
                client.publish(subject, payload: payload) { result in
                    switch result {
                    case .success(let count):
                        published += 1
                        receivers += count
                    case .failure(let error):
                        if failure == nil { failure = error }
                    }
                }
            }
        }
        while client.inFlight > 0 && failure == nil { loop.runOnce(blocking: true) }
        if let failure { throw Session.exit(failure) }
        print("published \(published) message\(published == 1 ? "" : "s") to \(receivers) receiver\(receivers == 1 ? "" : "s") in total")
    }
}

/// Reads lines from a file descriptor with blocking reads (stdin may be a file, a pipe or a terminal).
final class LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    init(fd: Int32) { self.fd = fd }

    /// Whether a complete line (or the final unterminated one) can be returned without reading.
    var hasLine: Bool { buffer[start...].contains(0x0A) || (atEnd && start < buffer.count) }

    /// The next line without its LF, or nil at end of input.
    func nextLine() throws -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                if start >= 1 << 16 { buffer.removeFirst(start); start = 0 }
                return line
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ValidationError("cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { atEnd = true } else { buffer.append(contentsOf: chunk[0..<count]) }
        }
    }
}
