import FanoutEngine
import FanoutEventLoop
import FanoutMulticast
import FanoutProtocol

/// Questions (1.2): `ASK` puts a question to the receivers of a subject, chosen as for a message (every plain
/// subscriber, one member per group) but never the asker; `ANSWER` sends an answer back; the asker hears
/// `DONE` once when the question closes: all answered or vanished, the cap of answers, or the timeout.
extension QuestionDesk {
    /// ASK: on several nodes through the cluster (`clusterAsk`), else to this server's receivers.
    func ask(subject: UnsafeRawBufferPointer, timeoutMilliseconds: UInt64, maxAnswers: UInt64,
             payload: UnsafeRawBufferPointer, from asker: ClientConnection) {
        if let node = host.cluster {
            return clusterAsk(subject: subject, timeoutMilliseconds: timeoutMilliseconds, maxAnswers: maxAnswers,
                              payload: payload, from: asker, node: node)
        }
        let limits = host.configuration.limits
        if let refusal = askRefusal(timeoutMilliseconds: timeoutMilliseconds, asker: asker) {
            return refuseAsk(refusal, to: asker)
        }
        scratch.reset()
        gatherQuestionReceivers(of: String(decoding: subject, as: UTF8.self), asker: asker, into: &scratch.receivers)
        let receivers = scratch.receivers
        if host.memory.refuses(adding: 256 + receivers.count * 24 + receivers.count * (payload.count + 64)) {
            return refuseAsk("the server is at max_memory=\(limits.maxMemory)", to: asker)
        }
        let number = numbering.nextNumber()
        let id = numbering.id(of: number)
        host.stats.questions += 1
        id.withBytes { Encoder.appendQuestion(subject: subject, id: $0, payload: payload, to: &scratch.line) }
        // Queuing never drops a connection: each stays in the table, which owns it, until the checks below
        // (`isCheckingReceivers`).
        let fanout = host.fanout
        for receiver in receivers {
            receiver.with {
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
                                    receivers[$0].with { $0.id }
                                },
                                maxAnswers: maxAnswers)
        track(question, askedBy: asker)
        // A receiver dropped as a slow consumer now is gone, not silent: its departure marks it
        // (`connectionLeft`), and may close the question, its DONE after the reply.
        let marks = BacklogMarks(limits)
        isCheckingReceivers = true
        for receiver in receivers { checkBacklog(of: receiver, marks: marks) }
        isCheckingReceivers = false
        if !fanout.run.isOpen && !fanout.retired.isEmpty { fanout.retired.removeAll() }
        guard !question.isClosed else { return }
        armDeadline(of: question, after: timeoutMilliseconds)
    }

    /// `Fanout.checkBacklog(of:marks:)` for a connection held unretained, which the connection table owns until
    /// then: past the watch mark, where the check may drop it, a strong reference keeps it alive through its
    /// departure.
    func checkBacklog(of connection: Unretained<ClientConnection>, marks: BacklogMarks) {
        let pending = connection.with { $0.socket != nil ? $0.pendingBytes : 0 }
        guard pending > marks.watchAbove else { return }
        let held = connection.retained
        host.fanout.applyBacklogMarks(marks, to: held, pending: pending)
    }

    /// Why an ASK is refused with `-ERR limit`, or nil: its timeout, the asker's open questions, the server's.
    func askRefusal(timeoutMilliseconds: UInt64, asker: ClientConnection) -> String? {
        let limits = host.configuration.limits
        if timeoutMilliseconds > UInt64(limits.maxAskTimeoutMilliseconds) {
            return "timeout \(timeoutMilliseconds) ms exceeds max_ask_timeout=\(limits.maxAskTimeoutMilliseconds)"
        }
        let open = openAsks(of: asker)
        if open >= limits.maxAsks { return "max_asks=\(limits.maxAsks) questions already open on this connection" }
        let free = limits.maxOpenQuestions - byNumber.count
        if free <= 0 { return "max_open_questions=\(limits.maxOpenQuestions) open on the server" }
        // The fair share: no connection holds more open questions than the pool has left free, so one alone
        // reaches half of it (max_asks is held to that), and n connections that flood stop at
        // max_open_questions / (n + 1) each, leaving as much free for everyone else. O(1) per ASK.
        if open >= free {
            return "this connection holds \(open) open questions, as many as max_open_questions="
                + "\(limits.maxOpenQuestions) has left free"
        }
        // The same share for its user, so that one user's many connections, taking turns each to half of what
        // is left, cannot together take the pool: a user's stop at half of it too. Connections without a user
        // are told apart only by connection (behind a proxy they share one address).
        if let user = host.auth.userName(of: asker), let held = openByOwner[user], held >= free {
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
                                 into receivers: inout [Unretained<ClientConnection>]) {
        let index = host.index
        let withholds = host.auth.anyUserWithholds
        index.forEachReceiver(of: subject) { connection in
            guard connection !== asker, connection.socket != nil, connection.transport.canAnswer else { return }
            if withholds && connection.permissions?.withholds(subject) == true { return }
            receivers.append(Unretained(connection))
        }
        guard index.hasGroups else { return }
        let mark = index.lastMark
        var groups: [(name: String, members: MulticastGroup<ClientConnection>)] = []
        index.forEachGroup(of: subject) { groups.append(($0, $1)) }
        groups.sort { $0.name < $1.name }
        var chosen: Set<ObjectIdentifier> = []
        host.fanout.forEachChosenMember(of: groups, excluding: asker, subject: subject) { member, _ in
            guard member.deliveryMark != mark || member === asker, member !== asker else { return }
            guard chosen.insert(ObjectIdentifier(member)).inserted, member.transport.canAnswer else { return }
            receivers.append(Unretained(member))
        }
    }

    /// `ANSWER <id> <payload>`: `+OK 1` when taken (and pushed to the asker), `+OK 0` when the question is
    /// closed, was not put to this connection, or was answered by it already.
    func answer(id: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from responder: ClientConnection) {
        if host.cluster != nil { return clusterAnswer(id: id, payload: payload, from: responder) }
        guard let number = numbering.number(of: id), let question = byNumber[number],
              question.receivers.settle(responder.id, as: .answered) else {
            responder.send(Encoder.answerNotTaken)
            return
        }
        question.answered += 1
        host.stats.answers += 1
        responder.send(Encoder.answerTaken)
        if question.withAsker({ $0.socket != nil }) {
            scratch.resetLine()
            // The id as handed out: the responder's may have written the number with leading zeros.
            question.id.withBytes {
                Encoder.appendAnswer(id: $0, responder: responder.id, payload: payload, to: &scratch.line)
            }
            question.withAsker { host.fanout.deliver(scratch.line, to: $0) }
            // An answer counts toward the asker's output limit, like a message.
            checkBacklog(of: question.askerReference, marks: BacklogMarks(host.configuration.limits))
        }
        if question.isComplete, !question.isClosed { close(question) }
    }

    func refuseAsk(_ text: String, to asker: ClientConnection) {
        host.stats.limitRefusals += 1
        host.replies.reply(ProtocolError(.limit, text).line, to: asker)
    }
}
