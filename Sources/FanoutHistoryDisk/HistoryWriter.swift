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

/// The write-behind thread: the loop hands it encoded records through a queue bounded in bytes and never
/// waits for it; it seals them, appends them to segment files and syncs them as `FsyncPolicy` says.
///
/// Threading: `submit`, `delete`, `figures`, `durableRecords` and `stop` are called by the loop thread;
/// everything else runs on the writer's own thread. The queue and its figures are behind one `Mutex`; the
/// loop holds it for an array append, never across I/O. Under `everysec` and `no` the writer takes the queue
/// every 10 ms while there is work (or at once past 1 MiB), so that a steady stream costs no wake-up per run;
/// under `always` it is woken at once, since acknowledgements wait for it.
/// Bound: at most `maxQueueBytes` wait (what does not fit is refused and the caller counts or keeps it).
/// Segments are written direct (`DirectWrites`), except a pass of more than half the queue, which goes
/// through the page cache to take a burst at memory speed.
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

    enum Command: Sendable {
        case records(EncodedRecords)
        /// Records whose write failed, written again first in a later pass (their tickets counted already).
        case retry(EncodedRecords)
        case delete(UInt32)
    }

    /// What the writer is doing, for the loop to know whether to wake it.
    enum Rest: Sendable {
        /// Taking or writing a batch: it looks at the queue again when done.
        case working
        /// Waiting a moment for more (everysec, no): woken early only past `wakeBytes`.
        case napping
        /// Nothing to do: woken by the next submission.
        case idle
    }

    struct Shared: Sendable {
        var commands: [Command] = []
        var queuedBytes = 0
        var queuedRecords = 0
        var rest = Rest.working
        var stopping = false
        var snapshot: NumberingSnapshot?
        var finalState: DiskState?
        var diskBytes = 0
        var unsyncedSince: Int64 = 0
        var failures: UInt64 = 0
        var failingSince: Int64 = 0
        var failingErrno: Int32 = 0
        var durableRecords: UInt64 = 0
        /// Records (by submission count) that were not written or not synced, newest last (`FailedRecords`).
        var failedRecords = FailedRecords()
        /// Why writes fail, while they do: `always` refuses new records meanwhile (`refusal`).
        var failing: String?
        /// Buffers written and emptied, for the loop to fill again (`submit`).
        var spares = RecordBytesPool()
    }

    public let directory: String
    public let policy: FsyncPolicy
    public let maxQueueBytes: Int
    /// Queued bytes past which a napping writer is woken.
    static let wakeBytes = 1 << 20
    /// How long the writer waits for more after a batch, under everysec and no.
    static let napNanoseconds: Int64 = 10_000_000
    let shared: Mutex<Shared>
    /// Posted by the loop when the writer rests and work arrives.
    private let wakeup: Semaphore
    private let thread = Mutex<pthread_t?>(nil)
    let logger: Logger

    /// The directory's lock (`HistoryDisk.lock`), closed after the clean stop's last write; -1 for none.
    let lockDescriptor: Int32
    /// Where `state` says whether a crash may keep epochs; turned off at the first doubt (`DiskState`).
    let stateMark: StateMark?
    /// Failures a test asked for (`DiskFaults`).
    let faults: DiskFaults?
    /// Whether writes fail now (`failing` set): read per publish run under `always`, without the lock.
    let refusing = Atomic<Bool>(false)

    /// Starts the thread; `diskBytes` is what the directory's segments hold already.
    /// `epoch` names the directory's `state` for marking a doubt (none: not marked, for tests of the writer).
    public init(directory: String, policy: FsyncPolicy, maxQueueBytes: Int, diskBytes: Int, lockDescriptor: Int32 = -1,
                epoch: String? = nil, faults: DiskFaults? = nil, logger: Logger) {
        self.directory = directory
        self.faults = faults
        stateMark = epoch.map { StateMark(directory: directory, epoch: $0) }
        self.lockDescriptor = lockDescriptor
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

    /// Queues `batches` in order; returns how many fit (the first ones). The rest are not written. Moves the
    /// writer's emptied buffers into `spares` (`RecordBytesPool.lend`).
    public func submit(_ batches: [EncodedRecords], spares: inout [RecordBytes]) -> Int {
        var accepted = 0
        let post = shared.withLock { state -> Bool in
            state.spares.lend(to: &spares)
            for batch in batches {
                guard state.queuedBytes + batch.bytes.count <= maxQueueBytes || state.queuedBytes == 0 else { break }
                state.queuedBytes += batch.bytes.count
                state.queuedRecords += batch.count
                state.commands.append(.records(batch))
                accepted += 1
            }
            return wake(&state)
        }
        if post { sem_post(wakeup.pointer) }
        return accepted
    }

    /// Deletes segment `id` once the records queued before are written and synced.
    public func delete(segment id: UInt32) {
        let post = shared.withLock { state -> Bool in
            state.commands.append(.delete(id))
            return wake(&state)
        }
        if post { sem_post(wakeup.pointer) }
    }

    /// How many of the records submitted so far (in order) are settled, synced or failed: a ticket for holding
    /// acknowledgements. A failed one is in `anyFailed`; the doubt it casts is on disk before it counts here.
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
        shared.withLock { state in
            state.stopping = true
            state.snapshot = snapshot
            state.finalState = final
        }
        sem_post(wakeup.pointer)
        if let handle = thread.withLock({ $0.take() }) { pthread_join(handle, nil) }
    }

    /// Whether a submission should wake the writer; it is then working.
    private func wake(_ state: inout Shared) -> Bool {
        switch state.rest {
        case .working: return false
        case .napping: guard policy == .always || state.queuedBytes >= Self.wakeBytes else { return false }
        case .idle: break
        }
        state.rest = .working
        return true
    }

    // MARK: The writer's thread


    private func runThread() {
        var files = SegmentFiles(directory: directory, faults: faults)
        var file: (id: UInt32, fd: Int32)? { files.current.map { ($0.id, $0.fd) } }
        var lastSync = Self.monotonicNanoseconds()
        var dirty = false
        var written: UInt64 = 0
        var worked = false
        // Records whose write failed, kept to be written again, in order, before anything newer: a disk that
        // fills and then has room again keeps them (history after a restart starts after a gap otherwise).
        // Bound: `maxQueueBytes`; past it the oldest go for good.
        var retry: [EncodedRecords] = []
        var retryBytes = 0
        var retryNow = false
        while true {
            var (commands, stopping) = shared.withLock { state -> ([Command], Bool) in
                let taken = state.commands
                state.commands.removeAll()
                state.queuedBytes = 0
                state.queuedRecords = 0
                if !state.stopping && (taken.isEmpty || (worked && policy != .always)) {
                    // Nothing: rest until woken (or a sync is due). After work, under everysec and no: a nap.
                    state.commands = taken
                    state.rest = taken.isEmpty && !worked ? .idle : .napping
                    if state.rest == .idle { state.spares.trim() }
                    for case .records(let batch) in taken {
                        state.queuedBytes += batch.bytes.count
                        state.queuedRecords += batch.count
                    }
                    return ([], false)
                }
                state.rest = .working
                return (taken, state.stopping)
            }
            if !retry.isEmpty && (retryNow || !commands.isEmpty || stopping) {
                shared.withLock { $0.rest = .working }
                commands = retry.map { .retry($0) } + commands
                retry.removeAll()
                retryBytes = 0
            }
            retryNow = false
            if commands.isEmpty && !stopping {
                let now = Self.monotonicNanoseconds()
                var due: Int64? = worked ? now + Self.napNanoseconds : nil
                if dirty && policy == .everysec {
                    let syncDue = lastSync + 1_000_000_000
                    if now >= syncDue {
                        shared.withLock { $0.rest = .working }
                        sync(file, &dirty, &lastSync, written)
                        continue
                    }
                    due = min(due ?? syncDue, syncDue)
                }
                worked = false
                // While writes fail under `always`, nothing comes to try them with: look every 100 ms whether
                // to take records again.
                let failing = policy == .always && refusing.load(ordering: .relaxed)
                if failing { due = min(due ?? .max, now + 100_000_000) }
                if let due {
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
                shared.withLock { $0.rest = .working }
                if failing && retryDue() {
                    recovered()
                    retryNow = true
                }
                continue
            }
            worked = !commands.isEmpty
            var wroteBytes = false
            // Behind: a pass of more than half the queue. It goes through the page cache, which takes it at
            // memory speed, where direct writes would hold the queue full for as long as the device takes.
            var passBytes = 0
            for command in commands {
                if case .records(let batch) = command { passBytes += batch.bytes.count }
                if case .retry(let batch) = command { passBytes += batch.bytes.count }
            }
            let behind = passBytes > maxQueueBytes / 2
            // The open segment's sealed batches, written together before anything else touches the file, a
            // staging buffer's worth at a time: sealed and copied while they are still in the cache.
            var gathered: [EncodedRecords] = []
            var gatheredBytes = 0
            // The tickets of the gathered records new in this pass: those after `gatheredFrom`, up to `written`.
            var gatheredFrom = written
            func writeGathered() {
                defer { gatheredFrom = written }
                guard !gathered.isEmpty || gatheredFrom < written else { return }
                // After a failure in this pass, the rest waits behind the failed records: the file keeps seq order.
                if retry.isEmpty && write(gathered.map(\.bytes), to: &files, throughCache: behind) {
                    shared.withLock { state in
                        for batch in gathered { state.spares.keep(batch.bytes) }
                    }
                } else {
                    if gatheredFrom < written { recordsFailed(gatheredFrom + 1...written) }
                    retry += gathered
                    retryBytes += gathered.reduce(0) { $0 + $1.bytes.count }
                    while retryBytes > maxQueueBytes, let oldest = retry.first {
                        retry.removeFirst()
                        retryBytes -= oldest.bytes.count
                    }
                }
                gathered.removeAll(keepingCapacity: true)
                gatheredBytes = 0
            }
            for command in commands {
                switch command {
                case .records(let batch), .retry(let batch):
                    if files.current?.id != batch.segment {
                        writeGathered()
                        if let open = file {
                            cutToWritten(&files)
                            // The cut too, so that a crash finds the segment as it ends, not a reused file's rest.
                            if policy != .no { dirty = true; sync(open, &dirty, &lastSync, written) }
                            files.close()
                        }
                        openSegment(batch.segment, in: &files)
                    }
                    HistoryRecord.seal(batch.bytes.bytes, segment: batch.segment)
                    if batch.bytes.count > 0 { gathered.append(batch) }
                    gatheredBytes += batch.bytes.count
                    if case .records = command { written += UInt64(batch.count) }
                    if gatheredBytes >= DirectWrites.capacity { writeGathered() }
                    wroteBytes = true
                case .delete(let id):
                    writeGathered()
                    // The copies of its retained records (a compaction) are synced before it goes, whatever
                    // the policy: a crash must find them or the old segment, never neither.
                    if dirty { sync(file, &dirty, &lastSync, written) }
                    // While writes fail, the copies may not be on disk: the segment stays (a restart reads it
                    // and deletes it once nothing in it is retained).
                    if !retry.isEmpty || shared.withLock({ $0.failing != nil }) {
                        logger.warning("history: \(DiskFiles.segmentName(id)) kept while writes fail")
                        continue
                    }
                    if files.current?.id == id { files.close() }
                    removeSegment(id, in: &files)
                }
                if wroteBytes && !dirty {
                    dirty = true
                    let now = Self.monotonicNanoseconds()
                    shared.withLock { if $0.unsyncedSince == 0 { $0.unsyncedSince = now } }
                }
            }
            writeGathered()
            if policy == .always && dirty { sync(file, &dirty, &lastSync, written) }
            if policy == .no { shared.withLock { $0.durableRecords = written } }
            if stopping {
                let more = shared.withLock { !$0.commands.isEmpty }
                if more { continue }
                cutToWritten(&files)
                dirty = true
                sync(file, &dirty, &lastSync, written)
                files.close()
                finish()
                return
            }
        }
    }

    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
