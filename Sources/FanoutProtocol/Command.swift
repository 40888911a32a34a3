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

    /// The verbs, in the order `HELP` lists them.
    public static let verbs = ["SUB", "UNSUB", "PUB", "PING", "QUIT", "HELP", "INFO", "CHANNELS", "CLIENTS", "AUTH"]

    /// The verb's name, upper-case.
    public var verb: String {
        switch self {
        case .sub: "SUB"
        case .unsub: "UNSUB"
        case .pub: "PUB"
        case .ping: "PING"
        case .quit: "QUIT"
        case .help: "HELP"
        case .info: "INFO"
        case .channels: "CHANNELS"
        case .clients: "CLIENTS"
        case .auth: "AUTH"
        }
    }
}
