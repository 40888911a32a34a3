/// What one user may take of the server, over all of its connections (a user is a users-file name, or a token's
/// `sub`). Without users there is no user, and these limit nothing.
public struct UserLimitSettings: Sendable, Equatable {
    /// Connections one user may hold at once; one more AUTH (or HTTP upgrade/stream) is refused with
    /// `-ERR limit` and the connection closed. nil (0 in the file) means off.
    public var maxConnectionsPerUser: Int?
    /// Messages per second one user may publish (PUB, BPUB, HTTP publish), as a token bucket; a publish over
    /// it is answered `-ERR limit` and not published. nil (0 in the file) means off.
    public var publishRate: Int?
    /// How many publishes a user may make at once before the rate holds; nil means the rate.
    public var publishBurst: Int?

    public init() {}

    /// The bucket's size: the burst, or one second's worth at the rate.
    public var burst: Int { publishBurst ?? publishRate ?? 0 }

    /// Rates and bursts up to this: a bucket counts in Double, and a larger rate is no limit on one loop.
    static let largest = 1_000_000_000

    func problems() -> [String] {
        var found: [String] = []
        if let maxConnectionsPerUser, maxConnectionsPerUser < 1 {
            found.append("max_connections_per_user: must be at least 1, or 0 for off")
        }
        if let publishRate, publishRate < 1 || publishRate > Self.largest {
            found.append("user_publish_rate: must be 0 (off) ... \(Self.largest) messages per second")
        }
        if let publishBurst, publishBurst < 1 || publishBurst > Self.largest {
            found.append("user_publish_burst: must be 1 ... \(Self.largest) messages")
        }
        return found
    }
}
