import FanoutEventLoop
@testable import FanoutServer
import Glibc
import Logging
import Testing

/// The desk keeps what a question needs per connection by id: these check that a departure, of a receiver or
/// of an asker, settles its questions and leaves no entry behind, so that memory does not grow with the
/// connections that came and went. A `Server` built in the test, with connections over socket pairs; the loop
/// never runs.
@Suite("Question desk")
struct QuestionDeskTests {
    private let server: Server
    private var peers: [Int32] = []

    init() throws {
        server = try Server(configuration: ServerConfiguration(),
                            logger: Logger(label: "question-desk-test") { _ in SwiftLogNoOpLogHandler() })
    }

    private mutating func connect() throws -> ClientConnection {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        peers.append(fds[1])
        let socket = try BufferedSocket(loop: server.loop, fd: fds[0])
        return server.admit(socket: socket, peer: try SocketAddress(parsing: "127.0.0.1:9"), host: "127.0.0.1",
                            transport: .tcp)
    }

    private func run(_ line: String, from connection: ClientConnection) {
        var line = line
        line.withUTF8 { _ = server.execute(UnsafeRawBufferPointer($0), from: connection) }
    }

    private func close() {
        for fd in peers { Glibc.close(fd) }
    }

    /// A receiver that leaves without answering counts as gone: the question it was the last one waited for
    /// closes, and the desk holds nothing more for either connection.
    @Test mutating func aReceiverThatLeavesClosesTheQuestionAndLeavesNothingBehind() throws {
        defer { close() }
        let asker = try connect()
        let receiver = try connect()
        run("SUB q.x", from: receiver)
        run("ASK q.x 5000 0 hello", from: asker)
        let desk = server.questions
        #expect(desk.byNumber.count == 1)
        #expect(desk.openAsks(of: asker) == 1)
        #expect(desk.putByConnection[receiver.id]?.count == 1)
        server.disconnect(receiver, reason: .quit)
        #expect(desk.byNumber.isEmpty)
        #expect(desk.openAsks(of: asker) == 0)
        #expect(desk.putByConnection.isEmpty)
        #expect(desk.bytes == 0)
    }

    /// An asker that leaves closes its open questions, and the list of questions put to a receiver goes with
    /// the receiver.
    @Test mutating func anAskerThatLeavesClosesItsQuestions() throws {
        defer { close() }
        let asker = try connect()
        let receiver = try connect()
        run("SUB q.y", from: receiver)
        for _ in 0..<3 { run("ASK q.y 5000 0 hello", from: asker) }
        let desk = server.questions
        #expect(desk.byNumber.count == 3)
        #expect(desk.openAsks(of: asker) == 3)
        server.disconnect(asker, reason: .quit)
        #expect(desk.byNumber.isEmpty)
        #expect(desk.openAsks(of: asker) == 0)
        #expect(desk.bytes == 0)
        server.disconnect(receiver, reason: .quit)
        #expect(desk.putByConnection.isEmpty)
    }
}
