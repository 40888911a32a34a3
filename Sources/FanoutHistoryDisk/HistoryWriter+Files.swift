#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The writer thread's file operations, each counting its failure (`failed`) instead of throwing.
extension HistoryWriter {
    /// Whether the batches were written (the file is cut back to its records when not: `SegmentFiles.append`).
    func write(_ batches: [RecordBytes], to files: inout SegmentFiles, throughCache: Bool) -> Bool {
        do {
            // The buffers outlive the call: `batches` holds them.
            let grown = try files.append(batches.map { UnsafeRawBufferPointer($0.bytes) }, throughCache: throughCache)
            if grown > 0 { shared.withLock { $0.diskBytes += grown } }
            return true
        } catch {
            failed(error)
            return false
        }
    }

    /// Syncs the open segment; `written` records are settled after it. A sync that fails leaves every record
    /// since the last one that worked in doubt (Linux may have dropped their pages): they count as failed.
    func sync(_ file: (id: UInt32, fd: Int32)?, _ dirty: inout Bool, _ lastSync: inout Int64, _ written: UInt64) {
        lastSync = Self.monotonicNanoseconds()
        if dirty, let file {
            do {
                try syscall("fsync", DiskFiles.segmentPath(file.id, in: directory)) {
                    if let code = faults?.beforeSync() {
                        errno = code
                        return Int32(-1)
                    }
                    return fdatasync(file.fd)
                }
                recovered()
            } catch {
                failed(error)
                let from = shared.withLock { $0.durableRecords } + 1
                if from <= written { recordsFailed(from...written) }
            }
        }
        dirty = false
        shared.withLock {
            $0.unsyncedSince = 0
            $0.durableRecords = written
        }
    }

    func openSegment(_ id: UInt32, in files: inout SegmentFiles) {
        do {
            try files.open(id, syncDirectory: policy != .no)
        } catch {
            failed(error)
        }
    }

    func removeSegment(_ id: UInt32, in files: inout SegmentFiles) {
        do {
            let removed = try files.remove(id)
            if removed > 0 { shared.withLock { $0.diskBytes -= removed } }
            let how = removed > 0 ? "deleted (\(removed) bytes)" : "kept as the spare"
            logger.info("history: segment \(DiskFiles.segmentName(id)) holds nothing retained; \(how)")
        } catch {
            failed(error)
        }
    }

    func finish() {
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
        if lockDescriptor >= 0 { close(lockDescriptor) }
    }
}
