import FanoutEventLoop
@testable import FanoutServer
import Glibc
import Testing

extension InProcess {
    /// The harness itself: a server built in the test, peers through its accept path, and a teardown that leaves
    /// nothing open.
    @Suite("In-process harness", .timeLimit(.minutes(1)))
    struct HarnessTests {
        @Test func aPeerIsGreetedAndAnswered() throws {
            let harness = try ServerHarness()
            let peer = try harness.connect()
            #expect(peer.id != 0 && harness.isConnected(peer))
            #expect(try harness.command("PING hi", on: peer) == "+PONG hi")
            #expect(try harness.command("SUB a.b", on: peer) == "+OK 1")
            #expect(harness.server.connections.count == 1)
            #expect(harness.server.stats.accepted == 1)
        }

        @Test func aPeerThatClosesLeavesTheServer() throws {
            let harness = try ServerHarness()
            let leaving = try harness.connect()
            let staying = try harness.connect()
            #expect(try harness.command("SUB news", on: leaving) == "+OK 1")
            leaving.close()
            try harness.run(until: { !harness.isConnected(leaving) }, "the server to see the peer go")
            #expect(try harness.command("PUB news x", on: staying) == "+OK 0", "it left the subject's set")
            #expect(harness.server.connections.count == 1)
        }

        @Test func theServersLimitsApplyToAcceptedPairs() throws {
            let harness = try ServerHarness { $0.limits.maxConnections = 2 }
            _ = try harness.connect()
            _ = try harness.connect()
            let refused = try harness.connect(greeting: false)
            #expect(refused.id == 0)
            let line = try harness.nextLine(of: refused)
            #expect(line.hasPrefix("-ERR limit too many connections"))
            try harness.run(until: { refused.sawEnd }, "the refused peer's end of stream")
            #expect(harness.server.stats.limitRefusals == 1)
        }

        @Test func teardownClosesEveryDescriptorAndFreesTheServer() throws {
            var sockets: [String] = []
            weak var server: Server?
            weak var loop: EventLoop?
            do {
                let harness = try ServerHarness()
                server = harness.server
                loop = harness.server.loop
                let subscriber = try harness.connect()
                let publisher = try harness.connect()
                let silent = try harness.connect(sendBuffer: 4096)
                #expect(try harness.command("SUB t", on: subscriber) == "+OK 1")
                #expect(try harness.command("SUB t", on: silent) == "+OK 1")
                silent.isReading = false
                for _ in 0..<50 { publisher.send("PUB t \(String(repeating: "x", count: 1000))\n") }
                try harness.run(until: { harness.server.stats.published == 50 }, "the publishes")
                for peer in [subscriber, publisher, silent] {
                    sockets += [peer.fd, peer.serverEnd].compactMap(OpenDescriptors.target(of:))
                }
                #expect(sockets.count == 6 && sockets.allSatisfy { $0.hasPrefix("socket:[") })
                harness.shutdown()
            }
            #expect(server == nil, "nothing keeps the server alive after its teardown")
            #expect(loop == nil, "the loop (and its epoll descriptor) was freed")
            let open = OpenDescriptors.targets()
            #expect(sockets.allSatisfy { !open.contains($0) }, "every socket of the harness was closed")
        }
    }
}
