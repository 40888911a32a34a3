import Foundation
import Testing

/// Helpers of the presence (1.3) tests: a daemon that keeps presence, a client's id as the server names it, and
/// the joins and leaves a watcher reads.
enum PresenceRig {
    /// A daemon with presence.yaml (chat.> and many.> keep presence, every $presence. subject keeps history).
    static func daemon(arguments: [String] = [], environment: [String: String] = [:]) throws -> Daemon {
        try Daemon(arguments: ["--config", try fixture("presence.yaml")] + arguments, environment: environment)
    }

    /// The id the server gave `client`, read from CLIENTS (asked on `asking`) by the client's local port.
    static func id(of client: LineClient, asking: LineClient) throws -> UInt64 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client.fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let listing = try asking.command("CLIENTS")
        for word in listing.split(separator: " ").dropFirst(2) {
            let fields = word.split(separator: ",")
            if fields.contains("addr=127.0.0.1:\(port)"), let id = fields.first?.dropFirst(3), let number = UInt64(id) {
                return number
            }
        }
        throw TestFailure("no CLIENTS entry for port \(port) in \(listing)")
    }

    /// The next `count` lines `watcher` reads.
    static func read(_ count: Int, from watcher: LineClient) throws -> [String] {
        try (0..<count).map { _ in try watcher.readLine() }
    }

    /// `line` with a leave's since_s written `*`: how long a membership lasted depends on the machine's speed,
    /// the rest of the payload does not. A join's since_s (always 0) is left as it is.
    static func timeless(_ line: String) -> String {
        guard line.contains(" leave "),
              let range = line.range(of: #"since_s=[0-9]+"#, options: .regularExpression) else { return line }
        return line.replacingCharacters(in: range, with: "since_s=*")
    }

    /// The next `count` lines `watcher` reads, `timeless`.
    static func readTimeless(_ count: Int, from watcher: LineClient) throws -> [String] {
        try read(count, from: watcher).map(timeless)
    }
}
