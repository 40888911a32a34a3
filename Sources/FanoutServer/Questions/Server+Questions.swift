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
        let subjectString = String(decoding: subject, as: UTF8.self)
        let receivers = questionReceivers(of: subjectString, asker: asker)
        if memoryBoundRefuses(adding: 256 + receivers.count * 24 + receivers.count * (payload.count + 64)) {
            return refuseAsk("the server is at max_memory=\(limits.maxMemory)", to: asker)
        }
        let number = questions.nextNumber()
        let id = questions.id(of: number)
        stats.questions += 1
        var push: [UInt8] = []
        Encoder.appendQuestion(subject: subject, id: id, payload: payload, to: &push)
        for receiver in receivers {
            fanout.deliver(push, to: receiver)
            notePut(number, to: receiver)
        }
        asker.send(Encoder.ok("\(id) \(receivers.count)"))
        let marks = BacklogMarks(limits)
        for receiver in receivers where receiver.socket != nil { fanout.checkBacklog(of: receiver, marks: marks) }
        guard !receivers.isEmpty else {
            asker.send(Encoder.done(id: id, asked: 0, answered: 0, gone: 0))
            return
        }
        let question = Question(number: number, id: id, asker: asker, askedIDs: receivers.map(\.id),
                                maxAnswers: maxAnswers)
        // Some receivers may have been dropped as slow consumers just now: they are gone, not silent.
        for receiver in receivers where receiver.socket == nil {
            question.pending[receiver.id] = nil
            question.gone += 1
        }
        questions.byNumber[number] = question
        questions.bytes += question.estimatedBytes
        asker.madeExtras.asks.append(number)
        if question.isComplete { return closeQuestion(question) }
        let deadline = LoopTimer(loop: loop) { [unowned self, unowned question] in
            self.stats.askTimeouts += 1
            self.closeQuestion(question)
        }
        deadline.schedule(after: .milliseconds(Int64(timeoutMilliseconds)))
        question.deadline = deadline
    }

    /// Why an ASK is refused with `-ERR limit`, or nil: its timeout, the asker's open questions, the server's.
    func askRefusal(timeoutMilliseconds: UInt64, asker: ClientConnection) -> String? {
        let limits = configuration.limits
        if timeoutMilliseconds > UInt64(limits.maxAskTimeoutMilliseconds) {
            return "timeout \(timeoutMilliseconds) ms exceeds max_ask_timeout=\(limits.maxAskTimeoutMilliseconds)"
        }
        if asker.openAsks >= limits.maxAsks { return "max_asks=\(limits.maxAsks) questions already open on this connection" }
        if questions.byNumber.count >= limits.maxOpenQuestions {
            return "max_open_questions=\(limits.maxOpenQuestions) open on the server"
        }
        return nil
    }

    /// The connections a question goes to: every live plain receiver and one member of each group, chosen as
    /// for a message, with the asker left out before any group chooses. Each at most once.
    func questionReceivers(of subject: String, asker: ClientConnection) -> [ClientConnection] {
        var receivers: [ClientConnection] = []
        let withholds = auth.anyUserWithholds
        index.forEachReceiver(of: subject) { connection in
            guard connection !== asker, connection.socket != nil else { return }
            if withholds && connection.permissions?.withholds(subject) == true { return }
            receivers.append(connection)
        }
        guard index.hasGroups else { return receivers }
        let mark = index.lastMark
        var groups: [(name: String, members: MulticastGroup<ClientConnection>)] = []
        index.forEachGroup(of: subject) { groups.append(($0, $1)) }
        groups.sort { $0.name < $1.name }
        var chosen: Set<ObjectIdentifier> = []
        fanout.forEachChosenMember(of: groups, excluding: asker) { member, _ in
            guard member.deliveryMark != mark || member === asker, member !== asker else { return }
            guard chosen.insert(ObjectIdentifier(member)).inserted else { return }
            if withholds && member.permissions?.withholds(subject) == true { return }
            receivers.append(member)
        }
        return receivers
    }

    /// `ANSWER <id> <payload>`: `+OK 1` when taken (and pushed to the asker), `+OK 0` when the question is
    /// closed, was not put to this connection, or was answered by it already.
    func answer(id: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from responder: ClientConnection) {
        if cluster != nil { return clusterAnswer(id: id, payload: payload, from: responder) }
        guard let number = questions.number(of: id), let question = questions.byNumber[number],
              question.pending[responder.id] == false else {
            responder.send(Encoder.ok("0"))
            return
        }
        question.pending[responder.id] = true
        question.answered += 1
        stats.answers += 1
        responder.send(Encoder.ok("1"))
        if let asker = question.asker, asker.socket != nil {
            var push: [UInt8] = []
            Encoder.appendAnswer(id: question.id, responder: String(responder.id), payload: payload, to: &push)
            fanout.deliver(push, to: asker)
            // An answer counts toward the asker's output limit, like a message.
            fanout.checkBacklog(of: asker, marks: BacklogMarks(configuration.limits))
        }
        if question.isComplete, questions.byNumber[number] != nil { closeQuestion(question) }
    }

    /// Closes a question once: the asker gets its `DONE` (after every `ANSWER` push, which went before it).
    /// `quietly`: no DONE (the ASK was answered with an error). O(max_asks) for the asker's list.
    func closeQuestion(_ question: Question, quietly: Bool = false) {
        guard questions.byNumber.removeValue(forKey: question.number) != nil else { return }
        questions.bytes -= question.estimatedBytes
        question.deadline?.cancel()
        question.deadline = nil
        if question.isClustered && !quietly { clusterQuestionClosed(question) }
        guard let asker = question.asker else { return }
        if let slot = asker.extras?.asks.firstIndex(of: question.number) { asker.extras?.asks.remove(at: slot) }
        guard asker.socket != nil, !quietly else { return }
        fanout.deliver(Array(Encoder.done(id: question.id, asked: question.asked, answered: question.answered,
                                   gone: question.gone).utf8), to: asker)
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
            guard let question = questions.byNumber[number], question.pending[connection.id] == false else { continue }
            question.pending[connection.id] = nil
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
