import FanoutEngine
import FanoutEventLoop
import FanoutProtocol
import FanoutSubjects

/// One connected client: its socket, its line framer, and the patterns it subscribes to. It reads and frames
/// its own input and hands each complete line to the server, which executes it.
///
/// Ownership: the server's connection table is the only strong owner. Subject sets hold it weakly, and a
/// publish run refers to it unretained (see `PublishRun.Receiver`). Dropping it from the table therefore
/// removes it from every subscriber set, and its deinit frees its socket.
final class ClientConnection: Subscriber, BufferedSocketDelegate {
    // Declared in this order so that the object takes 136 bytes, glibc's 144-byte chunks (a server holds one
    // per client, idle or not): the framer's 21 bytes and the three one-byte fields after it fill three words,
    // and the read gate's 4 bytes go in the padding after the subscriptions' 17. Fields that few connections
    // use live in `extras`.
    let id: UInt64
    /// The peer's address (`peer` formats it).
    let peerAddress: PeerAddress
    /// Nil once closed: the socket is freed, or lingering on the loop to flush a last line.
    var socket: BufferedSocket?
    var framer: LineFramer
    /// How the client reaches the server, shown in CLIENTS; whether it writes lines as they are is the publish
    /// path's fast-path check.
    var transport = Transport.tcp
    /// Whether the memory bound watches its backlog: checked per delivery above the mark, where a set
    /// insertion each time cost a third of a delivery with 5,000 subscribers.
    var isBacklogWatched = false
    /// A group found it busy: it is told its groups when its output drains under the mark.
    var waitsForGroupDrain = false
    /// The subscriber → patterns direction of the index.
    var subscriptions = SubscriptionSet()
    /// Whether it reads commands now, and what stops it (`stopReading`, `resumeReading`).
    var gate = ReadGate()
    var deliveryMark: UInt64 = 0
    /// What this connection may do, shared with the other connections of its user; nil until it
    /// authenticates on a server that requires it.
    var grant: SharedPermissions?
    /// What few connections use (users, timers, groups, questions, replays ...), made on first write through
    /// `madeExtras`: an idle connection carries this one nil reference instead of all those fields.
    private(set) var extras: ConnectionExtras?
    /// When it connected, in nanoseconds after the server started: 8 bytes where an instant takes 16.
    private let connectedAfterNanoseconds: Int64
    /// Unretained: its owner is the process, and the server drops every connection before it goes (`Unretained`'s
    /// rules). Never touched from deinit. A checked reference would cost a strong retain and release per access,
    /// and a connection reads it several times per command on the publish path.
    private let serverReference: Unretained<Server>
    private let census: ObjectCensus

    init(id: UInt64, peer: SocketAddress, socket: BufferedSocket, maxLine: Int, server: Server, census: ObjectCensus) {
        self.id = id
        self.peerAddress = PeerAddress(peer)
        self.socket = socket
        self.framer = LineFramer(maxLine: maxLine)
        let elapsed = (ContinuousClock.now - server.lifecycle.startedAt).components
        self.connectedAfterNanoseconds = elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000
        self.serverReference = Unretained(server)
        self.census = census
        census.born()
    }

    deinit {
        census.died()
    }

    /// The server that accepted it: read as `unowned(unsafe)` would be (see `serverReference`).
    var server: Server {
        @inline(__always) get { serverReference.retained }
    }

    var connectedAt: ContinuousClock.Instant { server.lifecycle.startedAt + .nanoseconds(connectedAfterNanoseconds) }

    /// What this connection may do; nil until it authenticates on a server that requires it.
    var permissions: Permissions? { grant?.permissions }

