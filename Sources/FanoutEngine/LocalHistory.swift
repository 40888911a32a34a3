import FanoutHistoryDisk
import Logging

/// What the server asks of the engine of this process beyond the seam (`Engine`): its history's upkeep and
/// figures, the history directory, and when a publisher's `+OK` may go (`history_fsync: always`). The
/// memory engine is this process's engine; on several nodes it stands aside, and the Redis engine keeps
/// history in Redis.
public protocol LocalHistory: Engine {
    /// Whether anyone subscribes to a subject: the numbering of one that nobody follows is forgotten first.
    var isSubscribed: (String) -> Bool { get set }
    /// Subjects whose numbering is remembered at most (`max_tracked_subjects`).
    var subjectLimit: Int { get set }
    /// The epoch `subject`'s numbering goes on under, as RESUME would report it.
    func epoch(ofSubject subject: String) -> String
    /// Whether there is history to age out (the expiry timer runs only then).
    var keepsHistory: Bool { get }
    /// Ages out expired messages a bounded slice at a time; returns whether work is left.
    @discardableResult
    func expireHistory(budget: Int) -> Bool
    var historyFigures: HistoryFigures { get }
    /// The history directory's figures, or nil without one.
    var diskFigures: DiskFigures? { get }
    /// Takes over a history directory opened at start; returns lines for the log.
    func attach(disk: HistoryDisk, policy: FsyncPolicy, logger: Logger, segmentBytes: Int) -> [String]
    /// Writes what is queued and, for a clean stop, the numbering snapshot.
    func closeDisk()
    /// Records handed to the disk so far, and those known to be synced: a held `+OK` goes once its record is.
    var recordedTicket: UInt64 { get }
    var durableTicket: UInt64 { get }
    func submitWaitingRecords()
    /// Whether a record among tickets `range` failed to be written or synced: its `+OK` must not go.
    func recordsFailed(_ range: ClosedRange<UInt64>) -> Bool
    /// The history directory and fsync mode this process writes, or nil for none.
    var diskInUse: (directory: String, policy: FsyncPolicy)? { get }
}

public struct HistoryFigures: Sendable {
    public let subjects: Int
    public let messages: Int
    public let bytes: Int
    public let evicted: UInt64
}

public struct DiskFigures: Sendable {
    public let bytes: Int
    public let fsyncLagMilliseconds: Int
    public let writeQueue: Int
    /// Records not written because the queue was full.
    public let writeDropped: UInt64
    /// Writes and syncs that failed.
    public let failures: UInt64
}

