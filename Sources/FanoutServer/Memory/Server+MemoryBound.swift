import FanoutEventLoop
import FanoutProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The server-wide memory bound, `max_memory`: queued output, the subject index and open questions, and the
/// BPUB payloads, WebSocket binary messages and `POST /publish` bodies being read. Per-connection limits
/// (max_pending_bytes, max_subscriptions, max_payload) bound one client; this bounds all of them together.
///
/// Over the bound, the connections with the largest queued output are dropped first, as slow consumers
/// (`-ERR slow-consumer`), until queued output is back under nine tenths of what the bound leaves it; new
/// subscriptions are refused with `-ERR limit` while the index alone is over the bound, and a BPUB header
/// whose payload would pass it is refused with `-ERR limit` (its bytes are read and dropped).
extension Server {
    /// How often the bound is checked: often enough that 10,000 stalled readers cannot overshoot it by more
    /// than what they queue in this time.
    static let memoryCheckInterval = Duration.milliseconds(100)

    /// Queued output freed by drops after which the allocator is asked to return free memory to the system.
    static let trimAfterBytes = 64 * 1024 * 1024

    /// Called from the fan-out when a receiver's backlog passes `BacklogWatch.mark`.
    func watchBacklog(of connection: ClientConnection) {
        let bound = configuration.limits.maxMemory
        guard bound > 0 else { return }
        if !connection.isBacklogWatched {
            connection.isBacklogWatched = true
            memory.backlogWatch.watched.insert(connection.id)
            if memory.checkTimer?.isScheduled != true { startMemoryChecks() }
        }
        // Between timer checks, a fast publisher could queue far past the bound: check as soon as a
        // thirty-second of it has been queued since the last check.
        if stats.bytesOut &- memory.bytesOutAtCheck > UInt64(bound / 32) { checkMemoryBound() }
    }

    private func startMemoryChecks() {
        if memory.checkTimer == nil {
            memory.checkTimer = LoopTimer(loop: loop) { [unowned self] in self.checkMemoryBound() }
        }
        memory.checkTimer?.schedule(after: Self.memoryCheckInterval)
    }

    /// Counts `length` bytes of a BPUB payload about to be read (or of a WebSocket message's buffer about to
    /// grow) toward max_memory as promised, or refuses (false) when they would pass it with what is queued,
    /// indexed and promised already: many connections that each send all of a payload but its last byte hold
    /// at most the bound, not max_connections × max_payload, and the allocator is never asked for more.
    /// A promise only decides admission: the bound's drops weigh bytes received (`notePayloadReceived`), so
    /// headers with no bytes behind them cannot get subscribers dropped.
    func reservePayload(_ length: Int, for connection: ClientConnection) -> Bool {
        guard reserveHeld(length) else { return false }
        connection.madeExtras.binaryReserved += length
        return true
    }

    /// Counts `length` bytes promised to input not yet whole (a payload, a message, a request body) toward
    /// max_memory, or refuses (false) when they would pass it.
    func reserveHeld(_ length: Int) -> Bool {
        let bound = configuration.limits.maxMemory
        if bound > 0 && indexBytes + memory.payloadBytes + memory.backlogWatch.lastQueued + length > bound {
            stats.limitRefusals += 1
            return false
        }
        memory.payloadBytes += length
        return true
    }

    /// `length` bytes counted by `reserveHeld` are let go.
    func releaseHeld(_ length: Int) {
        memory.payloadBytes -= length
    }

    /// `bytes` of an unfinished payload or message have arrived and are held for `connection` now (what its
    /// framer or decoder has gathered): its holders are dropped with the largest backlogs when the server is
    /// over max_memory. O(1); checks the bound once received bytes have grown by a thirty-second of it.
    func notePayloadReceived(_ bytes: Int, by connection: ClientConnection) {
        let extras = connection.madeExtras
        guard bytes != extras.binaryReceived else { return }
        memory.payloadReceived += bytes - extras.binaryReceived
        extras.binaryReceived = bytes
        if bytes > 0 {
            memory.payloadHolders.insert(connection.id)
        } else {
            memory.payloadHolders.remove(connection.id)
        }
        let bound = configuration.limits.maxMemory
        if bound > 0 && memory.payloadReceived - memory.payloadReceivedAtCheck > bound / 32 { checkMemoryBound() }
    }

    /// The payload counted by `reservePayload` and `notePayloadReceived` is published or dropped.
    func releasePayload(of connection: ClientConnection) {
        guard let extras = connection.extras else { return }
        memory.payloadBytes -= extras.binaryReserved
        extras.binaryReserved = 0
        if extras.binaryReceived > 0 { notePayloadReceived(0, by: connection) }
    }

    /// What `reservePayload` promised for `connection` shrinks to `bytes` (a WebSocket message let go of).
    func settlePayload(_ bytes: Int, of connection: ClientConnection) {
        guard let extras = connection.extras, bytes < extras.binaryReserved else { return }
        memory.payloadBytes -= extras.binaryReserved - bytes
        extras.binaryReserved = bytes
    }

    /// The index's estimated heap bytes, with the open questions'.
    var indexBytes: Int { connections.subscriptionCount * IndexMemory.bytesPerSubscription + questions.bytes }

    /// Whether holding `bytes` more (an ASK's question and pushes) would pass max_memory.
    func memoryBoundRefuses(adding bytes: Int) -> Bool {
        let bound = configuration.limits.maxMemory
        return bound > 0 && indexBytes + bytes > bound
    }

