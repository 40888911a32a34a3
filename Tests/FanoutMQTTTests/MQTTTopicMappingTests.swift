import FanoutMQTT
import FanoutProtocol
import FanoutTestSupport
import Testing

/// Topics <-> subjects both ways, with every edge docs/mqtt.md names: empty levels, leading and trailing `/`,
/// `$`-topics, levels holding `.`, `~`, `*`, `>` or bytes outside fanout's alphabet, `#`'s parent level,
/// `$share` groups, and the subject length limit.
@Suite struct MQTTTopicMappingTests {
    static let topics: [(topic: String, subject: String)] = [
        ("a/b/c", "a.b.c"),
        ("a", "a"),
        ("/a", "~.a"),
        ("a/", "a.~"),
        ("/", "~.~"),
        ("a//b", "a.~.b"),
        ("$SYS/broker/load", "$SYS.broker.load"),
        ("v1.2/x", "v1~2E2.x"),
        ("home~1/x", "home~7E1.x"),
        ("*/>", "~2A.~3E"),
        ("a*b/c>", "a*b.c>"),
        ("living room/temp", "living~20room.temp"),
        ("température", "temp~C3~A9rature"),
        ("tab\there", "tab~09here"),
        ("del\u{7F}", "del~7F"),
    ]

    @Test(arguments: 0..<topics.count)
    func topicNamesMapBothWays(_ index: Int) throws {
        let (topic, subject) = Self.topics[index]
        #expect(try MQTTTopicMapping.subject(forTopic: topic) == subject)
        #expect(MQTTTopicMapping.topic(forSubject: subject) == topic)
        // What the mapping makes is always a valid concrete fanout subject.
        var bytes = Array(subject.utf8)
        #expect(bytes.withUnsafeMutableBytes { (try? Subject.validateConcrete(UnsafeRawBufferPointer($0))) != nil })
    }

    @Test func subjectsWithoutATopic() {
        // A `~` that is not the canonical escape, escapes of bytes that need none, bytes that are not UTF-8,
        // U+0000, `+`/`#`, which no topic name can hold, and `/` inside a token (`a/b.c` is not `a.b.c`'s topic).
        for subject in ["a~", "a~4", "a~zz", "a~41", "~2a", "x~2Ax", "a.~FF", "a.~00", "c++", "a.#", "~7E~", "a/b.c",
                        "https://x"] {
            #expect(MQTTTopicMapping.topic(forSubject: subject) == nil, "\(subject)")
        }
        #expect(MQTTTopicMapping.topic(forSubject: "a.~7E") == "a/~")
        #expect(MQTTTopicMapping.topic(forSubject: "x.~2A") == "x/*")
    }

