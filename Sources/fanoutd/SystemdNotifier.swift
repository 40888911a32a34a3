import FanoutServer
import FanoutSystemd

/// Tells systemd about the server through sd_notify (no-ops when not started by systemd).
final class SystemdNotifier: ServiceNotifier {
    func ready(status: String) { ServiceManager.notify("READY=1\nSTATUS=\(status)") }
    func reloading() { ServiceManager.notify("RELOADING=1") }
    func stopping() { ServiceManager.notify("STOPPING=1") }
    func status(_ text: String) { ServiceManager.notify("STATUS=\(text)") }
    func watchdog() { ServiceManager.notify("WATCHDOG=1") }
    var watchdogInterval: Duration? { ServiceManager.watchdogInterval }
}
