import FanoutEventLoop
import FanoutHTTP

extension Server {
    /// Serves `/metrics` and `/healthz` on `metrics_listen`, when set.
    func startHTTP() throws {
        guard let text = configuration.listeners.metricsListen else {
            metrics = nil
            return
        }
        if metrics == nil {
            // The backend first: metrics made before the bootstrap would go to swift-metrics' no-op handler.
            if metricsExposition == nil, let start = metricsBackend { metricsExposition = start() }
            metrics = ServerMetrics()
        }
        let front = try HTTPFront(loop: loop, address: try SocketAddress(parsing: text), routes: [
            "/metrics": { [unowned self] in self.metricsResponse() },
            "/healthz": { [unowned self] in self.healthResponse() },
        ])
        httpFront = front
        logger.notice("serving metrics on http://\(front.address)/metrics")
    }

    private func metricsResponse() -> HTTPServer.Response {
        metrics?.sync(stats, clients: connections.count, subscriptionCount: subscriptionCount,
                      subjectCount: index.storedPatternCount,
                      pendingBytes: connections.values.reduce(0) { $0 + $1.pendingBytes })
        metrics?.sync(memoryDrops: backlogWatch.drops, history: engine.historyFigures)
        return HTTPServer.Response(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                   body: metricsExposition?() ?? [])
    }

    private func healthResponse() -> HTTPServer.Response {
        isShuttingDown
            ? HTTPServer.Response(status: 503, body: Array("shutting down\n".utf8))
            : HTTPServer.Response(status: 200, body: Array("ok\n".utf8))
    }
}
