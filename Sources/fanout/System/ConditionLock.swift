#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A mutex with one condition variable, over pthreads: the responder's workers wait on it for questions and
/// the spawn path holds it around `posix_spawn` (Foundation's `NSCondition` and `NSLock` are the same calls,
/// but would link Foundation). The two pthread objects are allocated once, never moved, and freed in `deinit`.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for `signal`, with the lock held on entry and again on return.
    func wait() { pthread_cond_wait(condition, mutex) }
    func signal() { pthread_cond_signal(condition) }
}

/// Starts `body` on a detached thread of its own (a responder's worker, which runs until the process exits).
func detachThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    // Retained here, released by the new thread once it has the closure: the thread is the box's only owner.
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { argument in
        guard let argument else { return nil }
        Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
        return nil
    }, box)
    guard started == 0 else {
        Unmanaged<Box>.fromOpaque(box).release()
        printError("cannot start a thread: \(String(cString: strerror(started)))")
        exit(70)
    }
    pthread_detach(thread)
}
