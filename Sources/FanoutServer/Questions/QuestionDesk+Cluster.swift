import FanoutEventLoop
import FanoutMulticast
import FanoutProtocol
import FanoutRedisEngine

/// Questions on several nodes (1.2): the asking node puts the question to every node through Redis
/// (`RedisEngine+Questions.swift`); each node asks its own receivers (one member per group cluster-wide,
/// by claim) and tells the asking node how many it asked, each answer, and each asked connection that
/// vanished unanswered. The asking node closes the question as a standalone server does, once every node it
/// reached has reported: `DONE`'s counts add up across nodes.
extension QuestionDesk {
    /// ASK on a clustered node: the reply (`+OK <id> <nodes>`) takes its place among the connection's pending
    /// replies and is filled when Redis has put the question to the nodes.
    func clusterAsk(subject: UnsafeRawBufferPointer, timeoutMilliseconds: UInt64, maxAnswers: UInt64,
                    payload: UnsafeRawBufferPointer, from asker: ClientConnection, node: ClusterNode) {
        if let refusal = askRefusal(timeoutMilliseconds: timeoutMilliseconds, asker: asker) {
            refuseAsk(refusal, to: asker)
            return
        }
        let number = numbering.nextNumber()
        let questionID = numbering.id(of: number)
        let id = questionID.string
        host.stats.questions += 1
        let question = Question(number: number, id: questionID, asker: asker, receivers: AskedConnections(),
                                maxAnswers: maxAnswers, isClustered: true)
        track(question, askedBy: asker)
        armDeadline(of: question, after: timeoutMilliseconds)
        let (pending, ticket) = host.replies.reserveSlot(for: asker)
        node.engine.ask(id: id, askerConnection: asker.id, timeoutMilliseconds: timeoutMilliseconds,
                        subject: String(decoding: subject, as: UTF8.self),
                        payload: payload) { [weak self, weak pending] result in
            guard let self, let pending, let connection = pending.connection, connection.socket != nil else { return }
            switch result {
            case .success(let nodes):
                question.nodesReached = Int(nodes)
                self.host.replies.fillReply(Array(Encoder.ok("\(id) \(nodes)").utf8), ticket: ticket, pending,
                                            of: connection)
                if question.isComplete { self.close(question) }
            case .failure(let failure):
                self.host.stats.unavailable += 1
                self.host.replies.fillReply(Array(ProtocolError(.unavailable, failure.description).line.utf8),
                                            ticket: ticket, pending, of: connection)
                // Nobody was asked: the question closes quietly, with no DONE after an error.
                self.close(question, quietly: true)
            }
        }
    }

    /// What Redis brought about questions.
    func clusterQuestionEvent(_ event: RedisEngine.QuestionEvent) {
        guard let node = host.cluster else { return }
        switch event {
        case .asked(let id, let origin, let askerConnection, let timeout, let subject, let payload):
            putRemoteQuestion(id: id, origin: origin,
                              askerConnection: origin == node.engine.nodeID ? askerConnection : nil,
                              timeoutMilliseconds: timeout, subject: subject, payload: payload, node: node)
        case .report(let id, let asked):
            guard let question = openQuestion(id) else { return }
            question.report(asked: asked)
            if question.isComplete { close(question) }
        case .answer(let id, let responder, let payload):
            guard let question = openQuestion(id) else { return }
            question.answered += 1
            host.stats.answers += 1
            if question.withAsker({ $0.socket != nil }) {
                var push: [UInt8] = []
                payload.withUnsafeBytes { Encoder.appendAnswer(id: id, responder: responder, payload: $0, to: &push) }
                // Behind the ASK's reply, should Redis's answer to its PUBLISH (or to a PUB before it) still be due.
                question.withAsker { host.replies.deliverBehindPendingReplies(push, to: $0) }
                checkBacklog(of: question.askerReference, marks: BacklogMarks(host.configuration.limits))
            }
            if question.isComplete { close(question) }
        case .gone(let id, let count):
            guard let question = openQuestion(id) else { return }
            question.gone += count
            if question.isComplete { close(question) }
        case .closed(let id):
            remote.removeValue(forKey: id)?.expiry?.cancel()
        }
    }

    /// The asking node closed a question: when some asked connection may still be silent, every node is told
    /// to forget it, so that nothing waits for its timeout and a late answer gets `+OK 0` there too. A question
    /// that every node reported on and every asked connection answered or left was forgotten by each node on
    /// its own, and costs no word more.
    func clusterQuestionClosed(_ question: Question) {
        guard let node = host.cluster else { return }
        let allReported = question.nodesReached.map { question.reports >= $0 } ?? false
        if allReported && question.answered + question.gone >= question.asked { return }
        node.engine.closeQuestion(id: question.id.string)
    }

    /// Forgets a question put to this node's connections once none of them is waited for.
    private func forgetIfSettled(_ id: String, _ remote: RemoteQuestion) {
        guard remote.isSettled, self.remote[id] === remote else { return }
        remote.expiry?.cancel()
        self.remote[id] = nil
    }

