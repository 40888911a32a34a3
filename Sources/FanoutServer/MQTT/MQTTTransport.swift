import FanoutEventLoop
import FanoutMQTT
import FanoutProtocol

/// The MQTT 3.1.1 transport (`docs/mqtt.md`): packets in, each turned into the protocol lines that do its work
/// (CONNECT an `AUTH`, SUBSCRIBE a `SUB` or `QSUB` per filter, PUBLISH a `PUB` or `BPUB`) run by the same
/// dispatcher as every other transport's, their replies turned into MQTT's acknowledgements; `MSG` and `BMSG`
/// pushes out as PUBLISH packets. So limits, permissions, presence, slow consumers and the rest are the line
/// protocol's.
final class MQTTTransport: TransportAdapter {
    init(limits: Limits) {}
}
