import FanoutEventLoop
import FanoutMulticast
import FanoutProtocol

/// Questions (1.2): `ASK` puts a question to the receivers of a subject, chosen as for a message (every plain
/// subscriber, one member per group) but never the asker; `ANSWER` sends an answer back; the asker hears
/// `DONE` once when the question closes: all answered or vanished, the cap of answers, or the timeout.
extension Server {
    func ask(subject: UnsafeRawBufferPointer, timeoutMilliseconds: UInt64, maxAnswers: UInt64,
             payload: UnsafeRawBufferPointer, from asker: ClientConnection) {
        let limits = configuration.limits
        if let refusal = askRefusal(timeoutMilliseconds: timeoutMilliseconds, asker: asker) {
            return refuseAsk(refusal, to: asker)
        }
        let scratch = questions.scratch
        scratch.reset()
        gatherQuestionReceivers(of: String(decoding: subject, as: UTF8.self), asker: asker, into: &scratch.receivers)
        let receivers = scratch.receivers
        if memoryBoundRefuses(adding: 256 + receivers.count * 24 + receivers.count * (payload.count + 64)) {
            return refuseAsk("the server is at max_memory=\(limits.maxMemory)", to: asker)
        }
        let number = questions.nextNumber()
        let id = questions.id(of: number)
        stats.questions += 1
        id.withBytes { Encoder.appendQuestion(subject: subject, id: $0, payload: payload, to: &scratch.line) }
        // Queuing never drops a connection: each stays in the table, which owns it, until the checks below
        // (`isCheckingReceivers`).
        for receiver in receivers {
            receiver._withUnsafeGuaranteedRef {
                fanout.deliver(scratch.line, to: $0)
                notePut(number, to: $0)
            }
        }
        scratch.resetLine()
        id.withBytes { Encoder.appendQuestionReply(id: $0, asked: receivers.count, to: &scratch.line) }
        asker.send(scratch.line)
        guard !receivers.isEmpty else {
            scratch.resetLine()
            id.withBytes { Encoder.appendDone(id: $0, asked: 0, answered: 0, gone: 0, to: &scratch.line) }
            asker.send(scratch.line)
            return
        }
        let question = Question(number: number, id: id, asker: asker,
                                receivers: AskedConnections(count: receivers.count) {
                                    receivers[$0]._withUnsafeGuaranteedRef { $0.id }
                                },
                                maxAnswers: maxAnswers)
        track(question, askedBy: asker)
        // A receiver dropped as a slow consumer now is gone, not silent: its departure marks it
        // (`questionsLeft`), and may close the question, its DONE after the reply.
        let marks = BacklogMarks(limits)
        questions.isCheckingReceivers = true
        for receiver in receivers { checkBacklog(of: receiver, marks: marks) }
        questions.isCheckingReceivers = false
        if !fanout.run.isOpen && !fanout.retired.isEmpty { fanout.retired.removeAll() }
        guard !question.isClosed else { return }
        armDeadline(of: question, after: timeoutMilliseconds)
    }

    /// Counts an open question in the table, toward `max_memory` and among its asker's; `closeQuestion` undoes
    /// each.
    func track(_ question: Question, askedBy asker: ClientConnection) {
        questions.byNumber[question.number] = question
        questions.bytes += question.countedBytes
        asker.madeExtras.asks.append(question.number)
        if let user = auth.userName(of: asker) {
            question.owner = user
            questions.openByOwner[user, default: 0] += 1
        }
    }

    /// `Fanout.checkBacklog(of:marks:)` for a connection held unretained: past the watch mark, where the check
    /// may drop it, a strong reference keeps it alive through its departure.
    func checkBacklog(of connection: Unmanaged<ClientConnection>, marks: BacklogMarks) {
        let pending = connection._withUnsafeGuaranteedRef { $0.socket != nil ? $0.pendingBytes : 0 }
        guard pending > marks.watchAbove else { return }
        let held = connection.takeUnretainedValue()
        fanout.applyBacklogMarks(marks, to: held, pending: pending)
    }

    /// Why an ASK is refused with `-ERR limit`, or nil: its timeout, the asker's open questions, the server's.
    func askRefusal(timeoutMilliseconds: UInt64, asker: ClientConnection) -> String? {
        let limits = configuration.limits
        if timeoutMilliseconds > UInt64(limits.maxAskTimeoutMilliseconds) {
            return "timeout \(timeoutMilliseconds) ms exceeds max_ask_timeout=\(limits.maxAskTimeoutMilliseconds)"
        }
        if asker.openAsks >= limits.maxAsks { return "max_asks=\(limits.maxAsks) questions already open on this connection" }
        let free = limits.maxOpenQuestions - questions.byNumber.count
        if free <= 0 { return "max_open_questions=\(limits.maxOpenQuestions) open on the server" }
        // The fair share: no connection holds more open questions than the pool has left free, so one alone
        // reaches half of it (max_asks is held to that), and n connections that flood stop at
        // max_open_questions / (n + 1) each, leaving as much free for everyone else. O(1) per ASK.
        if asker.openAsks >= free {
            return "this connection holds \(asker.openAsks) open questions, as many as max_open_questions="
                + "\(limits.maxOpenQuestions) has left free"
        }
        // The same share for its user, so that one user's many connections, taking turns each to half of what
        // is left, cannot together take the pool: a user's stop at half of it too. Connections without a user
        // are told apart only by connection (behind a proxy they share one address).
        if let user = auth.userName(of: asker), let held = questions.openByOwner[user], held >= free {
            return "user \(user) holds \(held) open questions, as many as max_open_questions="
                + "\(limits.maxOpenQuestions) has left free"
        }
        return nil
    }