    /// Whether a subscription of `count` more patterns would pass max_memory.
    func indexWouldPassMemoryBound(adding count: Int) -> Bool {
        let bound = configuration.limits.maxMemory
        return bound > 0 && indexBytes + count * IndexMemory.bytesPerSubscription > bound
    }

    /// Sums the watched backlogs, forgets the ones that drained or left, and drops the largest while over.
    func checkMemoryBound() {
        memory.bytesOutAtCheck = stats.bytesOut
        memory.payloadReceivedAtCheck = memory.payloadReceived
        var queued = 0
        var backlogs: [(pending: Int, connection: ClientConnection)] = []
        for id in memory.backlogWatch.watched {
            guard let connection = connections[id], case let pending = connection.pendingBytes,
                  pending > BacklogWatch.mark / 2 else {
                memory.backlogWatch.watched.remove(id)
                connections[id]?.isBacklogWatched = false
                continue
            }
            queued += pending
            backlogs.append((pending, connection))
        }
        memory.backlogWatch.lastQueued = queued
        let bound = configuration.limits.maxMemory
        var total = queued + memory.payloadReceived
        if bound > 0 && total + indexBytes > bound {
            // Unfinished payloads are held bytes like queued output: their holders are dropped with the backlogs,
            // largest first.
            var largest = backlogs.map { (bytes: $0.pending, connection: $0.connection, isBacklog: true) }
            for id in memory.payloadHolders {
                guard let connection = connections[id], let held = connection.extras?.binaryReceived, held > 0 else {
                    continue
                }
                largest.append((held, connection, false))
            }
            largest.sort { $0.bytes > $1.bytes }
            let target = max(0, (bound - indexBytes) * 9 / 10)
            var freed = 0
            for (bytes, connection, isBacklog) in largest where total > target {
                memory.backlogWatch.drops += 1
                if isBacklog {
                    memory.backlogWatch.watched.remove(connection.id)
                    connection.isBacklogWatched = false
                    disconnect(connection, reason: .slowConsumer(
                        "\(bytes) bytes pending while the server is over max_memory=\(bound)"))
                    queued -= bytes
                } else {
                    disconnect(connection, reason: .memoryBound(
                        "\(bytes) bytes of an unfinished payload or line held while over max_memory=\(bound)"))
                }
                total -= bytes
                freed += bytes
            }
            memory.backlogWatch.lastQueued = queued
            memory.payloadReceivedAtCheck = memory.payloadReceived
            logger.warning(
                "over max_memory=\(bound): dropped the largest slow consumers and unfinished payloads, \(freed) bytes")
        }
        if !memory.backlogWatch.watched.isEmpty { memory.checkTimer?.schedule(after: Self.memoryCheckInterval) }
    }

    /// Counts queued output dropped with a slow consumer, or an unfinished payload's buffer dropped with its
    /// connection; past `trimAfterBytes` (or a quarter of a smaller max_memory), the allocator is asked to give
    /// free memory back two seconds later, once the dropped sockets are gone too.
    func noteFreed(_ bytes: Int) {
        memory.freedSinceTrim += bytes
        // A quarter of a smaller bound: freed memory that stays is then a small part of what the bound allows.
        let bound = configuration.limits.maxMemory
        let trimAfter = bound > 0 ? min(Self.trimAfterBytes, max(1 << 20, bound / 4)) : Self.trimAfterBytes
        guard memory.freedSinceTrim >= trimAfter else { return }
        if memory.trimTimer == nil {
            memory.trimTimer = LoopTimer(loop: loop) { [unowned self] in
                self.memory.freedSinceTrim = 0
                self.returnFreeMemory()
            }
        }
        // A trim walks the free heap (7 to 110 ms measured after dropping hundreds of 4 MiB backlogs), so at
        // most one every two seconds: the memory comes back a little later, the loop stops less often.
        if memory.trimTimer?.isScheduled == false { memory.trimTimer?.schedule(after: .seconds(2)) }
    }

    /// Keeps glibc from giving memory back on every large free: a read reserves a 128 KiB buffer chain and
    /// frees it again, and left to itself glibc served each one with an mmap and a munmap, which doubled the
    /// kernel's share of a publish-only server. Memory still goes back after large drops (`returnFreeMemory`).
    static func keepHeapTop() {
        #if canImport(Glibc)
        typealias Option = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Option.self)
        // M_TRIM_THRESHOLD is -1 in <malloc.h>; 64 MiB of free top is kept before glibc trims on its own.
        _ = mallopt(-1, 64 << 20)
        // M_MMAP_THRESHOLD is -3: the 64 KiB reads reserve a chain of 128 KiB, which glibc would otherwise map
        // and unmap on every read (an mmap and a munmap per recv); blocks up to 4 MiB come from the heap.
        _ = mallopt(-3, 4 << 20)
        #endif
    }

    /// Hands free heap back to the system after large drops: glibc keeps freed chunks for reuse, and RSS would
    /// otherwise stay at its peak long after the backlogs are gone.
    func returnFreeMemory() {
        #if canImport(Glibc)
        // glibc's malloc_trim is declared in <malloc.h>, which the Glibc module leaves out.
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        let started = ContinuousClock.now
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        logger.info("returned free memory to the system", metadata: ["took": "\(ContinuousClock.now - started)"])
        #endif
    }
}
