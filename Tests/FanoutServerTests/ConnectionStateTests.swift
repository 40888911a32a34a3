@testable import FanoutServer
import Testing

@Suite("ConnectionState")
struct ConnectionStateTests {
    @Test func pausesAndResumesOnOutputPressure() {
        var state = ConnectionState.open
        #expect(state.handle(.outputFull) == .stopReading)
        #expect(state == .paused && !state.isReading)
        #expect(state.handle(.outputFull) == .none, "pausing twice does nothing")
        #expect(state.handle(.outputDrained) == .resumeReading)
        #expect(state == .open && state.isReading)
        #expect(state.handle(.outputDrained) == .none, "a drain while reading does nothing")
    }

    @Test(arguments: [ConnectionState.open, .paused])
    func closingIsFinal(from start: ConnectionState) {
        var state = start
        #expect(state.handle(.close) == .tearDown)
        #expect(state == .closed && !state.isReading)
        for event in [ConnectionState.Event.close, .outputFull, .outputDrained] {
            #expect(state.handle(event) == .none)
            #expect(state == .closed)
        }
    }
}

import FanoutEventLoop

@Suite("SocketAddress")
struct SocketAddressTests {
    @Test(arguments: [("127.0.0.1:7411", "127.0.0.1:7411"), ("[::1]:80", "[::1]:80"), ("0.0.0.0:0", "0.0.0.0:0")])
    func parsesAndPrints(text: String, expected: String) throws {
        #expect(try SocketAddress(parsing: text).description == expected)
    }

    @Test(arguments: ["nonsense", "1.2.3.4", ":80", "[::1]", "[::1]80", "::1:80"])
    func rejectsMalformedAddresses(text: String) {
        #expect(throws: SystemError.self) { try SocketAddress(parsing: text) }
    }
}
