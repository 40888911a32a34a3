import FanoutEventLoop
#if canImport(Glibc)
import Glibc
#endif

/// Giving freed memory back to the system: glibc keeps what is freed for reuse, and the bound's drops free a
/// lot at once.
extension MemoryGuard {
    /// Queued output freed by drops after which the allocator is asked to return free memory to the system.
    static let trimAfterBytes = 64 * 1024 * 1024

    /// Counts queued output dropped with a slow consumer, or an unfinished payload's buffer dropped with its
    /// connection; past `trimAfterBytes` (or a quarter of a smaller max_memory), the allocator is asked to give
    /// free memory back two seconds later, once the dropped sockets are gone too.
    func noteFreed(_ bytes: Int) {
        freedSinceTrim += bytes
        // A quarter of a smaller bound: freed memory that stays is then a small part of what the bound allows.
        let bound = host.configuration.limits.maxMemory
        let trimAfter = bound > 0 ? min(Self.trimAfterBytes, max(1 << 20, bound / 4)) : Self.trimAfterBytes
        guard freedSinceTrim >= trimAfter else { return }
        if trimTimer == nil {
            trimTimer = LoopTimer(loop: host.loop) { [unowned self] in
                self.freedSinceTrim = 0
                self.returnFreeMemory()
            }
        }
        // A trim walks the free heap (7 to 110 ms measured after dropping hundreds of 4 MiB backlogs), so at
        // most one every two seconds: the memory comes back a little later, the loop stops less often.
        if trimTimer?.isScheduled == false { trimTimer?.schedule(after: .seconds(2)) }
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
        host.logger.info("returned free memory to the system", metadata: ["took": "\(ContinuousClock.now - started)"])
        #endif
    }
}
