import Foundation

/// A TCP proxy on a loopback port chosen by the kernel that forwards every connection to `127.0.0.1:<target>`
/// and can cut them all at once, as a flaky network does: `cut()` resets both sides of every current pair, so
/// the client sees its connection drop (and reconnects through the proxy) and the server sees it go.
///
/// Threads: one accepts; each pair has two that pump bytes, one per direction, with blocking calls. A pump
/// never closes a descriptor another thread may still use: `cut` and the pumps only shut sockets down (which
/// wakes blocked calls), and the last pump of a pair to finish closes both.
final class CuttingProxy: @unchecked Sendable {
    let port: Int
    /// What the threads share; the proxy's deinit stops it (the threads hold this, not the proxy).
    private let core: Core

    init(forwardingTo target: Int) throws {
        let (listener, port) = try LoopbackListener.open(backlog: 64)
        self.port = port
        core = Core(listener: listener, target: target)
        let core = self.core
        Thread.detachNewThread { core.acceptLoop() }
    }

    deinit { core.stop() }

    /// Cuts every current connection. With `holding`, connections made from now on wait until `release()`.
    func cut(holding: Bool = false) { core.cut(holding: holding) }

    /// Lets held connections through.
    func release() { core.release() }

    /// Holds what clients send from now on (replies still flow): each chunk is noted and kept, and the pumps
    /// go on reading (so that a later request is noted too, behind an earlier one), until `releaseUpstream()`
    /// sends what was kept, in order. For placing an event between a request and its reply.
    func holdUpstream() { core.setHoldingUpstream(true) }

    func releaseUpstream() { core.setHoldingUpstream(false) }

    /// Waits until bytes held upstream contain `text`.
    func waitForHeld(containing text: String, timeout: TimeInterval) throws {
        guard core.waitForHeld(containing: Array(text.utf8), until: Date().addingTimeInterval(timeout)) else {
            throw TestFailure("no \(text) held upstream within \(timeout)s")
        }
    }

    /// Connections forwarded so far.
    var accepted: Int { core.acceptedCount }

    /// Waits until `count` connections have been forwarded since the start.
    func waitForConnections(_ count: Int, timeout: TimeInterval) throws {
        guard core.waitForAccepted(count, until: Date().addingTimeInterval(timeout)) else {
            throw TestFailure("\(count) connections through the proxy expected within \(timeout)s, saw \(accepted)")
        }
    }
}

private final class Core: @unchecked Sendable {
    private let listener: Int32
    private let target: Int
    private let lock = NSCondition()
    private var pairs: [Pair] = []
    /// While set, accepted connections wait before being forwarded (the client hears no greeting yet).
    private var holding = false
    private var stopped = false
    private var accepted = 0
    /// While set, what clients send is kept in its pair's `pending`, and noted in `held`.
    private var holdingUpstream = false
    private var held: [UInt8] = []

    init(listener: Int32, target: Int) {
        self.listener = listener
        self.target = target
    }

    private final class Pair: @unchecked Sendable {
        let client: Int32
        let server: Int32
        private let lock = NSLock()
        private var running = 2
        /// Held upstream bytes not yet sent, and the lock for sending to `server`: the pump and
        /// `releaseUpstream` both send through `sendUpstream`, so the bytes keep their order.
        private let sendLock = NSLock()
        private var pending: [UInt8] = []

        func keep(_ chunk: ArraySlice<UInt8>) {
            sendLock.lock()
            pending.append(contentsOf: chunk)
            sendLock.unlock()
        }

        /// Sends what was kept, then `chunk`; false when the server side is gone.
        @discardableResult
        func sendUpstream(_ chunk: ArraySlice<UInt8> = []) -> Bool {
            sendLock.lock()
            defer { sendLock.unlock() }
            let bytes = pending + chunk
            pending.removeAll()
            return Core.sendAll(bytes[...], to: server)
        }

        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }

        /// Resets both sockets: SO_LINGER 0 turns the final close into a RST, and the shutdown wakes the pumps.
        /// Under the lock, so that it never touches descriptors that the pumps closed (and the numbers reused).
        func cut() {
            lock.lock()
            defer { lock.unlock() }
            guard running > 0 else { return }
            var option = linger(l_onoff: 1, l_linger: 0)
            for fd in [client, server] {
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
                shutdown(fd, Int32(SHUT_RDWR))
            }
        }

