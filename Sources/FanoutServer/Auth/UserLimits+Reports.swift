import Metrics

extension UserLimits {
    /// INFO's fields: the settings (0 = off) and the refusals since start.
    func infoFields(_ settings: UserLimitSettings) -> [InfoFields.Field] {
        [
            ("max_connections_per_user", settings.maxConnectionsPerUser ?? 0),
            ("user_publish_rate", settings.publishRate ?? 0),
            ("user_publish_burst", settings.publishRate == nil ? 0 : settings.burst),
            ("user_connection_refusals", connectionRefusals),
            ("user_publish_refusals", publishRefusals),
        ]
    }

    /// `/metrics`' counters of the refusals, moved up to the component's on each read.
    final class Metrics {
        private let connectionRefusals = Counter(label: "fanout_user_connection_refusals_total")
        private let publishRefusals = Counter(label: "fanout_user_publish_refusals_total")
        private var reportedConnections: UInt64 = 0
        private var reportedPublishes: UInt64 = 0

        func sync(_ limits: UserLimits) {
            connectionRefusals.increment(by: Int64(limits.connectionRefusals &- reportedConnections))
            publishRefusals.increment(by: Int64(limits.publishRefusals &- reportedPublishes))
            reportedConnections = limits.connectionRefusals
            reportedPublishes = limits.publishRefusals
        }
    }
}
