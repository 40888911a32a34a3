@testable import FanoutServer
import Logging
import Testing

/// Reloading, on a server built in the test process: what the service manager is told, and that a
/// configuration is taken whole or not at all.
@Suite("Lifecycle reload")
struct LifecycleReloadTests {
    private final class Notes: ServiceNotifier {
        var said: [String] = []
        func ready(status: String) { said.append("ready \(status)") }
        func reloading() { said.append("reloading") }
        func stopping() { said.append("stopping") }
        func status(_ text: String) { said.append("status") }
        func watchdog() { said.append("watchdog") }
        var watchdogInterval: Duration? { nil }
    }

    private func server() throws -> (Server, Notes) {
        // Nothing is bound: the server is not started, and a reload that keeps `listen` binds nothing.
        let server = try Server(configuration: ServerConfiguration(), logger: Logger(label: "test"))
        let notes = Notes()
        server.notifier = notes
        return (server, notes)
    }

    @Test func aValidConfigurationIsAppliedAndTheManagerToldAroundIt() throws {
        let (server, notes) = try server()
        var fresh = server.configuration
        fresh.limits.maxMemory = 256 << 20
        fresh.logLevel = .debug
        server.configurationLoader = { fresh }
        server.lifecycle.reload()
        #expect(server.configuration == fresh)
        #expect(server.logger.logLevel == .debug)
        #expect(notes.said == ["reloading", "ready clients=0 subjects=0 msgs/s=0"])
    }

    @Test func anInvalidConfigurationIsRejectedWhole() throws {
        let (server, notes) = try server()
        let running = server.configuration
        var fresh = running
        fresh.limits.maxMemory = 256 << 20
        fresh.serverName = ""
        server.configurationLoader = { fresh }
        server.lifecycle.reload()
        #expect(server.configuration == running, "nothing of a configuration with problems is taken")
        #expect(notes.said == ["reloading", "ready clients=0 subjects=0 msgs/s=0"], "still ready after a refusal")
    }

    @Test func withoutASourceNothingIsReloadedOrAnnounced() throws {
        let (server, notes) = try server()
        let running = server.configuration
        server.lifecycle.reload()
        #expect(server.configuration == running)
        #expect(notes.said.isEmpty)
    }
}
