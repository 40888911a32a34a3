import Glibc

/// One client of a `ServerHarness`: the test's end of a socket pair whose other end the server accepted, read and
/// written by the harness between loop passes, on the test's thread.
///
/// What arrives is split into lines (LF stripped) and kept in `inbox` until the test takes it. A peer that
/// stops reading (`isReading = false`) leaves the server's output in the kernel, so that the server meets
/// backpressure as it would from a client that does not read; what the test sends and the kernel refuses
/// waits here and goes on each pass.
final class HarnessPeer {
    /// The test's end of the pair: non-blocking, closed by `close()` or the harness's shutdown.
    private(set) var fd: Int32
    /// The server's id for this connection (as `CLIENTS` and `ANSWER` pushes show it); 0 when it was refused.
    let id: UInt64
    /// The descriptor the server was handed (its end of the pair): the server owns and closes it.
    let serverEnd: Int32
    /// Complete lines received and not yet taken, oldest first.
    var inbox: ArraySlice<String> { lines[head...] }
    /// Lines received; those before `head` were taken (dropped from time to time, so a take is O(1)).
    private var lines: [String] = []
    private var head = 0
    /// Whether the harness reads this peer's socket on each pass.
    var isReading = true
    /// The server closed its end (end of file was read).
    private(set) var sawEnd = false
    /// Every byte received so far.
    private(set) var bytesReceived = 0
    private var partial: [UInt8] = []
    private var unsent: [UInt8] = []
    private var unsentStart = 0
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    init(fd: Int32, id: UInt64, serverEnd: Int32) {
        self.fd = fd
        self.id = id
        self.serverEnd = serverEnd
    }

    deinit { close() }

    /// Bytes written by the test that the kernel has not taken yet.
    var unsentCount: Int { unsent.count - unsentStart }

    /// Queues `text` to the server and writes what the kernel takes now; the rest goes on later passes.
    func send(_ text: String) {
        unsent.append(contentsOf: text.utf8)
        flush()
    }

    /// Writes queued bytes until the kernel refuses more.
    func flush() {
        while fd >= 0 && unsentStart < unsent.count {
            let written = unsent.withUnsafeBytes { bytes in
                Glibc.send(fd, bytes.baseAddress! + unsentStart, bytes.count - unsentStart, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { break }
            unsentStart += written
        }
        if unsentStart == unsent.count {
            unsent.removeAll(keepingCapacity: true)
            unsentStart = 0
        }
    }

    /// Reads what the kernel holds, when reading; splits it into lines.
    func receive() {
        guard isReading, fd >= 0, !sawEnd else { return }
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { sawEnd = true }
            guard count > 0 else { return }
            bytesReceived += count
            var start = 0
            for index in 0..<count where buffer[index] == UInt8(ascii: "\n") {
                partial.append(contentsOf: buffer[start..<index])
                lines.append(String(decoding: partial, as: UTF8.self))
                partial.removeAll(keepingCapacity: true)
                start = index + 1
            }
            partial.append(contentsOf: buffer[start..<count])
        }
    }

    /// Takes the oldest line of the inbox.
    func takeLine() -> String? {
        guard head < lines.count else { return nil }
        defer { taken(through: head) }
        return lines[head]
    }

    /// Takes the oldest reply (a line starting with `+` or `-ERR`), leaving pushes before it in place.
    func takeReply() -> String? {
        guard let index = inbox.firstIndex(where: Self.isReply) else { return nil }
        if index == head { return takeLine() }
        return lines.remove(at: index)
    }

    /// Takes the lines before the first `marker` and the marker itself; nil (taking nothing) while none came.
    func takeLines(before marker: String) -> [String]? {
        guard let index = inbox.firstIndex(of: marker) else { return nil }
        defer { taken(through: index) }
        return Array(lines[head..<index])
    }

    /// Takes every line of the inbox.
    func takeAll() -> [String] {
        defer { taken(through: lines.count - 1) }
        return Array(inbox)
    }

    private func taken(through index: Int) {
        head = index + 1
        if head == lines.count {
            lines.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 4096 && head * 2 >= lines.count {
            lines.removeFirst(head)
            head = 0
        }
    }

    /// The two `-ERR` lines that answer no command (a token's expiry, a revocation) are pushes.
    static func isReply(_ line: String) -> Bool {
        line.hasPrefix("+") || line.hasPrefix("-ERR") && !line.hasPrefix("-ERR auth-expired")
            && !line.hasPrefix("-ERR denied revoked:")
    }

    /// Closes the test's end: the server sees its peer go.
    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }
}
