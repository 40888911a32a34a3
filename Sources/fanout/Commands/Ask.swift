import ArgumentParser
import FanoutClient
import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

struct Ask: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask every receiver of a subject, print their answers, and say who answered.",
        discussion: """
              fanout ask svc.time now                      each answer as "<responder> <payload>"
              fanout ask --max 1 svc.lookup user:42        the first answer only
              fanout ask --reduce sum --timeout 500 shards.count 'SELECT count(*)'
              fanout ask --reduce json health.> ping | jq .

            The question goes to every plain subscriber of SUBJECT and to one member of each group (never to \\
            this client). Answers are printed as they arrive, each as the responder's connection id, a space \\
            and the payload. When the question closes (everyone answered or vanished, --max answers taken, \\
            or --timeout passed) stderr gets one summary line:
              fanout: 3 of 4 answered, 1 gone
            with ", N silent" added for receivers that had not answered by then.

            With --reduce only the reduced value is printed, once the question has closed:
              all     the payloads, one per line
              count   how many answers came
              sum, min, max   numbers (integers, or decimals if any answer is one); an answer that is not \\
            a number is an error (exit 65) and nothing is printed
              and, or   integers folded bitwise; an answer that is not an integer is an error (exit 65)
              json    one array of {"responder":..., "payload":...} objects
            With no answer at all, count prints 0, sum 0, json [], the others nothing; the exit status is \\
            then 4.

            --timeout here is the question's, in milliseconds; connecting and the reply to ASK wait 5 s.
            """
    )

    @OptionGroup var target: ServerOptions

    @Argument(help: "Concrete subject to ask on.")
    var subject: String

    @Argument(help: "The question (one line).")
    var payload: String

    @Option(name: .long, help: ArgumentHelp("How long the question stays open, in milliseconds.", valueName: "ms"))
    var timeout: Int = 2000

    @Option(name: .long, help: ArgumentHelp("Close the question after this many answers (0: no cap).", valueName: "n"))
    var max: Int = 0

    @Option(name: .long, help: ArgumentHelp(
        "Print only this reduction of the answers: all, count, sum, min, max, and, or, json.", valueName: "how"))
    var reduce: AnswerReduction?

    func validate() throws {
        guard timeout >= 1 else { throw ValidationError("--timeout must be at least 1 ms") }
        guard max >= 0 else { throw ValidationError("--max must be 0 (no cap) or more") }
        try checkWord { () throws(ClientError) in try CommandWords.checkSubject(subject) }
        var text = payload
        guard text.withUTF8({ FanoutClient.lineCarries(UnsafeRawBufferPointer($0)) }) else {
            throw ValidationError("a question is one line: no LF in it, and no CR at its end")
        }
    }

    func run() throws {
        let session = try Session(address: try target.resolvedAddress(), options: target.clientOptions())
        let client = session.client
        let output = StandardOutput()
        let reduction = reduce
        var answers: [(responder: String, payload: [UInt8])] = []
        var summary: QuestionSummary?
        client.afterReadBatch = { output.flush() }
        try session.run {
            client.ask(subject, payload, timeout: .milliseconds(timeout), maxAnswers: max, onAnswer: { answer in
                answers.append((answer.responder, answer.payload))
                guard reduction == nil else { return }
                output.append(answer.responder + " ")
                answer.payload.withUnsafeBytes { output.append($0) }
                output.append(UInt8(ascii: "\n"))
            }, completion: { result in
                switch result {
                case .success(let done):
                    summary = done
                    session.finish()
                case .failure(let error):
                    session.fail(error)
                }
            })
        }
        output.flush()
        guard let summary else { return }
        if let reduction {
            do {
                if let value = try reduction.reduce(answers) { print(value) }
            } catch {
                printError("--reduce \(reduction.rawValue): \(error.description)")
                throw ExitCode(ExitStatus.badAnswer)
            }
        }
        printError(Self.summaryLine(summary))
        if summary.answered == 0 { throw ExitCode(ExitStatus.noAnswer) }
    }

    /// `3 of 4 answered, 1 gone`, and `, 2 silent` when some had not answered when the question closed.
    static func summaryLine(_ summary: QuestionSummary) -> String {
        let silent = summary.silent > 0 ? ", \(summary.silent) silent" : ""
        return "\(summary.answered) of \(summary.asked) answered, \(summary.gone) gone\(silent)"
    }
}

extension AnswerReduction: ExpressibleByArgument {}
