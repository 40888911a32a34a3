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
    /// `QSUB <group> <pattern> [<pattern> ...]` (1.2): a validated group name and validated patterns.
    case qsub(group: String, patterns: [String])
    /// `ASK <subject> <timeout-ms> <max-answers> <payload>` (1.2): a validated concrete subject, a timeout of at
    /// least 1 (the server checks its maximum), a cap (0: none) and the payload, borrowed as `PUB`'s.
    /// Indirect, so that the enum stays the size it was: PUB, the hot verb, is moved around per line.
    indirect case ask(subject: UnsafeRawBufferPointer, timeoutMilliseconds: UInt64, maxAnswers: UInt64,
                      payload: UnsafeRawBufferPointer)
    /// `ANSWER <id> <payload>` (1.2): a well-formed question id and the payload, both borrowed.
    case answer(id: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer)
    /// `BPUB <subject> <length>` (1.2): the subject as sent (unchecked: a refused header still has its bytes
    /// read and dropped, so the server checks it) and the announced length.
    case bpub(subject: UnsafeRawBufferPointer, length: UInt64)
    /// `WHO <subject> [<limit>]` (1.3): a validated concrete subject and how many members to list (100 when not
    /// given; a larger limit than `Command.whoListMaximum` is read as that maximum).
    case who(subject: String, limit: Int)
    /// `KICK <client> [<reason>]` (1.3): whom to close, and the reason to tell them (nil when none was given).
    case kick(target: KickTarget, reason: String?)

    /// WHO's limit when none is given, and the most it lists.
    public static let whoListDefault = 100
    public static let whoListMaximum = 1000
    /// The longest reason KICK passes on, in bytes.
    public static let kickReasonMaximum = 256

    /// Whom `KICK` closes: one client as `CLIENTS` or `WHO` shows it (`<id>`, or `<node>/<id>` on several
    /// nodes), or every connection of a user (`user=<user>`).
    public enum KickTarget: Equatable, Sendable {
        case client(node: String?, id: UInt64)
        case user(String)
    }

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
        case qsub = "QSUB", ask = "ASK", answer = "ANSWER", bpub = "BPUB", who = "WHO", kick = "KICK"

        /// The verb's name, upper-case, as `HELP` lists it and configurations name it.
        public var name: String { rawValue }

        /// The names, each packed into one word (its bytes from the lowest, at most 8), made once from
        /// `allCases`: matching a verb is on every command's path, and a byte-by-byte comparison with each name
        /// cost 280 instructions for ASK or ANSWER.
        private static let words: [(word: UInt64, count: Int, verb: Verb)] = allCases.map { verb in
            let name = Array(verb.rawValue.utf8)
            precondition(name.count <= 8, "a verb packs into one word")
            return (name.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) }, name.count, verb)
        }

        /// The verb spelled by `bytes`, in any case, without building a String.
        init?(matching bytes: UnsafeRawBufferPointer) {
            // PUB first: it is most of what a busy server reads.
            if bytes.count == 3, bytes[0] | 0x20 == UInt8(ascii: "p"), bytes[1] | 0x20 == UInt8(ascii: "u"),
               bytes[2] | 0x20 == UInt8(ascii: "b") {
                self = .pub
                return
            }
            guard bytes.count <= 8 else { return nil }
            var word: UInt64 = 0
            for index in 0..<bytes.count {
                var byte = bytes[index]
                if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") { byte -= 32 }
                word |= UInt64(byte) &<< UInt64(8 &* index)
            }
            for entry in Self.words where entry.word == word && entry.count == bytes.count {
                self = entry.verb
                return
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
        case .qsub: .qsub
        case .ask: .ask
        case .answer: .answer
        case .bpub: .bpub
        case .who: .who
        case .kick: .kick
        }
    }
}
