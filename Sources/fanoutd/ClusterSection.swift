import FanoutConfig
import FanoutServer

/// The `cluster:` mapping of the configuration file:
///
///     cluster:
///       redis: ["redis://127.0.0.1:6379", "redis://10.0.0.2:6379"]   # independent primaries
///       redis_password_file: redis.password   # optional (relative: under $CREDENTIALS_DIRECTORY); or redis://:secret@host
///       idle_expiry: 86400     # seconds a subject's keys live in Redis after its last publish
///       max_in_flight: 1000    # PUBs in flight per shard before -ERR unavailable
///       heartbeat: 0.5         # seconds between checks of each shard's connections
///       down_after: 2          # seconds of silence before a shard counts as down
///       presence_lease: 3      # seconds a node's presence members outlive its last heartbeat
///
/// Absent: the node is standalone (the in-memory engine).
enum ClusterSection {
    static func read(_ section: YAMLNode?, in document: YAMLDocument) throws -> ClusterSettings? {
        guard let section, section != .null else { return nil }
        func problem(_ field: String?, _ text: String) -> ConfigProblem {
            let line = field.flatMap { document.line(of: "cluster." + $0) } ?? document.line(of: "cluster")
            return ConfigProblem(line: line, "cluster\(field.map { "." + $0 } ?? ""): \(text)")
        }
        guard case .mapping(let fields) = section else {
            throw problem(nil, "expected a map with redis: [URLs], found \(section.foundDescription)")
        }
        try SettingNames.checkSection(fields, path: "cluster", known: Setting.clusterKeys, in: document)
        var settings = ClusterSettings()
        switch fields["redis"] {
        case .scalar(let url)?:
            settings.redis = [url]
        case .sequence(let items)?:
            settings.redis = try items.map { item in
                guard case .scalar(let url) = item else {
                    throw problem("redis", "expected a list of redis:// URLs, found \(item.foundDescription) in it")
                }
                return url
            }
        default:
            throw problem("redis", "expected a list of redis:// URLs, found \(fields["redis"]?.foundDescription ?? "nothing")")
        }
        if case .scalar(let path)? = fields["redis_password_file"] {
            // A relative path is looked up in systemd's credentials directory when there is one.
            var resolved = path
            if !path.hasPrefix("/"), let credentials = TextFile.environment("CREDENTIALS_DIRECTORY") {
                resolved = credentials + "/" + path
            }
            var password: String
            do {
                password = try TextFile.read(resolved)
            } catch {
                throw problem("redis_password_file", "cannot read \(resolved)")
            }
            while password.last?.isNewline == true { password.removeLast() }
            settings.redisPassword = password.isEmpty ? nil : password
            settings.redisPasswordFile = resolved
        }
        func seconds(_ key: String) throws -> Duration? {
            guard case .scalar(let text)? = fields[key] else { return nil }
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
                throw problem(key, "expected a number of seconds, found '\(text)'")
            }
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        if let expiry = try seconds("idle_expiry") { settings.idleExpiry = expiry }
        if let heartbeat = try seconds("heartbeat") { settings.heartbeat = heartbeat }
        if let downAfter = try seconds("down_after") { settings.downAfter = downAfter }
        // Unset, the lease is 3 seconds, or 3 heartbeats when they are longer: a slow heartbeat stays valid.
        settings.presenceLease = try seconds("presence_lease") ?? max(settings.presenceLease, settings.heartbeat * 3)
        if case .scalar(let text)? = fields["max_in_flight"] {
            guard let value = Int(text) else { throw problem("max_in_flight", "expected a whole number, found '\(text)'") }
            settings.maxInFlight = value
        }
        return settings
    }

    /// The `--check-config` lines, without any password.
    static func describe(_ settings: ClusterSettings?) -> String {
        guard let settings else { return "cluster: off (standalone)" }
        let shards = (try? settings.endpoints().map(\.description)) ?? settings.redis
        let password = settings.redisPasswordFile.map { "from \($0)" }
            ?? ((try? settings.endpoints().contains { $0.password != nil }) == true ? "in URL" : "none")
        return """
            cluster: \(shards.count) shard(s): \(shards.joined(separator: ", "))
            cluster_redis_password: \(password)
            cluster_idle_expiry: \(settings.idleExpiry.components.seconds)
            cluster_max_in_flight: \(settings.maxInFlight)
            cluster_heartbeat: \(settings.heartbeat)
            cluster_down_after: \(settings.downAfter)
            cluster_presence_lease: \(settings.presenceLease)
            """
    }
}
