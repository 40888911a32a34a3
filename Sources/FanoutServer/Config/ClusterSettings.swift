import FanoutRedis

/// The `cluster:` section: several fanoutd nodes share subjects, their order and their history through Redis
/// primaries. Absent (nil in `ServerConfiguration`), the node is standalone and nothing here applies.
public struct ClusterSettings: Sendable, Equatable {
    /// Independent Redis primaries (`redis://[:password@]host[:port]`); each subject lives on one, by hash.
    /// Every node must list the same URLs in the same order, or they disagree on where subjects live.
    public var redis: [String] = []
    /// A password for every URL that has none, read from a file (systemd's LoadCredential=) at load time.
    public var redisPassword: String?
    /// Where the password came from, for `--check-config` (never the password itself).
    public var redisPasswordFile: String?
    /// A subject's keys in Redis (numbering, history) expire after it has been idle this long; each publish
    /// refreshes it, and it is never shorter than the subject's history rule's max_age.
    public var idleExpiry: Duration = .seconds(86_400)
    /// PUBs in flight per shard above which new ones answer `-ERR unavailable`.
    public var maxInFlight = 1000
    /// How often a node checks each shard's two connections (a PUBLISH to itself).
    public var heartbeat: Duration = .milliseconds(500)
    /// Silence after which a shard counts as down: its PUBs answer `-ERR unavailable` and it is reconnected.
    public var downAfter: Duration = .seconds(2)
    /// How long a node's presence members outlive its last lease renewal (each heartbeat renews it): a node
    /// silent this long is lost, and one survivor announces its members' leaves (`reason=node-lost`).
    public var presenceLease: Duration = .seconds(3)

    public init() {}

    /// The endpoints, passwords included; throws for a URL that does not parse.
    public func endpoints() throws(RedisFailure) -> [RedisEndpoint] {
        var endpoints: [RedisEndpoint] = []
        for url in redis {
            var endpoint = try RedisEndpoint(url: url)
            if endpoint.password == nil { endpoint.password = redisPassword }
            endpoints.append(endpoint)
        }
        return endpoints
    }

    func problems() -> [String] {
        var found: [String] = []
        if redis.isEmpty { found.append("cluster: redis: list at least one redis:// URL") }
        do {
            let endpoints = try endpoints()
            if Set(endpoints.map(\.description)).count != endpoints.count {
                found.append("cluster: redis: the same server is listed twice")
            }
        } catch {
            found.append("cluster: redis: \(error)")
        }
        if idleExpiry < .seconds(1) { found.append("cluster: idle_expiry: must be at least 1 second") }
        if maxInFlight < 1 { found.append("cluster: max_in_flight: must be at least 1") }
        if heartbeat < .milliseconds(10) { found.append("cluster: heartbeat: must be at least 0.01 seconds") }
        if downAfter <= heartbeat { found.append("cluster: down_after: must be longer than heartbeat") }
        if presenceLease < heartbeat * 3 {
            found.append("cluster: presence_lease: must be at least 3 heartbeats (\(heartbeat * 3))")
        }
        return found
    }
}
