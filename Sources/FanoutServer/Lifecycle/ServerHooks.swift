/// What the daemon plugs into the server: the service manager, reloading, and the metrics backend.
struct ServerHooks {
    var notifier: ServiceNotifier?
    var configurationLoader: (() throws -> ServerConfiguration)?
    var metricsExposition: (() -> [UInt8])?
    var metricsBackend: (() -> () -> [UInt8])?
}
