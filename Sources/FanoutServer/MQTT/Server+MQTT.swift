import FanoutEventLoop

extension Server: MQTTSessionsHost, MQTTRetainedHost {
    /// A connection accepted on an MQTT listener: the same limits as the protocol's listeners, then an
    /// `MQTTTransport` adapter speaks MQTT to it.
    func acceptMQTT(fd: Int32, peer: SocketAddress, tls: Bool) {
        accept(fd: fd, peer: peer, tls: tls, transport: tls ? .mqttTLS : .mqtt)
    }
}
