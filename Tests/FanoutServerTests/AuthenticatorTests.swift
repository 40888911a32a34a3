@testable import FanoutServer
import FanoutEventLoop
import FanoutProtocol
import Glibc
import Logging
import Testing

/// The authenticator keeps what it knows of a connection by the connection's id, from its arrival to its
/// departure, in a server built in the test (not started: no listener, nothing waits on a timer).
@Suite("Authenticator")
struct AuthenticatorTests {
    /// A server whose one user, alice, may publish under `news.` only.
    private static func server(users: Bool = true) throws -> Server {
        var configuration = ServerConfiguration()
        if users {
            configuration.auth.users = [User(name: "alice", tokenHash: TokenHash.make(token: "secret"),
                                             permissions: Permissions(publish: ["news.>"], subscribe: [">"]))]
        }
        return try Server(configuration: configuration, logger: Logger(label: "test"))
    }

    /// A connection admitted as an accepted one is, over one end of a socket pair (the other is closed).
    private static func connect(_ server: Server) throws -> ClientConnection {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        close(fds[1])
        let socket = try BufferedSocket(loop: server.loop, fd: fds[0])
        return server.admit(socket: socket, peer: try SocketAddress(parsing: "127.0.0.1:5000"), host: "127.0.0.1",
                            transport: .tcp)
    }

    @Test func aFailedAuthIsCountedAndAPassedOneSettlesTheSession() throws {
        let server = try Self.server()
        defer { server.tearDown() }
        let connection = try Self.connect(server)
        let auth = server.auth
        #expect(auth.unauthenticated == 1)
        #expect(auth.sessions[connection.id]?.deadline != nil, "auth_timeout runs from the arrival")
        auth.authenticate(connection, token: "wrong")
        #expect(auth.sessions[connection.id]?.failures == 1)
        #expect(auth.sessions[connection.id]?.retryDelay != nil, "the next command waits")
        #expect(connection.grant == nil)
        auth.authenticate(connection, token: "secret")
        #expect(connection.permissions == server.configuration.auth.users[0].permissions)
        #expect(auth.userName(of: connection) == "alice")
        #expect(auth.sessions[connection.id]?.failures == 0)
        #expect(auth.sessions[connection.id]?.deadline == nil, "an authenticated connection has no deadline")
        #expect(auth.unauthenticated == 0)
        server.disconnect(connection, reason: .quit)
        #expect(auth.sessions.isEmpty, "a departure takes its session")
        #expect(auth.unauthenticated == 0, "an authenticated departure leaves the count alone")
    }

    @Test func anUnauthenticatedDepartureFreesItsPlace() throws {
        let server = try Self.server()
        defer { server.tearDown() }
        let connections = try (0..<3).map { _ in try Self.connect(server) }
        #expect(server.auth.unauthenticated == 3)
        server.disconnect(connections[1], reason: .quit)
        #expect(server.auth.unauthenticated == 2)
        #expect(server.auth.sessions[connections[1].id] == nil)
        #expect(server.auth.sessions.count == 2)
    }

    @Test func withoutUsersAConnectionCarriesNothingForAuthentication() throws {
        let server = try Self.server(users: false)
        defer { server.tearDown() }
        let connection = try Self.connect(server)
        #expect(connection.grant === SharedPermissions.unrestricted)
        #expect(server.auth.sessions.isEmpty)
        #expect(connection.extras == nil)
        #expect(server.auth.unauthenticated == 0)
    }

    @Test func aCommandIsRefusedUntilAuthAndThenByTheUsersPermissions() throws {
        let server = try Self.server()
        defer { server.tearDown() }
        let connection = try Self.connect(server)
        let auth = server.auth
        func refusal(publishingTo subject: String) -> ProtocolError? {
            Array(subject.utf8).withUnsafeBytes { subject in
                Array("x".utf8).withUnsafeBytes { payload in
                    auth.refusal(of: .pub(subject: subject, payload: payload), by: connection)
                }
            }
        }
        #expect(refusal(publishingTo: "news.today")?.code == .authRequired)
        #expect(auth.refusal(of: .ping(UnsafeRawBufferPointer(start: nil, count: 0)), by: connection) == nil)
        auth.authenticate(connection, token: "secret")
        #expect(refusal(publishingTo: "news.today") == nil)
        #expect(connection.extras?.lastPermittedSubject == Array("news.today".utf8), "kept for the next PUB")
        #expect(refusal(publishingTo: "sport.today")?.code == .denied)
    }

    @Test func aReloadThatRemovesTheUserLeavesItsConnectionsNothing() throws {
        let server = try Self.server()
        defer { server.tearDown() }
        let connection = try Self.connect(server)
        server.auth.authenticate(connection, token: "secret")
        var fresh = server.configuration
        fresh.auth.users[0].name = "bob"
        server.lifecycle.apply(fresh)
        #expect(connection.grant === SharedPermissions.nothing)
        #expect(server.auth.userName(of: connection) == "alice", "still who it authenticated as")
        #expect(server.auth.unauthenticated == 0)
    }
}
