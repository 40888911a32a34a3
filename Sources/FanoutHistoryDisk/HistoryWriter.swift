#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Synchronization

/// When the writer makes what it wrote durable.
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// After every batch it takes (a group commit): the loss window of a power cut is one batch.
    case always
    /// At most a second after a write: a power cut may lose the last second.
    case everysec
    /// Never asked: the kernel writes back when it likes (a clean stop still syncs).
    case no
}

/// A message on its way to disk: the payload array is the one the history keeps (shared, not copied).
public struct QueuedRecord: Sendable {
    public var segment: UInt32
    public var seq: UInt64
    public var serial: UInt64
    public var wallNanoseconds: Int64
    public var subject: String
    public var payload: [UInt8]

    public init(segment: UInt32, seq: UInt64, serial: UInt64, wallNanoseconds: Int64, subject: String, payload: [UInt8]) {
        self.segment = segment
        self.seq = seq
        self.serial = serial
        self.wallNanoseconds = wallNanoseconds
        self.subject = subject
        self.payload = payload
    }

    public var diskBytes: Int { HistoryRecord.size(subjectBytes: subject.utf8.count, payloadBytes: payload.count) }
}

/// The write-behind thread: the loop hands it records through a queue bounded in bytes and never waits for it;
/// it appends them to segment files and syncs them as `FsyncPolicy` says.
///
/// Threading: `submit`, `delete`, `figures` and `stop` are called by the loop thread; everything else runs on
/// the writer's own thread. The queue and its figures are behind one `Mutex`; the loop holds it for an array
/// append, never across I/O.
/// Bound: at most `maxQueueBytes` of records wait (what does not fit is refused and counted by the caller).
public final class HistoryWriter: Sendable {
    public struct Figures: Sendable {
        /// Bytes in the directory's segments.
        public var diskBytes: Int
        /// Records waiting in the queue.
        public var queued: Int
        /// How long the oldest write not yet synced has waited, in milliseconds (0: all synced).
        public var fsyncLagMilliseconds: Int
        /// Writes or syncs that failed.
        public var failures: UInt64
    }

    private enum Command: Sendable {
        case record(QueuedRecord)
        case delete(UInt32)
    }

    private struct Shared: Sendable {
        var commands: [Command] = []
        var queuedBytes = 0
        var queuedRecords = 0
        var sleeping = false
        var stopping = false
        var snapshot: NumberingSnapshot?
        var finalState: DiskState?
        var diskBytes = 0
        var unsyncedSince: Int64 = 0
        var failures: UInt64 = 0
        var durableRecords: UInt64 = 0
    }

    public let directory: String
    public let policy: FsyncPolicy
    public let maxQueueBytes: Int
    private let shared: Mutex<Shared>
    /// Posted by the loop when the writer sleeps and work arrives.
    private let wakeup: Semaphore
    private let thread = Mutex<pthread_t?>(nil)
    private let logger: Logger

    /// Starts the thread; `diskBytes` is what the directory's segments hold already.
    public init(directory: String, policy: FsyncPolicy, maxQueueBytes: Int, diskBytes: Int, logger: Logger) {
        self.directory = directory
        self.policy = policy
        self.maxQueueBytes = maxQueueBytes
        self.logger = logger
        var initial = Shared()
        initial.diskBytes = diskBytes
        shared = Mutex(initial)
        wakeup = Semaphore()
        // passRetained: the thread takes the one reference when it starts and holds the writer until it ends.
        let box = Unmanaged.passRetained(self).toOpaque()
        var handle = pthread_t()
        pthread_create(&handle, nil, { raw in
            let writer = Unmanaged<HistoryWriter>.fromOpaque(raw!).takeRetainedValue()
            writer.runThread()
            return nil
        }, box)
        thread.withLock { $0 = handle }
    }

    deinit {
        sem_destroy(wakeup.pointer)
        wakeup.pointer.deallocate()
    }

    /// A POSIX semaphore: made for posting and waiting from different threads, hence `@unchecked Sendable`.
    /// The writer owns it and frees it in `deinit`, after its thread has ended.
    private struct Semaphore: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<sem_t>