        /// A pump is done; the last one closes both sockets.
        func pumpEnded() {
            lock.lock()
            defer { lock.unlock() }
            running -= 1
            if running == 0 {
                Glibc.close(client)
                Glibc.close(server)
            }
        }
    }

    var acceptedCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return accepted
    }

    func setHoldingUpstream(_ hold: Bool) {
        lock.lock()
        holdingUpstream = hold
        if hold { held.removeAll() }
        let current = pairs
        lock.broadcast()
        lock.unlock()
        if !hold { for pair in current { pair.sendUpstream() } }
    }

    func waitForHeld(containing text: [UInt8], until deadline: Date) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        while held.firstRange(of: text) == nil {
            if !lock.wait(until: deadline) { return held.firstRange(of: text) != nil }
        }
        return true
    }

    /// Called by a client-to-server pump with a chunk it read: true when upstream is held, and the chunk
    /// was kept in `pair` (and noted) instead of sent.
    private func keepIfHeld(_ chunk: ArraySlice<UInt8>, in pair: Pair) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard holdingUpstream else { return false }
        held.append(contentsOf: chunk)
        pair.keep(chunk)
        lock.broadcast()
        return true
    }

    /// Sends all of `bytes`; false when the peer is gone.
    static func sendAll(_ bytes: ArraySlice<UInt8>, to destination: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let written = bytes[(bytes.startIndex + sent)...].withUnsafeBytes {
                send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }
            sent += written
        }
        return true
    }

    func waitForAccepted(_ count: Int, until deadline: Date) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        while accepted < count {
            if !lock.wait(until: deadline) { return accepted >= count }
        }
        return true
    }

    func stop() {
        lock.lock()
        stopped = true
        holding = false
        let current = pairs
        pairs = []
        lock.broadcast()
        lock.unlock()
        // Wakes the accept call; the accepting thread closes the listener.
        shutdown(listener, Int32(SHUT_RDWR))
        for pair in current { pair.cut() }
    }

    func cut(holding hold: Bool) {
        lock.lock()
        let current = pairs
        pairs = []
        holding = hold
        lock.unlock()
        for pair in current { pair.cut() }
    }

    func release() {
        lock.lock()
        holding = false
        lock.broadcast()
        lock.unlock()
    }

    func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // Out of descriptors for a moment: tests running beside this one (thousands of connections) share
                // the process's table. Accepting stops only when the listener is shut down.
                if errno == EMFILE || errno == ENFILE {
                    usleep(10_000)
                    continue
                }
                break
            }
            // Not inherited by processes other tests spawn (accept4 is not visible to Swift).
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            lock.lock()
            while holding && !stopped { lock.wait() }
            let stop = stopped
            lock.unlock()
            guard !stop, let server = try? connectToTarget() else {
                Glibc.close(client)
                if stop { break } else { continue }
            }
            let pair = Pair(client: client, server: server)
            lock.lock()
            pairs.append(pair)
            accepted += 1
            lock.broadcast()
            lock.unlock()
            Thread.detachNewThread { self.pump(from: client, to: server, pair: pair) }
            Thread.detachNewThread { self.pump(from: server, to: client, pair: pair) }
        }
        Glibc.close(listener)
    }

    private func connectToTarget() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(target).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            Glibc.close(fd)
            throw TestFailure("proxy cannot reach port \(target): errno \(errno)")
        }
        return fd
    }

    /// Copies bytes until either side ends; then ends the other direction too, as a peer's close would.
    private func pump(from source: Int32, to destination: Int32, pair: Pair) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        copying: while true {
            let count = chunk.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            if source == pair.client {
                if keepIfHeld(chunk[0..<count], in: pair) { continue }
                if !pair.sendUpstream(chunk[0..<count]) { break copying }
            } else if !Core.sendAll(chunk[0..<count], to: destination) {
                break copying
            }
        }
        shutdown(destination, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
        pair.pumpEnded()
    }
}
