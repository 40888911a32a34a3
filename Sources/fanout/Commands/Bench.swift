import ArgumentParser
import FanoutBench
import FanoutEventLoop
import FanoutMQTT
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate load and measure throughput, loss and latency.",
        discussion: """
            Connects the subscribers (subscriber i listens to subject bench.<i mod subjects>) and waits \
            until every subscription is confirmed, then publishes --messages messages round-robin over the \
            subjects, each publisher keeping at most --window publishes unacknowledged (or pacing to \
            --rate). Each payload carries its send time, so subscribers measure publish-to-receive latency.

              fanout bench --subscribers 100 --messages 200000
              fanout bench --subjects 1000 --subscribers 1000
              fanout bench --rate 2000 --subscribers 50 --messages 20000
              fanout bench --subscribers 75 --stalled 25      healthy rate with stalled peers
              fanout bench --protocol redis --server 127.0.0.1:6379
              fanout bench --compare-redis 127.0.0.1:6379     both servers, one table
              fanout bench --transport websocket --http-server 127.0.0.1:7412
                                                              TCP, then WebSocket subscribers, one table
              fanout bench --subscribers 10 --group workers   one QSUB group of 10 (1.2)
              fanout bench --protocol nats --server 127.0.0.1:4222 --subscribers 10 --group workers
              fanout bench --protocol mqtt --server 127.0.0.1:1883 --mqtt-qos 1 --subscribers 100
              fanout bench --ask --subscribers 1 --max-answers 1 --messages 20000
                                                              request/reply: ASK to DONE (1.2)
              fanout bench --ask --subscribers 100 --window 1 gathering: 100 answers per question
              fanout bench --bpub --payload 65536             BPUB, pushed as BMSG (1.2)

            With --ask, the subscribers are responders that answer every question on bench.0 with its \
            payload, and the publishers are askers keeping --window questions open: PUBLISHED/S is questions \
            closed per second, DELIVERED/S answers per second, and the latency is from ASK to DONE (NATS: \
            from the request to its first reply on an _INBOX subject).
            """
    )

    enum WireProtocol: String, ExpressibleByArgument, CaseIterable {
        case fanout, redis, nats, mqtt
    }

    enum SubscriberTransport: String, ExpressibleByArgument, CaseIterable {
        case tcp, websocket, sse
    }

    @OptionGroup var connection: ConnectionOptions
    @Option(name: .long, help: "Publishing connections.") var publishers = 1
    @Option(name: .long, help: "Subscribing connections.") var subscribers = 10
    @Option(name: .long, help: "Extra subscribers that subscribe, then never read (slow-consumer scenarios).")
    var stalled = 0
    @Option(name: .long, help: "Subjects (bench.0, bench.1, ...).") var subjects = 1
    @Option(name: .long, help: "Payload size in bytes (at least 19: the send time).") var payload = 100
    @Option(name: .long, help: "Messages to publish in all.") var messages = 100_000
    @Option(name: .long, help: "Publishes per second in all; 0 means as fast as the window allows.") var rate = 0
    @Option(name: .long, help: "Unacknowledged publishes per publisher.") var window = 100
    @Option(name: .long, help: "fanout, redis (SUBSCRIBE/PUBLISH over RESP), nats (core NATS: SUB/PUB/MSG) or mqtt (MQTT 3.1.1: fanoutd's mqtt_listen, Mosquitto).")
    var `protocol`: WireProtocol = .fanout
    @Option(name: .customLong("mqtt-qos"), help: ArgumentHelp("With --protocol mqtt: the QoS of publishes and subscriptions (0, 1 or 2).", valueName: "qos"))
    var mqttQoS: Int = 0
    @Option(name: .long, help: ArgumentHelp("Subscribers join this group (QSUB; a NATS queue group): each message reaches one of them.", valueName: "name"))
    var group: String?
    @Flag(name: .long, help: "Publish with BPUB a payload holding an LF, so that it is pushed as BMSG (Redis and NATS publish the same bytes).")
    var bpub = false
    @Flag(name: .long, help: "Request/reply: publishers ask (ASK, or a NATS request), subscribers answer.")
    var ask = false
    @Option(name: .long, help: "With --ask: ASK's max-answers (0: every responder).") var maxAnswers = 0
    @Option(name: .long, help: "With --ask: ASK's timeout in milliseconds.") var askTimeout = 10_000
    @Option(name: .long, help: ArgumentHelp("Also run the scenario against this redis-server and compare.", valueName: "host:port"))
    var compareRedis: String?
    @Option(name: .long, help: "Seconds without progress after which undelivered messages count as lost.")
    var drainTimeout: Double = 5
    @Option(name: .long, help: ArgumentHelp(
        "tcp, websocket or sse: run the scenario with TCP subscribers, then with WebSocket subscribers or Server-Sent Events streams (publishers stay on TCP), and compare.",
        valueName: "transport"))
    var transport: SubscriberTransport = .tcp
    @Option(name: .long, help: ArgumentHelp("fanoutd's http_listen address, for --transport websocket or sse.", valueName: "host:port"))
    var httpServer = "127.0.0.1:7412"
    @Flag(name: .long, help: "Print one JSON object.") var json = false

    func validate() throws {
        guard publishers >= 1 else { throw ValidationError("--publishers must be at least 1") }
        guard stalled >= 0 else { throw ValidationError("--stalled must be 0 or more") }
        guard subscribers >= 0, subjects >= 1, messages >= 0, window >= 1, rate >= 0 else {
            throw ValidationError("--subscribers, --messages and --rate must be 0 or more; --subjects and --window at least 1")
        }
        guard payload >= BenchPayload.timestampDigits else {
            throw ValidationError("--payload must be at least \(BenchPayload.timestampDigits) bytes")
        }
        if let compareRedis { _ = try SocketAddress.parsing(compareRedis, option: "--compare-redis") }
        guard (0...2).contains(mqttQoS) else { throw ValidationError("--mqtt-qos must be 0, 1 or 2") }
        if window > 65_535 && self.protocol == .mqtt {
            throw ValidationError("--window: MQTT has 65,535 packet identifiers; at most 65535 with --protocol mqtt")
        }
        if let group { try validateGroupName(group) }
        if group != nil, self.protocol == .redis || compareRedis != nil {
            throw ValidationError("--group: Redis has no groups; leave out --protocol redis and --compare-redis")
        }
        if ask {
            guard self.protocol != .redis, compareRedis == nil, transport == .tcp, stalled == 0 else {
                throw ValidationError("--ask runs against fanoutd or nats-server over TCP, without --stalled")
            }
            guard maxAnswers >= 0, askTimeout >= 1 else {
                throw ValidationError("--max-answers must be 0 or more, --ask-timeout at least 1")
            }
            guard rate == 0 else { throw ValidationError("--ask runs unthrottled; leave out --rate") }
        }
        if transport != .tcp {
            _ = try SocketAddress.parsing(httpServer, option: "--http-server")
            guard self.protocol == .fanout, compareRedis == nil else {
                throw ValidationError("--transport \(transport.rawValue) compares fanoutd's own transports; leave out --protocol redis and --compare-redis")
            }
        }
    }

    func run() throws {
        SignalWatcher.ignoreBrokenPipe()
        let scenario = BenchScenario(
            publishers: publishers, subscribers: subscribers, stalled: stalled, subjects: subjects, payloadSize: payload,
            messages: messages, rate: rate > 0 ? rate : nil, window: window,
            drainTimeout: .milliseconds(Int64(drainTimeout * 1000)),
            timeout: .milliseconds(Int64(connection.timeout * 1000)), group: group, binary: bpub,
            ask: ask ? AskSettings(maxAnswers: maxAnswers, timeoutMilliseconds: askTimeout) : nil)
        var targets: [(WireProtocol, SocketAddress, String)] = [
            (self.protocol, try connection.resolvedAddress(), connection.serverText),
        ]
        if let compareRedis { targets.append((.redis, try SocketAddress.parsing(compareRedis, option: "--compare-redis"), compareRedis)) }
        let token = connection.clientOptions().token
        // WebSocket or event-stream subscribers: the same scenario again, right after the TCP one, on the same
        // server.
        var httpAt: SocketAddress?
        if transport != .tcp {
            httpAt = try SocketAddress.parsing(httpServer, option: "--http-server")
            targets.append((.fanout, try connection.resolvedAddress(), connection.serverText))
        }
        let kind = transport == .sse ? "event-stream" : "websocket"
        var results: [BenchResult] = []
        for (number, (wire, address, text)) in targets.enumerated() {
            let overHTTP = httpAt != nil && number == 1
            let label = httpAt == nil ? "\(wire.rawValue) \(text)"
                : overHTTP ? "fanout \(text), \(kind) subscribers" : "fanout \(text), tcp subscribers"
            let sse = transport == .sse
            let subscriberFactory: ((EventLoop) -> BenchPeer)? = !overHTTP ? nil : { loop -> BenchPeer in
                sse ? EventStreamPeer(loop: loop, address: httpAt!, token: token)
                    : WebSocketPeer(loop: loop, address: httpAt!, token: token)
            }
            let group = self.group
            let makePeer = { (loop: EventLoop) -> BenchPeer in
                switch wire {
                case .fanout: FanoutPeer(loop: loop, address: address, timeout: scenario.timeout, token: token, group: group)
                case .redis: RedisPeer(loop: loop, address: address)
                case .nats: NATSPeer(loop: loop, address: address, group: group)
                case .mqtt: MQTTPeer(loop: loop, address: address, qos: MQTTQoS(rawValue: UInt8(mqttQoS))!, group: group)
                }
            }
            do {
                if ask {
                    results.append(try AskRun(scenario: scenario, target: label, makePeer: makePeer).run())
                    continue
                }
                let run = try BenchRun(scenario: scenario, target: label, showProgress: !json && StandardOutput.isTerminal,
                                       makeSubscriber: subscriberFactory, makePeer: makePeer)
                results.append(try run.run())
            } catch {
                printError("\(wire.rawValue) \(text): \(error)")
                throw ExitCode(ExitStatus.connection)
            }
        }
        print(json ? BenchReport.json(scenario, results) : BenchReport.table(scenario, results))
        if httpAt != nil, !json, results.count == 2, results[0].deliveredPerSecond > 0 {
            let ratio = results[1].deliveredPerSecond / results[0].deliveredPerSecond
            print("\(kind)/tcp delivered per second: \((ratio * 100).rounded() / 100)")
        }
    }
}

extension SocketAddress {
    static func parsing(_ text: String, option: String) throws -> SocketAddress {
        do {
            return try SocketAddress(parsing: text)
        } catch {
            throw ValidationError("\(option): \(error.operation)")
        }
    }
}