    @Test func filtersMapToPatterns() throws {
        let cases: [(filter: String, pattern: String, parent: String?, excludesDollar: Bool)] = [
            ("a/+/c", "a.*.c", nil, false),
            ("a/#", "a.>", "a", false),
            ("a/b/#", "a.b.>", "a.b", false),
            ("#", ">", nil, true),
            ("+", "*", nil, true),
            ("+/#", "*.>", "*", true),
            ("/#", "~.>", "~", false),
            ("a//#", "a.~.>", "a.~", false),
            ("$SYS/#", "$SYS.>", "$SYS", false),
            ("$SYS/+/x", "$SYS.*.x", nil, false),
            ("a/*/b.c", "a.~2A.b~2Ec", nil, false),
            ("sport/tennis/player1", "sport.tennis.player1", nil, false),
        ]
        for (filter, pattern, parent, excludesDollar) in cases {
            let mapped = try MQTTTopicMapping.patterns(forFilter: filter)
            #expect(mapped == MQTTFilterPatterns(pattern: pattern, parent: parent, group: nil,
                                                 excludesDollarSubjects: excludesDollar), "\(filter)")
        }
    }

    /// The standard's own examples of section 4.7: what each filter matches, through the mapped patterns
    /// and `admits`, against fanout's matcher.
    @Test func mappedFiltersMatchWhatTheStandardSays() throws {
        let cases: [(filter: String, matches: [String], misses: [String])] = [
            ("sport/tennis/player1/#", ["sport/tennis/player1", "sport/tennis/player1/ranking",
                                        "sport/tennis/player1/score/wimbledon"], ["sport/tennis/player2"]),
            ("sport/#", ["sport"], ["sports"]),
            ("sport/tennis/+", ["sport/tennis/player1", "sport/tennis/player2"], ["sport/tennis/player1/ranking"]),
            ("sport/+", ["sport/"], ["sport"]),
            ("+/+", ["/finance"], []),
            ("/+", ["/finance"], []),
            ("+", [], ["/finance"]),
            ("#", ["a", "/", "a/b"], ["$SYS/monitor/Clients", "$presence/x"]),
            ("+/monitor/Clients", [], ["$SYS/monitor/Clients"]),
            ("$SYS/#", ["$SYS/monitor/Clients"], []),
            ("$SYS/monitor/+", ["$SYS/monitor/Clients"], []),
        ]
        for (filter, matches, misses) in cases {
            let mapped = try MQTTTopicMapping.patterns(forFilter: filter)
            func matched(_ topic: String) throws -> Bool {
                let subject = try MQTTTopicMapping.subject(forTopic: topic)
                let patterns = [mapped.pattern] + (mapped.parent.map { [$0] } ?? [])
                return mapped.admits(subject: subject)
                    && patterns.contains { Subject.matches(pattern: $0, subject: subject) }
            }
            for topic in matches { #expect(try matched(topic), "\(filter) should match \(topic)") }
            for topic in misses { #expect(try !matched(topic), "\(filter) should not match \(topic)") }
        }
    }

    @Test func sharedSubscriptionsNameTheirGroup() throws {
        let shared = try MQTTTopicMapping.patterns(forFilter: "$share/workers/jobs/#")
        #expect(shared == MQTTFilterPatterns(pattern: "jobs.>", parent: "jobs", group: "workers",
                                             excludesDollarSubjects: false))
        #expect(try MQTTTopicMapping.patterns(forFilter: "$share/g/#").excludesDollarSubjects)
        let split = try MQTTTopicMapping.splitShared("$share/g-1.x/a/b")
        #expect(split.group == "g-1.x" && split.filter == "a/b")
        let plain = try MQTTTopicMapping.splitShared("$shared/g/a")
        #expect(plain.group == nil && plain.filter == "$shared/g/a")
        let longGroup = "$share/\(String(repeating: "g", count: 65))/a"
        for bad in ["$share/", "$share/g", "$share//a", "$share/g/", "$share/g h/a", longGroup] {
            #expect(throws: MQTTTopicMappingError.self, "\(bad)") { try MQTTTopicMapping.patterns(forFilter: bad) }
        }
    }

    @Test func aTopicOverTheSubjectLimitIsRefused() throws {
        let longest = String(repeating: "a", count: Subject.maxLength)
        #expect(try MQTTTopicMapping.subject(forTopic: longest) == longest)
        #expect(throws: MQTTTopicMappingError.self) { try MQTTTopicMapping.subject(forTopic: longest + "a") }
        // Escapes count: 86 spaces are 258 bytes once escaped.
        #expect(throws: MQTTTopicMappingError.self) {
            try MQTTTopicMapping.subject(forTopic: String(repeating: " ", count: 86))
        }
        #expect(throws: MQTTTopicMappingError.self) {
            try MQTTTopicMapping.patterns(forFilter: String(repeating: "ab/", count: 90) + "#")
        }
    }

    /// Random topics of levels drawn from awkward bytes: the subject is valid and maps back to the topic.
    @Test func randomTopicsRoundTrip() throws {
        var random = SeededGenerator(seed: 40)
        let pieces = ["a", "Z9", ".", "~", "*", ">", " ", "é", "€", "\u{7F}", "\t", "$", "-_", "~41", "%2E", "𝄞"]
        for _ in 0..<2_000 {
            let levels = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                (0..<Int.random(in: 0...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            }
            let topic = levels.joined(separator: "/")
            guard !topic.isEmpty else { continue }
            let subject = try MQTTTopicMapping.subject(forTopic: topic)
            var bytes = Array(subject.utf8)
            #expect(bytes.withUnsafeMutableBytes { (try? Subject.validateConcrete(UnsafeRawBufferPointer($0))) != nil },
                    "\(topic) -> \(subject)")
            #expect(MQTTTopicMapping.topic(forSubject: subject) == topic, "\(topic) -> \(subject)")
        }
    }
}
