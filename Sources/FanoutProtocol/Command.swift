/// One client command, as parsed from one line.
///
/// `pub` and `ping` borrow bytes of the line they came from: use them before the parser's caller moves on.
public enum Command {
    /// `SUB <pattern> [<pattern> ...]`: validated patterns.
    case sub([String])
    /// `UNSUB [<pattern> ...]`: validated patterns; empty means all.
    case unsub([String])
    /// `PUB <subject> <payload>`: a validated concrete subject and the payload, both borrowed.
    case pub(subject: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer)
    /// `PING [<text>]`: the text after the verb, borrowed (empty when none).
    case ping(UnsafeRawBufferPointer)
    /// `QUIT`
    case quit
    /// `HELP`
    case help
    /// `INFO`
    case info
    /// `CHANNELS [<pattern>]`
    case channels(filter: String?)
    /// `CLIENTS`
    case clients
    /// `AUTH <token>`
    case auth(token: String)
    /// `RESUME <subject> [<epoch> <after-seq>]` (1.1): a validated concrete subject, and the client's position.
    case resume(subject: String, from: Position?)
    /// `LAST <subject> [<count>]` (1.1): a validated concrete subject and how many retained messages (1 when
    /// not given).
    case last(subject: String, count: UInt64)

    /// Where a resuming client stands on a subject: the epoch it numbered by and the last seq it has.
    public struct Position: Equatable, Sendable {
        public let epoch: String
        public let afterSeq: UInt64

        public init(epoch: String, afterSeq: UInt64) {
            self.epoch = epoch
            self.afterSeq = afterSeq
        }
    }

    /// The verbs, in the order `HELP` lists them: the one list of them.
    public enum Verb: String, CaseIterable, Sendable {
        case sub = "SUB", unsub = "UNSUB", pub = "PUB", ping = "PING", quit = "QUIT", help = "HELP", info = "INFO"
        case channels = "CHANNELS", clients = "CLIENTS", auth = "AUTH", resume = "RESUME", last = "LAST"

        /// The verb's name, upper-case, as `HELP` lists it and configurations name it.
        public var name: String { rawValue }

        /// The verb spelled by `bytes`, in any case, without building a String.
        init?(matching bytes: UnsafeRawBufferPointer) {
            for verb in Self.allCases where verb.rawValue.utf8.count == bytes.count {
                var equal = true
                for (index, expected) in verb.rawValue.utf8.enumerated() {
                    var byte = bytes[index]
                    if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") { byte -= 32 }
                    if byte != expected { equal = false; break }
                }
                if equal { self = verb; return }
            }
            return nil
        }
    }

    /// The command's verb.
    public var verb: Verb {
        switch self {
        case .sub: .sub
        case .unsub: .unsub
        case .pub: .pub
        case .ping: .ping
        case .quit: .quit
        case .help: .help
        case .info: .info
        case .channels: .channels
        case .clients: .clients
        case .auth: .auth
        case .resume: .resume
        case .last: .last
        }
    }
}
