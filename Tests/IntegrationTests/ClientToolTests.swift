import Foundation
import Testing

@Suite("The fanout client", .threadPerTest, .timeLimit(.minutes(2)))
struct ClientToolTests {
    @Test(arguments: [
        ("payload", "hello world"),
        ("line", "MSG greetings 1 hello world"),
        ("json", #"{"subject":"greetings","seq":1,"payload":"hello world"}"#),
    ])
    func subPubRoundTrip(format: String, expected: String) throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let sub = try FanoutTool(["sub", "--server", server, "--format", format, "--count", "1", "greetings"])
        try waitForSubscribers(daemon, subject: "greetings")
        let pub = try FanoutTool.run(["pub", "--server", server, "greetings", "hello world"])
        #expect(pub.status == 0)
        #expect(pub.stdout == ["1"], "pub prints the receivers count")
        let result = sub.finish()
        #expect(result.status == 0, "--count 1 exits after one message")
        #expect(result.stdout == [expected])
        #expect(result.stderr.isEmpty)
    }

    @Test func jsonEscapesPayloads() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let sub = try FanoutTool(["sub", "--server", server, "--format", "json", "--count", "1", "q"])
        try waitForSubscribers(daemon, subject: "q")
        _ = try FanoutTool.run(["pub", "--server", server, "q", "say \"hi\"\t\\"])
        let line = try #require(sub.finish().stdout.first)
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["payload"] as? String == "say \"hi\"\t\\")
    }

    @Test func streamsTenThousandStdinLinesInOrder() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let count = 10_000
        let sub = try FanoutTool(["sub", "--server", server, "--count", String(count), "logs.app"])
        try waitForSubscribers(daemon, subject: "logs.app")
        let lines = (1...count).map { "line \($0) of the log" }
        let pub = try FanoutTool.run(["pub", "--server", server, "logs.app"],
                                     stdin: Data((lines.joined(separator: "\n") + "\n").utf8))
        #expect(pub.status == 0)
        #expect(pub.stdout == ["published \(count) messages to \(count) receivers in total"])
        let result = sub.finish()
        #expect(result.status == 0)
        #expect(result.stdout == lines, "every line delivered, in order")
    }

    @Test func subscriberReconnectsAcrossARestartAndReportsTheRestart() throws {
        var daemon: Daemon? = try Daemon()
        let port = daemon!.port
        let server = "127.0.0.1:\(port)"
        let sub = try FanoutTool(["sub", "--server", server, "restart.test"])
        try waitForSubscribers(daemon!, subject: "restart.test")
        _ = try FanoutTool.run(["pub", "--server", server, "restart.test", "before"])
        _ = try sub.stdout.waitForLine(containing: "before", timeout: 10)
        _ = try FanoutTool.run(["pub", "--server", server, "restart.test", "second"])
        _ = try sub.stdout.waitForLine(containing: "second", timeout: 10)

        daemon!.signal(SIGTERM)
        #expect(daemon!.waitForExit(timeout: 15) == 0)
        _ = try sub.stderr.waitForLine(containing: "reconnecting in", timeout: 10)
        daemon = nil
        let restarted = try Daemon(listen: ["127.0.0.1:\(port)"])
        _ = try sub.stderr.waitForLine(containing: "resubscribed to 1 subject", timeout: 20)
        _ = try FanoutTool.run(["pub", "--server", server, "restart.test", "after"])
        _ = try sub.stdout.waitForLine(containing: "after", timeout: 10)
        // The restarted server names a new epoch: the client says the numbering restarted.
        let missed = try sub.stderr.waitForLine(containing: "missed messages on restart.test", timeout: 10)
        #expect(missed == "fanout: missed messages on restart.test (unknown: the server's numbering restarted)")
        #expect(sub.stdout.all == ["before", "second", "after"], "stderr reports never reach stdout")
        _ = restarted
    }

    @Test func noReconnectExitsWhenTheServerGoes() throws {
        let daemon = try Daemon()
        let sub = try FanoutTool(["sub", "--server", "127.0.0.1:\(daemon.port)", "--no-reconnect", "x"])
        try waitForSubscribers(daemon, subject: "x")
        daemon.signal(SIGTERM)
        let result = sub.finish()
        #expect(result.status == 2)
        #expect(result.stderr.contains { $0.hasPrefix("fanout: connection lost") })
    }

    @Test func exitCodesAndMessages() throws {
        let port = try freePort()
        let refused = try FanoutTool.run(["info", "--server", "127.0.0.1:\(port)"])
        #expect(refused.status == 2)
        #expect(refused.stderr == ["fanout: cannot connect to 127.0.0.1:\(port): connection refused"])

        // A bad subject is the tool's to refuse (exit 64, nothing sent); a payload over max_payload is the server's.
        let daemon = try Daemon(environment: ["FANOUTD_MAX_PAYLOAD": "16"])
        let badSubject = try FanoutTool.run(["pub", "--server", "127.0.0.1:\(daemon.port)", "bad..subject", "x"])
        #expect(badSubject.status == 64)
        #expect(badSubject.stderr.contains { $0.contains("bad subject: 'bad..subject': empty token") })
        let serverError = try FanoutTool.run(["pub", "--server", "127.0.0.1:\(daemon.port)", "--binary", "big"],
                                             stdin: Data(repeating: 0x61, count: 100))
        #expect(serverError.status == 1)
        #expect(serverError.stderr.first?.hasPrefix("fanout: server error: too-long ") == true)

        let usage = try FanoutTool.run(["sub"])
        #expect(usage.status == 64)
        let badServer = try FanoutTool.run(["info", "--server", "no-port-here"])
        #expect(badServer.status == 64)

        let viaEnvironment = try FanoutTool.run(["ping", "--count", "1"], environment: ["FANOUT_SERVER": "127.0.0.1:\(daemon.port)"])
        #expect(viaEnvironment.status == 0, "FANOUT_SERVER names the server")
    }

    @Test func inspectionCommands() throws {
        let daemon = try Daemon()
        let server = "127.0.0.1:\(daemon.port)"
        let holder = try daemon.client()
        #expect(try holder.command("SUB news.* sport") == "+OK 2")

        let info = try FanoutTool.run(["info", "--server", server])
        #expect(info.status == 0)
        #expect(info.stdout.first?.hasPrefix("FIELD") == true)
        #expect(info.stdout.contains { $0.hasPrefix("subscriptions") && $0.hasSuffix(" 2") })
        let infoJSON = try FanoutTool.run(["info", "--json", "--server", server])
        let object = try JSONSerialization.jsonObject(with: Data(infoJSON.stdout.joined().utf8)) as? [String: Any]
        #expect(object?["subscriptions"] as? Int == 2)

        let channels = try FanoutTool.run(["channels", "--server", server])
        #expect(channels.stdout == ["SUBJECT  SUBSCRIBERS", "news.*             1", "sport              1", "(2 subjects)"])
        let filtered = try FanoutTool.run(["channels", "--json", "--server", server, "news.>"])
        #expect(filtered.stdout == [#"{"count":1,"channels":[{"subject":"news.*","subscribers":1}]}"#])

        let clients = try FanoutTool.run(["clients", "--json", "--server", server])
        let clientsObject = try JSONSerialization.jsonObject(with: Data(clients.stdout.joined().utf8)) as? [String: Any]
        #expect(clientsObject?["count"] as? Int == 2, "the holder and the tool itself")

        let ping = try FanoutTool.run(["ping", "--count", "3", "--interval", "0", "--server", server])
        #expect(ping.status == 0)
        #expect(ping.stdout.filter { $0.hasPrefix("PONG from \(server): seq=") }.count == 3)
        #expect(ping.stdout.last?.hasPrefix("3 replies, min/median/p99/max = ") == true)
    }

    @Test func helpHasExamplesForEverySubcommand() throws {
        for command in ["sub", "pub", "info", "channels", "clients", "ping", "bench"] {
            let help = try FanoutTool.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains { $0.contains("fanout \(command)") }, "\(command) --help shows an example")
        }
    }

    @Test func benchReportsZeroLoss() throws {
        let daemon = try Daemon()
        let result = try FanoutTool.run(["bench", "--server", "127.0.0.1:\(daemon.port)", "--subscribers", "5",
                                         "--subjects", "2", "--messages", "3000", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let run = try #require((report?["results"] as? [[String: Any]])?.first)
        #expect(run["lost"] as? Int == 0)
        #expect(run["delivered"] as? Int == 7500, "3000 messages over 2 subjects with 3 and 2 subscribers")
        #expect((run["published_per_s"] as? Int ?? 0) > 0)
        let latency = try #require(run["latency_us"] as? [String: Any])
        #expect(latency["p99"] != nil)
    }

    @Test func benchWithStalledSubscribersCountsOnlyTheHealthyOnes() throws {
        let daemon = try Daemon()
        let result = try FanoutTool.run(["bench", "--server", "127.0.0.1:\(daemon.port)", "--subscribers", "3",
                                         "--stalled", "2", "--messages", "500", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let run = try #require((report?["results"] as? [[String: Any]])?.first)
        #expect(run["expected"] as? Int == 1500, "stalled subscribers are not expected to receive")
        #expect(run["delivered"] as? Int == 1500)
        #expect(run["lost"] as? Int == 0)
        let scenario = try #require(report?["scenario"] as? [String: Any])
        #expect(scenario["stalled"] as? Int == 2)
        #expect(infoFields(try daemon.client().command("INFO"))["connections_total"] == "7",
                "5 subscribers (2 of them stalled) and 1 publisher connected, and the INFO client")
    }

    @Test func benchPublishOnlyCountsEveryAcknowledgement() throws {
        let daemon = try Daemon()
        // An odd window and an uneven split over the publishers: acknowledgements arrive in odd batches.
        let result = try FanoutTool.run(["bench", "--server", "127.0.0.1:\(daemon.port)", "--subscribers", "0",
                                         "--publishers", "3", "--window", "7", "--messages", "5000", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let run = try #require((report?["results"] as? [[String: Any]])?.first)
        #expect(run["published"] as? Int == 5000)
        #expect((run["published_per_s"] as? Int ?? 0) > 0)
        #expect(infoFields(try daemon.client().command("INFO"))["published"] == "5000")
    }

    @Test func benchStopsWithTheServersErrorWhenAPublishIsRefused() throws {
        let daemon = try Daemon(environment: ["FANOUTD_MAX_LINE": "64"])
        let result = try FanoutTool.run(["bench", "--server", "127.0.0.1:\(daemon.port)", "--subscribers", "1",
                                         "--payload", "100", "--messages", "100"])
        #expect(result.status != 0)
        #expect(result.stderr.contains { $0.contains("publisher: unexpected reply to a publish: -ERR too-long") },
                "\(result.stderr)")
    }

    static let redisServer = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    @Test(.enabled(if: redisServer != nil, "redis-server is not installed (apt-get install redis-server)"))
    func benchAgainstARealRedisServer() throws {
        let port = try freePort()
        let redis = Process()
        redis.executableURL = URL(fileURLWithPath: Self.redisServer!)
        redis.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        redis.standardOutput = FileHandle.nullDevice
        try redis.run()
        defer {
            // SIGKILL: a child of the test runner may inherit a mask that blocks SIGTERM.
            kill(redis.processIdentifier, SIGKILL)
            redis.waitUntilExit()
        }
        try eventually("redis-server accepts connections") { (try? LineClient(port: port)) != nil }
        let daemon = try Daemon()
        let result = try FanoutTool.run([
            "bench", "--server", "127.0.0.1:\(daemon.port)", "--compare-redis", "127.0.0.1:\(port)",
            "--subscribers", "4", "--messages", "2000", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
        let runs = try #require(report?["results"] as? [[String: Any]])
        #expect(runs.count == 2)
        #expect(runs.map { $0["target"] as? String ?? "" } == ["fanout 127.0.0.1:\(daemon.port)", "redis 127.0.0.1:\(port)"])
        for run in runs {
            #expect(run["lost"] as? Int == 0)
            #expect(run["delivered"] as? Int == 8000)
        }
        let table = try FanoutTool.run(["bench", "--protocol", "redis", "--server", "127.0.0.1:\(port)",
                                        "--subscribers", "2", "--messages", "500"])
        #expect(table.status == 0)
        #expect(table.stdout.contains { $0.hasPrefix("redis 127.0.0.1:\(port)") })
    }
}
