/// The connection table: the only strong owner of every client connection, with what is counted over it.
struct ConnectionTable {
    private var byID: [UInt64: ClientConnection] = [:]
    private(set) var nextID: UInt64 = 1
    /// Live connections per peer host, for max_connections_per_ip.
    var perHost: [String: Int] = [:]
    /// Live connection objects: equal to `count` between callbacks, or something leaks.
    let census = ObjectCensus()
    /// Subscriptions held by live connections.
    var subscriptionCount = 0

    subscript(id: UInt64) -> ClientConnection? {
        get { byID[id] }
        set { byID[id] = newValue }
    }

    var count: Int { byID.count }
    var isEmpty: Bool { byID.isEmpty }
    var values: Dictionary<UInt64, ClientConnection>.Values { byID.values }
    var ids: Dictionary<UInt64, ClientConnection>.Keys { byID.keys }

    /// A new connection's id: never reused while the server runs.
    mutating func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    mutating func removeAll() {
        byID.removeAll()
        perHost.removeAll()
    }
}
