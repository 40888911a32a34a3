/// A hash map in 256 independent shards, for tables that clients can grow to millions of entries on the
/// event loop: a Swift dictionary grows by rehashing every entry at once, which at a million entries stops
/// the loop for hundreds of milliseconds.
///
/// Worst case: a lookup or update hashes the key twice (shard, then bucket) and is O(1); an insertion that
/// grows a shard rehashes that shard alone, at most 1/256 of the entries (about 4,000 of a million).
public struct ShardedDictionary<Key: Hashable, Value> {
    public static var shardCount: Int { 256 }
    private var shards: [[Key: Value]]

    public init() {
        shards = Array(repeating: [:], count: Self.shardCount)
    }

    @inline(__always)
    private func shard(of key: Key) -> Int {
        key.hashValue & (Self.shardCount - 1)
    }

    public subscript(key: Key) -> Value? {
        get { shards[shard(of: key)][key] }
        set { shards[shard(of: key)][key] = newValue }
    }

    /// Entries in all shards. O(shards).
    public var count: Int { shards.reduce(0) { $0 + $1.count } }
}
