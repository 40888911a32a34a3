import FanoutEventLoop
import FanoutTestSupport
import Glibc
import Testing

@Suite("BufferedSocket's size")
struct SocketFootprintTests {
    /// A server holds a socket per connection: its fields are ordered to fit glibc's 96-byte chunks (88 usable
    /// bytes), where a field out of place takes it to the 112- or 128-byte ones.
    @Test func aSocketFitsA96ByteChunk() throws {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        let loop = try EventLoop()
        let socket = try BufferedSocket(loop: loop, fd: fds[0])
        #expect((1...88).contains(mallocUsableSize(of: socket)))
    }
}
