@_spi(Bench) import FanoutEventLoop
import FanoutMQTT
#if canImport(Glibc)
import Glibc
#endif

/// A peer speaking MQTT 3.1.1, so that the same scenarios run against fanoutd's MQTT listener and against
/// Mosquitto: CONNECT (clean session, no keep-alive), then a SUBSCRIBE per subject at the run's QoS (the topic
/// is the subject's, `bench/<i>`; with a group, `$share/<group>/bench/<i>`), confirmed by its SUBACK. Once set
/// up, its connection goes to a `PublishPump` or a `DeliverySink`, which speak `WireFormat.mqtt`.
public final class MQTTPeer: ServerPeer, BenchPeer {
    private let qos: MQTTQoS
    private let group: String?
    private var decoder = MQTTDecoder(maxPacketSize: 1 << 20)
    private var nextPacketID: UInt16 = 1

    public init(loop: EventLoop, address: SocketAddress, qos: MQTTQoS, group: String? = nil) {
        self.qos = qos
        self.group = group
        super.init(loop: loop, address: address, name: "mqtt")
    }

    public var wireFormat: WireFormat { .mqtt(qos) }

    public func subscribe(_ subject: String, _ done: @escaping (String?) -> Void) {
        subscribeWaiters.append(done)
        let topic = MQTTFrames.topic(of: subject)
        var packet: [UInt8] = []
        let filter = group.map { "$share/\($0)/\(topic)" } ?? topic
        MQTTEncoder.encode(.subscribe(packetID: nextPacketID, subscriptions: [MQTTSubscription(filter: filter, qos: qos)]),
                           into: &packet)
        nextPacketID &+= 1
        socket?.write(packet)
    }

    public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        releasePeerSocket(&socket)
    }

    override public func socketDidConnect(_ socket: BufferedSocket) {
        socket.disableNagle()
        // Unique among the run's peers (each is its own object) and among runs (the process).
        let id = UInt(bitPattern: ObjectIdentifier(self).hashValue)
        socket.write(MQTTFrames.connect(clientID: "fanout-bench-\(getpid())-\(String(id, radix: 36))"))
    }

    override public func socketDidRead(_ socket: BufferedSocket) {
        var input: [UInt8] = []
        socket.readInput { chunk in
            input.append(contentsOf: chunk)
            return chunk.count
        }
        // Setup packets only (CONNACK, SUBACK): deliveries are read by a sink once released, and none comes
        // before every subscription is confirmed.
        var position = 0
        while position < input.count {
            let (step, used) = input.withUnsafeBytes { decoder.decode(UnsafeRawBufferPointer(rebasing: $0[position...])) }
            position += used
            switch step {
            case .needMore: return
            case .failure(let error): return (onFailure ?? { _ in })("mqtt: \(error)")
            case .packet(let packet): handle(packet)
            }
        }
    }

    private func handle(_ packet: MQTTPacket) {
        switch packet {
        case .connack(_, let code):
            let done = connectDone
            connectDone = nil
            done?(code == .accepted ? nil : "mqtt: CONNACK \(code.rawValue)")
        case .suback(_, let codes):
            guard !subscribeWaiters.isEmpty else { return }
            let waiter = subscribeWaiters.removeFirst()
            waiter(codes.contains(.failure) ? "mqtt: SUBACK refused the filter" : nil)
        default:
            break
        }
    }
}
