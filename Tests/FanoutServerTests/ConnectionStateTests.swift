@testable import FanoutServer
import Testing

@Suite("ConnectionState")
struct ConnectionStateTests {
    @Test func pausesAndResumesOnOutputPressure() {
        var state = ConnectionState.open
        #expect(state.handle(.outputFull) == .stopReading)
        #expect(state == .paused && !state.isReading && state.isLive)
        #expect(state.handle(.outputFull) == .none, "pausing twice does nothing")
        #expect(state.handle(.outputDrained) == .resumeReading)
        #expect(state == .open && state.isReading)
        #expect(state.handle(.outputDrained) == .none, "a drain while reading does nothing")
    }

    @Test(arguments: [ConnectionState.open, .paused])
    func closingIsFinal(from start: ConnectionState) {
        var state = start
        #expect(state.handle(.close) == .tearDown)
        #expect(state == .closed && !state.isLive)
        for event in [ConnectionState.Event.close, .outputFull, .outputDrained] {
            #expect(state.handle(event) == .none)
            #expect(state == .closed)
        }
    }
}
