import Foundation

/// The first thing each of `clients` has to say within `timeout` ms, read by `read`, by client index: which of
/// many connections were answered (refused, dropped) and which are still held.
func firstReplies(_ clients: [LineClient], timeout: Int32,
                  _ read: (LineClient) throws -> String) throws -> [Int: String] {
    var replies: [Int: String] = [:]
    var fds = clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    while poll(&fds, nfds_t(fds.count), timeout) > 0 {
        var any = false
        for (index, entry) in fds.enumerated() where entry.revents & Int16(POLLIN) != 0 && replies[index] == nil {
            replies[index] = try read(clients[index])
            any = true
        }
        fds = fds.enumerated().map { index, entry in
            pollfd(fd: entry.fd, events: replies[index] == nil ? Int16(POLLIN) : 0, revents: 0)
        }
        if !any { break }
    }
    return replies
}
