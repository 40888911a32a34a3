/// What the server tells a service manager (systemd) about its life. All calls come from the loop thread.
public protocol ServiceNotifier: AnyObject {
    /// Listening and serving (sent after start and after each reload).
    func ready(status: String)
    /// Re-reading the configuration.
    func reloading()
    /// Shutting down.
    func stopping()
    /// A one-line status for `systemctl status`.
    func status(_ text: String)
    /// Still alive.
    func watchdog()
    /// How often `watchdog()` is wanted, or nil for never.
    var watchdogInterval: Duration? { get }
}
