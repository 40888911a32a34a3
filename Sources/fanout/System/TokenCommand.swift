/// `--token-command`: a shell command whose stdout (trimmed of surrounding whitespace) is a fresh token, run
/// before each connection's AUTH and when the server pushes `-ERR auth-expired`, so that `fanout sub` can stay
/// up for longer than any one token lives. It runs on the client's loop, which waits for it (a subscriber
/// reads nothing meanwhile; the server's grace is for that), at most `timeout` before it is killed.
struct TokenCommand: Sendable {
    let command: String
    var timeout: Duration = .seconds(30)
    /// A token is at most this long (the server refuses a JWT over 32 KiB anyway).
    static let maxOutput = 64 * 1024

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    func fetch() throws -> String {
        let run = CommandRun(arguments: ["/bin/sh", "-c", command], environment: ProcessEnvironment.all,
                             timeout: timeout, maxOutput: Self.maxOutput)
        // What it printed is a secret: only how it failed is told, never its output.
        switch run.run(input: [], started: { _ in }, ended: { _ in }) {
        case .output(let bytes):
            let text = String(decoding: bytes, as: UTF8.self)
            let token = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
            guard !token.isEmpty else { throw Failure(description: "--token-command printed no token") }
            return String(token)
        case .failed(let status): throw Failure(description: "--token-command exited with status \(status)")
        case .signalled(let signal): throw Failure(description: "--token-command was killed by signal \(signal)")
        case .timedOut: throw Failure(description: "--token-command ran longer than \(timeout)")
        case .tooMuchOutput: throw Failure(description: "--token-command printed more than \(Self.maxOutput) bytes")
        case .cannotStart(let why): throw Failure(description: "--token-command cannot start: \(why)")
        }
    }
}