    /// The connections a question goes to, appended to `receivers` unretained (the connection table owns them
    /// meanwhile): every live plain receiver and one member of each group, chosen as for a message, with the
    /// asker left out before any group chooses. Each at most once, and only connections that can answer: an
    /// event stream never can, so a question it got would only run to its timeout.
    func gatherQuestionReceivers(of subject: String, asker: ClientConnection,
                                 into receivers: inout [Unmanaged<ClientConnection>]) {
        let withholds = auth.anyUserWithholds
        index.forEachReceiver(of: subject) { connection in
            guard connection !== asker, connection.socket != nil, connection.transport.canAnswer else { return }
            if withholds && connection.permissions?.withholds(subject) == true { return }
            receivers.append(.passUnretained(connection))
        }
        guard index.hasGroups else { return }
        let mark = index.lastMark
        var groups: [(name: String, members: MulticastGroup<ClientConnection>)] = []
        index.forEachGroup(of: subject) { groups.append(($0, $1)) }
        groups.sort { $0.name < $1.name }
        var chosen: Set<ObjectIdentifier> = []
        fanout.forEachChosenMember(of: groups, excluding: asker, subject: subject) { member, _ in
            guard member.deliveryMark != mark || member === asker, member !== asker else { return }
            guard chosen.insert(ObjectIdentifier(member)).inserted, member.transport.canAnswer else { return }
            receivers.append(.passUnretained(member))
        }
    }

    /// `ANSWER <id> <payload>`: `+OK 1` when taken (and pushed to the asker), `+OK 0` when the question is
    /// closed, was not put to this connection, or was answered by it already.
    func answer(id: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from responder: ClientConnection) {
        if cluster != nil { return clusterAnswer(id: id, payload: payload, from: responder) }
        guard let number = questions.number(of: id), let question = questions.byNumber[number],
              question.receivers.settle(responder.id, as: .answered) else {
            responder.send(Encoder.answerNotTaken)
            return
        }
        question.answered += 1
        stats.answers += 1
        responder.send(Encoder.answerTaken)
        if question.withAsker({ $0.socket != nil }) {
            let scratch = questions.scratch
            scratch.resetLine()
            // The id as handed out: the responder's may have written the number with leading zeros.
            question.id.withBytes {
                Encoder.appendAnswer(id: $0, responder: responder.id, payload: payload, to: &scratch.line)
            }
            question.withAsker { fanout.deliver(scratch.line, to: $0) }
            // An answer counts toward the asker's output limit, like a message.
            checkBacklog(of: question.askerReference, marks: BacklogMarks(configuration.limits))
        }
        if question.isComplete, !question.isClosed { closeQuestion(question) }
    }

    /// Closes a question once: the asker gets its `DONE` (after every `ANSWER` push, which went before it).
    /// `quietly`: no DONE (the ASK was answered with an error). O(max_asks) for the asker's list.
    func closeQuestion(_ question: Question, quietly: Bool = false) {
        guard !question.isClosed else { return }
        question.isClosed = true
        questions.byNumber[question.number] = nil
        questions.bytes -= question.countedBytes
        if !question.owner.isEmpty, let open = questions.openByOwner[question.owner] {
            questions.openByOwner[question.owner] = open > 1 ? open - 1 : nil
        }
        releaseDeadline(of: question)
        // Quietly too: an ASK whose outcome is unknown may have reached nodes that put it to their receivers.
        if question.isClustered { clusterQuestionClosed(question) }
        let delivers = question.withAsker { asker in
            if let slot = asker.extras?.asks.firstIndex(of: question.number) { asker.extras?.asks.remove(at: slot) }
            return asker.socket != nil && !quietly
        }
        guard delivers else { return }
        let scratch = questions.scratch
        scratch.resetLine()
        question.id.withBytes {
            Encoder.appendDone(id: $0, asked: question.asked, answered: question.answered, gone: question.gone,
                               to: &scratch.line)
        }
        question.withAsker { asker in
            // On several nodes the ASK's own reply may still wait for Redis: DONE goes behind it.
            if question.isClustered {
                deliverBehindPendingReplies(scratch.line, to: asker)
            } else {
                fanout.deliver(scratch.line, to: asker)
            }
        }
    }

    /// A departing connection: the questions it asked close (later answers get `+OK 0`), and it counts as
    /// gone in the questions put to it that it had not answered, so no one waits for it.
    func questionsLeft(by connection: ClientConnection) {
        // O(its open questions, at most max_asks).
        for number in connection.extras?.asks ?? [] {
            if let question = questions.byNumber[number] { closeQuestion(question) }
        }
        connection.extras?.asks = []
        if connection.extras?.remoteQuestionsPut.isEmpty == false { clusterQuestionsLeft(by: connection) }
        let put = connection.extras?.questionsPut ?? []
        connection.extras?.questionsPut = []
        for number in put {
            guard let question = questions.byNumber[number], question.receivers.settle(connection.id, as: .gone) else {
                continue
            }
            question.gone += 1
            if question.isComplete { closeQuestion(question) }
        }
    }

    /// Remembers that a question was put to `receiver`, pruning closed ones as the list doubles: O(1) amortised,
    /// and the list stays within twice the questions open on it.
    func notePut(_ number: UInt64, to receiver: ClientConnection) {
        let extras = receiver.madeExtras
        let count = extras.questionsPut.count
        if count >= 16 && count & (count - 1) == 0 {
            extras.questionsPut.removeAll { questions.byNumber[$0] == nil }
        }
        extras.questionsPut.append(number)
    }

    func refuseAsk(_ text: String, to asker: ClientConnection) {
        stats.limitRefusals += 1
        reply(ProtocolError(.limit, text).line, to: asker)
    }
}
