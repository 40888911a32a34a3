import FanoutEventLoop
@testable import FanoutServer
import Foundation
import Logging
import Testing

/// Work continued a slice per loop pass, and history's upkeep, each driven by a loop in the test process.
@Suite("SlicedWork and HistoryUpkeep")
struct SlicedWorkTests {
    @Test func aSliceAskedForWhileOneIsPendingRunsOnceWithTheFirstAction() throws {
        let loop = try EventLoop()
        let work = SlicedWork(loop: loop)
        var runs: [String] = []
        work.schedule(\.turnTimer) { runs.append("first") }
        work.schedule(\.turnTimer) { runs.append("second") }
        loop.runOnce(blocking: true)
        #expect(runs == ["first"], "one pending slice, however often it is asked for")
        work.schedule(\.turnTimer) { runs.append("third") }
        loop.runOnce(blocking: true)
        #expect(runs == ["first", "first"], "the slot's timer keeps the action it was made with")
    }

    @Test func aComponentsOwnTimerIsMadeOnceAndScheduledOnce() throws {
        let loop = try EventLoop()
        var timer: LoopTimer?
        var runs = 0
        SlicedWork.schedule(&timer, on: loop) { runs += 1 }
        let made = try #require(timer)
        SlicedWork.schedule(&timer, on: loop) { runs += 10 }
        #expect(timer === made)
        loop.runOnce(blocking: true)
        #expect(runs == 1)
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
