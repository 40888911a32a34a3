import Foundation

/// A pipe whose ends are close-on-exec, so that processes spawned by other tests running in parallel do
/// not inherit them (an inherited write end would keep a reader from ever seeing end of file). The child
/// that is meant to use an end gets it through Process's dup2, which clears the flag on the copy.
struct CloexecPipe {
    let read: FileHandle
    let write: FileHandle

    init() throws {
        // A stream socketpair created close-on-exec atomically (Glibc's pipe2 is not visible to Swift).
        var fds: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw TestFailure("socketpair: errno \(errno)") }
        shutdown(fds[0], Int32(SHUT_WR))
        shutdown(fds[1], Int32(SHUT_RD))
        read = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        write = FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
    }
}