        init() {
            pointer = .allocate(capacity: 1)
            sem_init(pointer, 0, 0)
        }
    }

    /// Queues `records` in order; returns how many fit (the first ones). The rest are not written.
    public func submit(_ records: [QueuedRecord]) -> Int {
        var accepted = 0
        let post = shared.withLock { state -> Bool in
            for record in records {
                let bytes = record.diskBytes
                guard state.queuedBytes + bytes <= maxQueueBytes else { break }
                state.queuedBytes += bytes
                state.queuedRecords += 1
                state.commands.append(.record(record))
                accepted += 1
            }
            return wake(&state)
        }
        if post { sem_post(wakeup.pointer) }
        return accepted
    }

    /// Deletes segment `id` once the records queued before are written.
    public func delete(segment id: UInt32) {
        let post = shared.withLock { state -> Bool in
            state.commands.append(.delete(id))
            return wake(&state)
        }
        if post { sem_post(wakeup.pointer) }
    }

    /// How many of the records submitted so far (in order) are synced: a ticket for holding acknowledgements.
    public var durableRecords: UInt64 { shared.withLock { $0.durableRecords } }

    public var figures: Figures {
        shared.withLock { state in
            let lag = state.unsyncedSince == 0 ? 0 : Int(max(0, Self.monotonicNanoseconds() - state.unsyncedSince) / 1_000_000)
            return Figures(diskBytes: state.diskBytes, queued: state.queuedRecords, fsyncLagMilliseconds: lag,
                           failures: state.failures)
        }
    }

    /// Writes what is queued, syncs it, writes `snapshot` and then `state`, and ends the thread: the clean stop.
    /// Blocks until done; called once the loop has stopped.
    public func stop(snapshot: NumberingSnapshot?, state final: DiskState) {
        let post = shared.withLock { state -> Bool in
            state.stopping = true
            state.snapshot = snapshot
            state.finalState = final
            return wake(&state)
        }
        if post { sem_post(wakeup.pointer) }
        if let handle = thread.withLock({ $0.take() }) { pthread_join(handle, nil) }
    }

    private func wake(_ state: inout Shared) -> Bool {
        guard state.sleeping else { return false }
        state.sleeping = false
        return true
    }

    // MARK: The writer's thread

    private var segmentPath: (UInt32) -> String { { [directory] in directory + "/" + DiskFiles.segmentName($0) } }

    private func runThread() {
        var file: (id: UInt32, fd: Int32)?
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        var lastSync = Self.monotonicNanoseconds()
        var dirty = false
        var written: UInt64 = 0
        while true {
            let (commands, stopping) = shared.withLock { state -> ([Command], Bool) in
                let taken = state.commands
                state.commands.removeAll()
                state.queuedBytes = 0
                state.queuedRecords = 0
                if taken.isEmpty && !state.stopping { state.sleeping = true }
                return (taken, state.stopping)
            }
            if commands.isEmpty && !stopping {
                let now = Self.monotonicNanoseconds()
                if dirty && policy == .everysec {
                    let due = lastSync + 1_000_000_000
                    if now >= due {
                        sync(file, &dirty, &lastSync, written)
                        continue
                    }
                    var deadline = timespec()
                    clock_gettime(CLOCK_REALTIME, &deadline)
                    let wait = due - now
                    deadline.tv_sec += Int(wait / 1_000_000_000)
                    deadline.tv_nsec += Int(wait % 1_000_000_000)
                    if deadline.tv_nsec >= 1_000_000_000 { deadline.tv_sec += 1; deadline.tv_nsec -= 1_000_000_000 }
                    _ = sem_timedwait(wakeup.pointer, &deadline)
                } else {
                    _ = sem_wait(wakeup.pointer)
                }
                shared.withLock { $0.sleeping = false }
                continue
            }
            for command in commands {
                switch command {
                case .record(let record):
                    written += 1
                    if file?.id != record.segment {
                        flush(&buffer, to: file)
                        if let open = file {
                            if policy != .no { sync(open, &dirty, &lastSync, written) }
                            close(open.fd)
                        }
                        file = openSegment(record.segment)
                    }
                    var subject = record.subject
                    subject.withUTF8 { subject in
                        record.payload.withUnsafeBytes { payload in
                            HistoryRecord.append(seq: record.seq, serial: record.serial,
                                                 wallNanoseconds: record.wallNanoseconds,
                                                 subject: UnsafeRawBufferPointer(subject), payload: payload, to: &buffer)
                        }
                    }
                    if buffer.count >= 1 << 20 { flush(&buffer, to: file) }
                case .delete(let id):
                    flush(&buffer, to: file)
                    // The copies of its retained records (a compaction) are synced before it goes, whatever
                    // the policy: a crash must find them or the old segment, never neither.
                    if dirty { sync(file, &dirty, &lastSync, written) }
                    if file?.id == id, let open = file {
                        close(open.fd)
                        file = nil
                    }
                    removeSegment(id)
                }
            }
            if flush(&buffer, to: file) > 0 || !commands.isEmpty {
                if !dirty {
                    dirty = true
                    let now = Self.monotonicNanoseconds()
                    shared.withLock { if $0.unsyncedSince == 0 { $0.unsyncedSince = now } }
                }
            }
            if policy == .always && dirty { sync(file, &dirty, &lastSync, written) }
            if stopping && commands.isEmpty {
                sync(file, &dirty, &lastSync, written)
                if let open = file { close(open.fd) }
                finish()
                return
            }
        }
    }

    /// Writes the buffer to the open segment; returns how many bytes it held.
    @discardableResult
    private func flush(_ buffer: inout [UInt8], to file: (id: UInt32, fd: Int32)?) -> Int {
        let count = buffer.count
        guard count > 0 else { return 0 }
        defer { buffer.removeAll(keepingCapacity: true) }
        guard let file else { return count }
        do {
            try DiskFiles.writeAll(file.fd, buffer, path: segmentPath(file.id))
            shared.withLock { $0.diskBytes += count }
        } catch {
            failed(error)
        }
        return count
    }

    /// Syncs the open segment; `written` records are durable after it.
    private func sync(_ file: (id: UInt32, fd: Int32)?, _ dirty: inout Bool, _ lastSync: inout Int64, _ written: UInt64) {
        lastSync = Self.monotonicNanoseconds()
        if dirty, let file {
            do { try syscall("fsync", segmentPath(file.id)) { fdatasync(file.fd) } } catch { failed(error) }
        }
        dirty = false
        shared.withLock {
            $0.unsyncedSince = 0
            $0.durableRecords = written
        }
    }

    private func openSegment(_ id: UInt32) -> (id: UInt32, fd: Int32)? {
        let path = segmentPath(id)
        do {
            let fd = try syscall("create", path) { open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640) }
            if policy != .no { try DiskFiles.syncDirectory(directory) }
            return (id, fd)
        } catch {
            failed(error)
            return nil
        }
    }

    private func removeSegment(_ id: UInt32) {
        let path = segmentPath(id)
        var info = stat()
        let size = stat(path, &info) == 0 ? Int(info.st_size) : 0
        if unlink(path) == 0 {
            shared.withLock { $0.diskBytes -= size }
        } else if errno != ENOENT {
            failed(DiskError(operation: "delete", path: path, errno: errno))
        }
    }

    private func finish() {
        let (snapshot, final) = shared.withLock { ($0.snapshot, $0.finalState) }
        do {
            if let snapshot {
                try DiskFiles.replace(directory + "/" + HistoryDisk.numberingFile, with: snapshot.encoded(),
                                      directory: directory)
            }
            if let final { try DiskFiles.replace(directory + "/" + HistoryDisk.stateFile, with: final.encoded(), directory: directory) }
        } catch {
            failed(error)
        }
    }

    private func failed(_ error: any Error) {
        let count = shared.withLock { state -> UInt64 in
            state.failures += 1
            return state.failures
        }
        // Throttled: a full disk fails every batch.
        if count.nonzeroBitCount == 1 { logger.error("history: \(error) (failure \(count))") }
    }

    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
