import Metrics
import Prometheus

/// swift-metrics with the Prometheus backend, set up the first time `metrics_listen` is set (at start or on a
/// reload): a daemon that serves no metrics never builds the registry.
enum PrometheusBackend {
    /// Bootstraps the metrics system with a fresh registry and returns what renders it for `/metrics`. Call it
    /// once: the metrics system takes one bootstrap per process.
    static func start() -> () -> [UInt8] {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["fanout_publish_to_write_seconds"] = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        MetricsSystem.bootstrap(factory)
        return {
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return buffer
        }
    }
}
