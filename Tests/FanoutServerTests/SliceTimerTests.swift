import FanoutEventLoop
@testable import FanoutServer
import Foundation
import Logging
import Testing

/// Work continued a slice per loop pass, and history's upkeep, each driven by a loop in the test process.
@Suite("SliceTimer and HistoryUpkeep")
struct SliceTimerTests {
    @Test func aSliceAskedForWhileOneIsPendingRunsOnceWithTheFirstAction() throws {
        let loop = try EventLoop()
        var timer = SliceTimer()
        var runs: [String] = []
        timer.schedule(on: loop) { runs.append("first") }
        timer.schedule(on: loop) { runs.append("second") }
        loop.runOnce(blocking: true)
        #expect(runs == ["first"], "one pending slice, however often it is asked for")
        timer.schedule(on: loop) { runs.append("third") }
        loop.runOnce(blocking: true)
        #expect(runs == ["first", "first"], "the timer keeps the action it was made with")
        timer.tearDown()
        timer.schedule(on: loop) { runs.append("fourth") }
        loop.runOnce(blocking: true)
        #expect(runs == ["first", "first", "fourth"], "a timer torn down is made again with the next action")
    }

    @Test func diskFiguresAreInInfoOnlyWithAHistoryDirectory() throws {
        let plain = try Server(configuration: ServerConfiguration(), logger: Logger(label: "test"))
        #expect(plain.historyUpkeep.diskInfoFields().isEmpty)
        #expect(plain.isStandalone)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("upkeep-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = ServerConfiguration()
        configuration.history.directory = directory.path
        let onDisk = try Server(configuration: configuration, logger: Logger(label: "test"))
        defer { onDisk.historyUpkeep.closeDisk() }
        #expect(onDisk.historyUpkeep.diskInfoFields().map(\.0) == [
            "history_disk_bytes", "history_fsync_lag_ms", "history_write_queue", "history_write_dropped",
            "history_disk_failures",
        ])
    }
}
