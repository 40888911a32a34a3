import FanoutEngine
import FanoutMQTT

/// Wills (MQTT-3.1.2-8): published on the next loop pass, never where the connection ends, which may be inside
/// a fan-out (a slow consumer dropped mid-run), through the engine's publish path as the server's own
/// publishes (`Fanout.publishOwn`), as presence publishes joins and leaves.
extension MQTTSessions {
    struct QueuedWill {
        let will: MQTTWill
        let subject: String
    }

    /// Past this many wills waiting, the oldest is dropped (logged once per pass): one will per connection
    /// that ended since the last pass, so only a mass departure of more than this many connections within one
    /// pass reaches it. Bound: this many wills, each at most max_payload bytes (its connection's CONNECT held
    /// it before).
    static let maxQueuedWills = 65_536

    /// Publishes a will on the next loop pass, as its client would have (retained when asked).
    func publishWill(_ will: MQTTWill, subject: String) {
        if wills.count >= Self.maxQueuedWills {
            if !willsOverflowed {
                willsOverflowed = true
                host.logger.warning("MQTT wills: \(wills.count) waiting for one pass; dropping the oldest")
            }
            wills.removeFirst()
        }
        wills.append(QueuedWill(will: will, subject: subject))
        willTimer.schedule(on: host.loop) { [unowned self] in self.publishWills() }
    }

    /// Whether wills wait for their pass.
    var hasQueuedWills: Bool { !wills.isEmpty }

    /// Publishes every will queued, in the order they came. A will the engine refuses (several nodes: a shard
    /// that is away) is dropped and logged, as a client's PUB would be refused.
    func publishWills() {
        willsOverflowed = false
        guard !wills.isEmpty else { return }
        let host = self.host
        let fanout = host.fanout
        // No client's publish run may take these as its own.
        fanout.finish()
        while let queued = wills.popFirst() {
            let will = queued.will
            let outcome = Array(queued.subject.utf8).withUnsafeBytes { subject in
                will.message.withUnsafeBytes { payload in
                    let outcome = fanout.publishOwn(subject: subject, payload: payload, anyBytes: true, qos: will.qos,
                                                    receipt: (self, 0))
                    // The run goes out while the bytes it points at are still here.
                    fanout.close()
                    return outcome
                }
            }
            if case .refused(let reason) = outcome {
                host.logger.warning("MQTT will not published: \(reason)", metadata: ["subject": "\(queued.subject)"])
                continue
            }
            host.mqttStats.willsPublished &+= 1
            if will.retain {
                host.mqttRetained.retain(subject: queued.subject, payload: will.message, qos: will.qos)
            }
        }
        host.readEnded()
    }
}
