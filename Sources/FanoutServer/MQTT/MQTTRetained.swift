import FanoutMQTT
import Logging

/// What the retained messages need of the server.
protocol MQTTRetainedHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var logger: Logger { get }
    var mqttStats: MQTTStats { get set }
}

/// MQTT's retained messages (section 3.3.1.3): the last retained PUBLISH of each subject, given to each new
/// subscription that matches it and to `LAST <subject>` on a subject without history. Bounded by
/// `mqtt_max_retained` and counted in max_memory.
final class MQTTRetained {
    unowned let host: any MQTTRetainedHost

    init(host: any MQTTRetainedHost) {
        self.host = host
    }

    /// A retained PUBLISH to `subject`: its payload becomes the subject's retained message; an empty one
    /// clears it (MQTT-3.3.1-10).
    /// `qos` is the PUBLISH's: a new subscription gets it at the lower of that and its own.
    func retain(subject: String, payload: [UInt8], qos: MQTTQoS) {}

    /// Calls `body` with each retained message a new subscription of `filter` receives (MQTT-3.3.1-6), in no
    /// particular order.
    func forEach(matching filter: MQTTFilterPatterns,
                 _ body: (_ subject: String, _ payload: [UInt8], _ qos: MQTTQoS) -> Void) {}

    /// Retained messages kept.
    var count: Int { 0 }

    func tearDown() {}
}