    private func openQuestion(_ id: String) -> Question? {
        var id = id
        return id.withUTF8 { bytes in numbering.number(of: UnsafeRawBufferPointer(bytes)) }.flatMap { byNumber[$0] }
    }

    /// Asks this node's receivers of a question put through the cluster: its plain receivers at once, and
    /// for each group with a member here, one member if this node's claim for the group wins. Then tells the
    /// asking node how many it asked.
    private func putRemoteQuestion(id: String, origin: String, askerConnection: UInt64?, timeoutMilliseconds: UInt64,
                                   subject: String, payload: [UInt8], node: ClusterNode) {
        let asker = askerConnection.flatMap { host.connections[$0] }
        let remote = RemoteQuestion(origin: origin)
        var push: [UInt8] = []
        var subjectBytes = subject
        subjectBytes.withUTF8 { subjectBuffer in
            payload.withUnsafeBytes {
                Encoder.appendQuestion(subject: UnsafeRawBufferPointer(subjectBuffer), id: id, payload: $0, to: &push)
            }
        }
        var asked = 0
        let withholds = host.auth.anyUserWithholds
        let fanout = host.fanout
        func put(to receiver: ClientConnection) {
            guard receiver.socket != nil, receiver.transport.canAnswer, remote.pending[receiver.id] == nil else {
                return
            }
            if withholds && receiver.permissions?.withholds(subject) == true { return }
            remote.pending[receiver.id] = false
            // Pruned of expired and answered questions as it doubles: O(1) amortised, bounded by what is open.
            let count = remotePutByConnection[receiver.id]?.count ?? 0
            if count >= 16 && count & (count - 1) == 0 {
                remotePutByConnection[receiver.id]?.removeAll { self.remote[$0]?.pending[receiver.id] != false }
            }
            remotePutByConnection[receiver.id, default: []].append(id)
            fanout.deliver(push, to: receiver)
            remote.silent += 1
            asked += 1
        }
        let index = host.index
        index.forEachReceiver(of: subject) { connection in
            if connection !== asker { put(to: connection) }
        }
        var groupNames: [String] = []
        index.forEachGroup(of: subject) { name, _ in if !groupNames.contains(name) { groupNames.append(name) } }
        self.remote[id] = remote
        let expiry = LoopTimer(loop: host.loop) { [unowned self] in self.remote[id] = nil }
        expiry.schedule(after: .milliseconds(Int64(timeoutMilliseconds) + 1000))
        remote.expiry = expiry
        remote.claimsLeft = groupNames.count
        // Read when called: `asked` counts the group members put to meanwhile.
        let report = { node.engine.tellOrigin(origin, Array("R \(id) \(asked)".utf8)) }
        guard remote.claimsLeft > 0 else {
            report()
            return forgetIfSettled(id, remote)
        }
        for name in groupNames {
            node.engine.claimQuestion(id: id, group: name,
                                      timeoutMilliseconds: timeoutMilliseconds) { [weak self] won in
                remote.claimsLeft -= 1
                defer {
                    if remote.claimsLeft == 0 {
                        report()
                        self?.forgetIfSettled(id, remote)
                    }
                }
                // A question closed meanwhile is put to nobody more.
                guard won, let self, self.host.cluster === node, self.remote[id] === remote else { return }
                var groups: [(name: String, members: MulticastGroup<ClientConnection>)] = []
                self.host.index.forEachGroup(of: subject) { groupName, members in
                    if groupName == name { groups.append((groupName, members)) }
                }
                self.host.fanout.forEachChosenMember(of: groups, excluding: asker, subject: subject) { member, _ in
                    put(to: member)
                }
            }
        }
    }

    /// ANSWER on a clustered node: taken when the question was put to this connection through the cluster
    /// and it has not answered; then sent to the asking node.
    func clusterAnswer(id: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, from responder: ClientConnection) {
        let key = String(decoding: id, as: UTF8.self)
        guard let node = host.cluster, let remote = self.remote[key], remote.pending[responder.id] == false else {
            responder.send(Encoder.ok("0"))
            return
        }
        remote.pending[responder.id] = true
        remote.silent -= 1
        responder.send(Encoder.ok("1"))
        var message = Array("A \(key) \(node.engine.nodeID)/\(responder.id) ".utf8)
        message.append(contentsOf: payload)
        node.engine.tellOrigin(remote.origin, message)
        forgetIfSettled(key, remote)
    }

    /// A departing connection on a clustered node: each question put to it through the cluster that it had
    /// not answered is told to its asking node as one gone.
    func clusterQuestionsLeft(by connection: ClientConnection) {
        let ids = remotePutByConnection.removeValue(forKey: connection.id) ?? []
        guard let node = host.cluster else { return }
        for id in ids {
            guard let remote = self.remote[id], remote.pending[connection.id] == false else { continue }
            remote.pending[connection.id] = nil
            remote.silent -= 1
            node.engine.tellOrigin(remote.origin, Array("G \(id) 1".utf8))
            forgetIfSettled(id, remote)
        }
    }
}
