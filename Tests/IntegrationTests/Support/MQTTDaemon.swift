import Foundation
import Testing

extension Daemon {
    /// Starts fanoutd with its protocol listener and an MQTT listener (`mqtt_listen`), both on ports the kernel
    /// chooses, and returns it with the MQTT port (read from its "listening on ... (mqtt)" line).
    static func withMQTT(arguments: [String] = [], environment: [String: String] = [:]) throws -> (Daemon, Int) {
        var environment = environment
        if environment["FANOUTD_MQTT_LISTEN"] == nil { environment["FANOUTD_MQTT_LISTEN"] = "127.0.0.1:0" }
        let daemon = try Daemon(arguments: arguments, environment: environment)
        let line = try daemon.stderr.waitForLine(containing: "(mqtt", timeout: 20)
        guard let address = line.components(separatedBy: "listening on ").last?.split(separator: " ").first,
              let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            throw TestFailure("cannot read the MQTT port from: \(line)")
        }
        return (daemon, port)
    }
}
