#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Failures the writer is told to meet, for tests: a segment write or a sync that fails with an errno, or a
/// write torn at a given byte (the process then dies with SIGKILL, as a power cut would end it there).
///
/// Read once at start from `FANOUTD_HISTORY_FAULTS` (docs/testing.md, "Disk faults"), so that a test outside
/// the process can use it too; unit tests pass one made from the same text. The text is comma-separated:
/// - `write=ENOSPC@N` or `write=EIO@N`: segment writes from the Nth on (1-based) fail; `write=ENOSPC@NxK`
///   fails K of them, then writes work again (a disk that filled and emptied);
/// - `sync=EIO@N` (or `@NxK`): the same for `fdatasync` of a segment;
/// - `tear=B`: the write that takes the segments' bytes written by this process past B writes up to B only,
///   and the process is killed at once.
/// Bound: a few counters; consulted once per write call, never per record.
public final class DiskFaults: Sendable {
    struct Rule: Sendable {
        let errno: Int32
        let from: Int
        let count: Int
    }

    private struct Counts: Sendable {
        var writes = 0
        var syncs = 0
        var bytes = 0
    }

    let write: Rule?
    let sync: Rule?
    let tearAt: Int?
    private let counts = Mutex(Counts())

    /// Nil for an empty or missing text; throws a message naming what it cannot read.
    public static func parse(_ text: String?) throws(DiskFaultsError) -> DiskFaults? {
        guard let text, !text.isEmpty else { return nil }
        var write: Rule?
        var sync: Rule?
        var tear: Int?
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw DiskFaultsError(item: String(item)) }
            switch parts[0] {
            case "write": write = try rule(parts[1], item: item)
            case "sync": sync = try rule(parts[1], item: item)
            case "tear":
                guard let at = Int(parts[1]), at >= 0 else { throw DiskFaultsError(item: String(item)) }
                tear = at
            default: throw DiskFaultsError(item: String(item))
            }
        }
        return DiskFaults(write: write, sync: sync, tearAt: tear)
    }

    /// `FANOUTD_HISTORY_FAULTS`, read at start.
    public static func fromEnvironment() throws(DiskFaultsError) -> DiskFaults? {
        try parse(getenv("FANOUTD_HISTORY_FAULTS").map { String(cString: $0) })
    }

    private static func rule(_ text: String, item: Substring) throws(DiskFaultsError) -> Rule {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false).map(String.init)
        let codes: [String: Int32] = ["ENOSPC": ENOSPC, "EIO": EIO, "EDQUOT": EDQUOT]
        guard parts.count == 2, let code = codes[parts[0]] else { throw DiskFaultsError(item: String(item)) }
        let range = parts[1].split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
        guard let from = range.first ?? nil, from >= 1, range.count <= 2 else {
            throw DiskFaultsError(item: String(item))
        }
        let count = range.count == 2 ? (range[1] ?? -1) : Int.max
        guard count >= 0 else { throw DiskFaultsError(item: String(item)) }
        return Rule(errno: code, from: from, count: count)
    }

    init(write: Rule?, sync: Rule?, tearAt: Int?) {
        self.write = write
        self.sync = sync
        self.tearAt = tearAt
    }

    /// Called before a segment write of `length` bytes: the errno it must fail with, or how many of its bytes
    /// may go (all of them but at a tear, after which `tore` ends the process).
    func beforeWrite(length: Int) -> (errno: Int32?, allowed: Int) {
        counts.withLock { counts in
            counts.writes += 1
            if let write, counts.writes >= write.from, counts.writes - write.from < write.count {
                return (write.errno, 0)
            }
            var allowed = length
            if let tearAt, counts.bytes + length > tearAt { allowed = max(0, tearAt - counts.bytes) }
            counts.bytes += allowed
            return (nil, allowed)
        }
    }

    /// A torn write went out: the process ends as a power cut would end it.
    func tore() -> Never {
        kill(getpid(), SIGKILL)
        abort()
    }

    /// Called before a segment sync: the errno it must fail with, if any.
    func beforeSync() -> Int32? {
        counts.withLock { counts in
            counts.syncs += 1
            guard let sync, counts.syncs >= sync.from, counts.syncs - sync.from < sync.count else { return nil }
            return sync.errno
        }
    }
}

/// A `FANOUTD_HISTORY_FAULTS` item that cannot be read.
public struct DiskFaultsError: Error, CustomStringConvertible {
    public let item: String
    public var description: String { "FANOUTD_HISTORY_FAULTS: cannot read \"\(item)\"" }
}