    /// The peer's host, for the per-address connection limit: the peer without its port (or "unix").
    var peerHost: String {
        if peer.hasPrefix("unix:") { return "unix" }
        if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") {
            return String(peer[peer.index(after: peer.startIndex)..<close])
        }
        return peer.lastIndex(of: ":").map { String(peer[..<$0]) } ?? peer
    }

    // MARK: Occasional state, in `extras`

    /// The extras to write to, made on first use. Read them through `extras?` and clear them through it too
    /// (`extras?.replayJob = nil`), so that reading or clearing never makes them for an idle connection.
    var madeExtras: ConnectionExtras {
        if let extras { return extras }
        let made = ConnectionExtras()
        extras = made
        return made
    }

    /// Whether this connection's backlog pauses some publisher's reading (`Fanout.heldPublishers`).
    var holdsPublishers: Bool { server.fanout.holdsPublishers(self) }

    /// Unsent output bytes, those waiting behind a replay or for the disk (`history_fsync: always`) included.
    var pendingBytes: Int {
        guard let extras else { return socket?.outputCount ?? 0 }
        return (socket?.outputCount ?? 0) + (extras.replayJob?.waiting.count ?? 0) + (extras.heldOutput?.bytes ?? 0)
            + (extras.adapter?.heldBytes ?? 0)
    }

    func send(_ text: String) {
        countBytesOut(text.utf8.count)
        write(text)
    }

    func send(_ bytes: [UInt8]) {
        countBytesOut(bytes.count)
        write(bytes)
    }

    /// Adds to the server's count of bytes out without retaining the server: once anything holds it weakly
    /// (a RESUME's callback does), its retains take the runtime's slow path, and one per reply or push cost
    /// 150 instructions.
    @inline(__always)
    private func countBytesOut(_ count: Int) {
        serverReference.with { $0.stats.bytesOut &+= UInt64(count) }
    }

    /// Queues protocol lines as they are (the line protocol's transports) or as the adapter frames them.
    func write(_ text: String) {
        if let held = extras?.heldOutput { return held.append(Array(text.utf8)) }
        guard transport.writesLines else {
            return Array(text.utf8).withUnsafeBytes { extras?.adapter?.write($0, to: self) }
        }
        socket?.write(text)
    }

    func write(_ bytes: [UInt8]) {
        if let held = extras?.heldOutput { return held.append(bytes) }
        guard transport.writesLines else { return bytes.withUnsafeBytes { extras?.adapter?.write($0, to: self) } }
        socket?.write(bytes)
    }

    // MARK: BufferedSocketDelegate

    /// The TLS handshake finished (libevent reports it as "connected" on the accepting side too).
    func socketDidConnect(_ socket: BufferedSocket) {
        server.auth.handshakeFinished(self)
    }

    func socketDidRead(_ socket: BufferedSocket) {
        readCommands()
    }

    /// An unfinished line shorter than this is not counted toward max_memory: it is the usual tail of a read,
    /// and counting it would cost every pipelining publisher a hash update per read.
    static let countedLineBytes = 4096

    /// Executes every complete line of input, until it is consumed, the connection stops reading (paused or
    /// closed), or its unsent output reaches the pause mark. Then tells the dispatcher the read is over. One loop for
    /// every transport: an adapter decodes its framing into lines, and its lines go through `goesOn` too.
    ///
    /// A turn ends after `Server.turn` of work too (the clock is read every 64 lines): the rest of the input
    /// waits for a later loop pass, so that one client's flood of commands never keeps the others waiting long.
    func readCommands() {
        guard gate.isOpen, let socket else { return }
        var turn = ReadTurn(pauseBytes: server.configuration.limits.readPauseBytes)
        let adapter = transport.writesLines ? nil : extras?.adapter
        // Taken once for the read: each line's command uses them without a retain and a release of its own.
        let server = self.server
        let engine = server.engine
        // Take all the pipelined input at once (up to a cap), so that one callback forms long publish runs.
        socket.readAvailable()
        // Input an adapter still holds (the rest of a WebSocket message) is older than the socket's: it goes first.
        let heldRan = adapter?.consumeHeld(for: self, turn: &turn) ?? true
        socket.readInput { chunk in
            guard heldRan else { return 0 }
            server.stats.bytesIn += UInt64(chunk.count)
            if let adapter { return adapter.consume(chunk, for: self, turn: &turn) }
            return framer.feed(chunk) { event in
                switch event {
                case .line(let line):
                    // A BPUB header: its bytes are read (or dropped) before anything else.
                    let next = server.execute(line, from: self, engine: engine)
                    if case .goOn = next {} else { return next }
                case .tooLong: server.lineTooLong(from: self)
                case .payload(let payload): server.publishBinary(payload, from: self)
                case .badPayloadEnd: server.binaryFramingLost(self)
                }
                return goesOn(after: &turn, countingLine: true, socket: socket) ? .goOn : .stop
            }
        }
        // An unfinished BPUB's gathered bytes count toward max_memory (a refused one's are dropped, not held), and
        // so does an unfinished line once it is long enough to matter (max_line each, times every connection).
        if adapter == nil {
            let unfinished = framer.bufferedCount
            let counted = unfinished >= Self.countedLineBytes || extras?.binarySubject != nil
            if counted || server.memory.holdsPayload(of: self) {
                server.memory.noteReceived(counted ? unfinished : 0, by: self)
            }
        }
        server.readEnded()
        adapter?.finishRead(of: self)
        if turn.isOver { server.fanout.continueLater(self) }
    }

    /// After a line (or a message of lines): whether this read goes on. It stops when the gate closed, when
    /// the connection's own output reached the pause mark, or when its turn is over.
    /// `socket` is the connection's, passed in so that the check per line does not load the property again.
    @inline(__always)
    func goesOn(after turn: inout ReadTurn, countingLine: Bool, socket: BufferedSocket) -> Bool {
        guard gate.isOpen else { return false }
        if socket.outputCount >= turn.pauseBytes {
            pauseReading(pauseBytes: turn.pauseBytes)
            return false
        }
        if countingLine { turn.lines &+= 1 }
        if turn.lines & 63 == 0 && ContinuousClock.now - turn.started > Server.turn {
            turn.isOver = true
            return false
        }
        return true
    }

    func socketDidDrain(_ socket: BufferedSocket) {
        if let since = extras?.pendingSince, socket.outputCount == 0 {
            extras?.pendingSince = nil
            server.metrics?.publishToWrite.record(duration: ContinuousClock.now - since)
        }
        if let job = extras?.replayJob, job.awaitingDrain, socket.outputCount < Replays.aheadBytes {
            server.replays.drained(job)
        }
        if waitsForGroupDrain && pendingBytes <= server.configuration.limits.groupBusyBytes {
            server.fanout.groupMemberDrained(self)
        }
        if holdsPublishers && socket.outputCount <= server.configuration.limits.backpressureBytes / 2 {
            server.fanout.releasePublishers(heldBy: self)
        }
        guard gate.stops.contains(.outputFull) else { return }
        socket.setWriteLowWatermark(holdsPublishers ? server.configuration.limits.backpressureBytes / 2 : 0)
        resumeReading(.outputFull)
    }

    func socket(_ socket: BufferedSocket, didEnd reason: SocketEnd) {
        switch reason {
        case .eof:
            if server.replies.keepsForReplies(self) { return }
            server.departures.peerLeft(self, reason: .eof)
        case .error, .tls:
            server.departures.peerLeft(self, reason: .socketError(reason.description))
        case .readTimeout:
            let setting = extras?.adapter?.idleSetting ?? server.idleSetting(subscribed: !subscriptions.isEmpty)
            server.disconnect(self, reason: .idleTimeout(setting: setting))
        case .writeTimeout:
            server.disconnect(self, reason: .slowConsumer("no output drained for write_timeout"))
        }
    }

    /// Stops reading commands until the output drains to half of `pauseBytes`.
    func pauseReading(pauseBytes: Int) {
        guard stopReading(.outputFull), let socket else { return }
        socket.setWriteLowWatermark(pauseBytes / 2)
        socket.reportsDirectDrains = true
    }

    // MARK: The read gate

    /// Stops reading for `stop` until it is lifted; false when it already stopped for it, or is closed.
    @discardableResult
    func stopReading(_ stop: ReadGate.Stops) -> Bool {
        let wasOpen = gate.isOpen
        guard gate.add(stop) else { return false }
        if wasOpen { socket?.disableReading() }
        return true
    }

    /// Lifts `stop`; once nothing stops the gate, reads what is buffered (`readAgain`).
    func resumeReading(_ stop: ReadGate.Stops) {
        guard gate.lift(stop) else { return }
        readAgain()
    }

    /// A subscriber's backlog holds this publisher back (backpressure); true when that stops its reading.
    func holdBack() -> Bool {
        let wasOpen = gate.isOpen
        gate.hold()
        guard wasOpen, !gate.isOpen else { return false }
        socket?.disableReading()
        return true
    }

    /// A subscriber let go of this publisher; true when nothing stops its reading any more: the server then
    /// calls `readAgain` on the next loop pass (never from inside a fan-out that may be this publisher's).
    func releaseHold() -> Bool {
        gate.release() && gate.isOpen
    }

    /// The one way reading resumes: when the gate is open, the socket reads again and the input that arrived
    /// before the stop, already buffered (it will not trigger a read callback), is read now.
    func readAgain() {
        guard gate.isOpen, let socket else { return }
        socket.enableReading()
        readCommands()
    }
}

