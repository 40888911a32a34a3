import ArgumentParser
import FanoutClient
import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

struct Answer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer the questions asked on subjects by running a command for each.",
        discussion: """
              fanout answer svc.upper -- tr a-z A-Z              answers "hello" with "HELLO"
              fanout answer --group lookup 'users.>' -- ./lookup.sh
              fanout answer --jobs 8 --command-timeout 2000 shards.count -- sh -c 'wc -l < data'

            For each question (ASK) on a matching subject, COMMAND runs with the question's payload and a LF \\
            on its stdin, and FANOUT_SUBJECT and FANOUT_QUESTION_ID in its environment. When it exits with \\
            status 0, its stdout, less the line ends at its end, is the answer.
            No answer is sent, and stderr says why, when the command:
              exits with another status or is killed by a signal;
              runs longer than --command-timeout (it is killed, with the processes it started: it leads a \\
            process group of its own);
              writes more than one line, or more than 1 MiB (an answer is one line).
            The asker then counts this responder as silent.

            At most --jobs commands run at once; up to 1000 more questions wait for a free slot, and a \\
            question beyond that is not answered. With --group NAME the patterns are subscribed as a member \\
            of that group, so that each question goes to one of the group's responders. The connection is \\
            restored after a loss, as for fanout sub (unless --no-reconnect).
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(name: .long, help: ArgumentHelp(
        "Subscribe as a member of this group: each question goes to one member only.", valueName: "name"))
    var group: String?

    @Option(name: .long, help: ArgumentHelp("Commands run at once.", valueName: "n"))
    var jobs: Int = 4

    @Option(name: .long, help: ArgumentHelp("Kill a command still running after this many milliseconds.",
                                            valueName: "ms"))
    var commandTimeout: Int = 30_000

    @Option(name: .long, help: "Exit after answering this many questions.")
    var count: Int?

    @Flag(name: .long, help: "Exit when the connection is lost instead of reconnecting.")
    var noReconnect = false

    @Argument(help: ArgumentHelp("Subject or pattern whose questions to answer (* one token, > the rest).",
                                 valueName: "subject"))
    var subject: String

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.",
                                                          valueName: "command"))
    var command: [String] = []

    static let maxWaiting = 1000
    static let maxOutput = 1 << 20

    func validate() throws {
        guard !command.isEmpty else {
            throw ValidationError("give the command after --: fanout answer SUBJECT -- COMMAND")
        }
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        guard commandTimeout >= 1 else { throw ValidationError("--command-timeout must be at least 1 ms") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let group { try validateGroupName(group) }
        try checkWord { () throws(ClientError) in try CommandWords.checkPattern(subject) }
    }

    func run() throws {
        let session = try Session(connection, reconnect: noReconnect ? .never : ReconnectPolicy())
        let client = session.client
        let server = connection.serverText
        let limit = count
        var answered = 0
        let run = CommandRun(arguments: command, environment: [:], timeout: .milliseconds(commandTimeout),
                             maxOutput: Self.maxOutput)
        let pool = try ResponderPool(loop: session.loop, command: run, jobs: jobs) { question, outcome in
            guard let payload = Self.answerPayload(question: question, outcome, timeout: commandTimeout) else { return }
            payload.withUnsafeBytes { bytes in client.answer(question, payload: bytes) { result in
                switch result {
                case .success(true):
                    answered += 1
                    if let limit, answered >= limit { session.finish() }
                case .success(false):
                    break  // The question closed first (timeout, cap, asker gone): a late answer is normal.
                case .failure(let error):
                    printError("question \(question): answer not sent: \(error)")
                }
            } }
        }
        client.onQuestion = { question in
            guard pool.outstanding < jobs + Self.maxWaiting else {
                printError("question \(question.id): \(pool.outstanding) questions already waiting; not answered")
                return
            }
            pool.submit(ResponderPool.Job(question: question.id, subject: question.subject, payload: question.payload))
        }
        client.onEvent = { event in
            switch event {
            case .disconnected(let reason):
                if noReconnect {
                    session.fail(.disconnected(reason))
                } else {
                    printError("connection to \(server) lost: \(reason)")
                }
            case .connected(_, let reconnect) where reconnect:
                printError("reconnected to \(server)")
            case .resubscribeFailed(let patterns, let error):
                printError("could not resubscribe to \(patterns.joined(separator: " ")): \(error)")
            case .serverClosing(let error):
                printError("server is closing the connection: \(error.code) \(error.text)")
            case .kicked(let reason):
                // Final: the client does not reconnect, and neither does the tool.
                session.fail(.kicked(reason))
            default:
                break
            }
        }
        var stops: [SignalWatcher] = []
        for number in [SIGINT, SIGTERM] {
            stops.append(try SignalWatcher(loop: session.loop, signal: number) { _ in
                pool.killRunning()
                Glibc.exit(128 + number)
            })
        }
        defer { pool.killRunning() }
        try session.run {
            let failed: (Result<Int, ClientError>) -> Void = { result in
                if case .failure(let error) = result { session.fail(error) }
            }
            if let group {
                client.subscribe([subject], group: group, completion: failed)
            } else {
                client.subscribe([subject], completion: failed)
            }
        }
        withExtendedLifetime(stops) {}
    }

    /// The answer a command's outcome gives, or nil (with the reason on stderr) when it gives none.
    static func answerPayload(question: String, _ outcome: CommandRun.Outcome, timeout: Int) -> [UInt8]? {
        let why: String
        switch outcome {
        case .output(var bytes):
            while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
            guard bytes.contains(0x0A) else { return bytes }
            why = "the command wrote several lines (an answer is one line)"
        case .failed(let status): why = "the command exited with status \(status)"
        case .signalled(let signal): why = "the command was killed by signal \(signal)"
        case .timedOut: why = "the command was still running after \(timeout) ms and was killed"
        case .tooMuchOutput: why = "the command wrote more than \(maxOutput) bytes and was killed"
        case .cannotStart(let text): why = "cannot run the command: \(text)"
        }
        printError("question \(question): \(why); not answered")
        return nil
    }
}
