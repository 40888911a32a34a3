import FanoutProtocol
import Testing

private func valid(_ text: String, pattern: Bool) -> Bool {
    Array(text.utf8).withUnsafeBytes { raw in
        do throws(ProtocolError) {
            if pattern { try Subject.validatePattern(raw) } else { try Subject.validateConcrete(raw) }
            return true
        } catch {
            #expect(error.code == .badSubject)
            return false
        }
    }
}

@Suite("Subject")
struct SubjectTests {
    @Test func concreteSubjects() {
        for good in ["a", "news.uk", "a.b.c.d", "A-Z_0.9~!", String(repeating: "x", count: 255), "a*", "b>c"] {
            #expect(valid(good, pattern: false), "\(good)")
        }
        for bad in ["", "a..b", ".a", "a.", "a b", "a\tb", "é", "news.*", ">", "a.>", String(repeating: "x", count: 256)] {
            #expect(!valid(bad, pattern: false), "\(bad)")
        }
    }

    @Test func patterns() {
        for good in ["news.*", "news.>", ">", "*", "*.*.x", "a.*.>"] {
            #expect(valid(good, pattern: true), "\(good)")
        }
        for bad in [">.a", "a.>.b", "a..*", "*.", ""] {
            #expect(!valid(bad, pattern: true), "\(bad)")
        }
    }

    @Test func wildcardTokens() {
        for wildcard in ["*", ">", "a.*", "a.>", "*.b", "a.*.c", "**.*"] {
            #expect(Subject.isWildcard(wildcard), "\(wildcard)")
        }
        for literal in ["a", "a*", "b>c", "a.b", "**", "a.**.>>"] {
            #expect(!Subject.isWildcard(literal), "\(literal)")
        }
    }

    @Test func wildcardPatternsKeepTheTokenLimit() {
        func pattern(_ count: Int, last: String) -> String {
            (Array(repeating: "a", count: count - 1) + [last]).joined(separator: ".")
        }
        #expect(Subject.wildcardPatternProblem(pattern(16, last: "*")) == nil)
        #expect(Subject.wildcardPatternProblem(pattern(16, last: ">")) == nil)
        for refused in [pattern(17, last: "*"), pattern(17, last: ">"), pattern(128, last: ">")] {
            #expect(valid(refused, pattern: true), "the shape is fine; only the limit refuses it")
            let problem = Subject.wildcardPatternProblem(refused)
            #expect(problem?.contains("at most 16 tokens") == true, "\(problem ?? "accepted")")
        }
        let concrete = pattern(128, last: "a")
        #expect(valid(concrete, pattern: false), "concrete subjects may have any number of tokens")
        #expect(Subject.wildcardPatternProblem(concrete) == nil)
        #expect(Subject.wildcardPatternProblem(pattern(17, last: "a*")) == nil, "'a*' is a literal token")
    }

    @Test func wildcardPatternsKeepTheStarLimit() {
        for accepted in ["*.*.*", "*.a.*.b.*.>", "a.*.*.*.b", "**.*.*.*"] {
            #expect(Subject.wildcardPatternProblem(accepted) == nil, "\(accepted)")
        }
        for refused in ["*.*.*.*", "a.*.b.*.*.c.*.>", "*.*.*.*.*.*"] {
            #expect(Subject.wildcardPatternProblem(refused)?.contains("at most 3 '*' tokens") == true, "\(refused)")
        }
    }

    @Test func theLimitCheckThrowsALimitError() {
        #expect(throws: Never.self) { try Subject.checkWildcardLimits("a.*.>") }
        do throws(ProtocolError) {
            try Subject.checkWildcardLimits("*.*.*.*")
            Issue.record("four stars were accepted")
        } catch {
            #expect(error.code == .limit)
            #expect(error.line.hasPrefix("-ERR limit '*.*.*.*': a pattern may have at most 3 '*' tokens"))
        }
    }

    @Test(arguments: [
        ("news.*", "news.uk", true),
        ("news.*", "news", false),
        ("news.*", "news.uk.london", false),
        ("news.>", "news.uk", true),
        ("news.>", "news.uk.london", true),
        ("news.>", "news", false),
        (">", "anything.at.all", true),
        (">", "x", true),
        ("*", "x", true),
        ("*", "x.y", false),
        ("a.*.c", "a.b.c", true),
        ("a.*.c", "a.b.d", false),
        ("a.b", "a.b", true),
        ("a.b", "a.bc", false),
        ("a*", "ab", false),
    ])
    func referenceMatcher(pattern: String, subject: String, matches: Bool) {
        #expect(Subject.matches(pattern: pattern, subject: subject) == matches)
    }
}

@Suite("Encoder and ServerLine")
struct EncoderTests {
    @Test func messageLine() {
        var buffer: [UInt8] = []
        let subject = Array("news.uk".utf8), payload = Array("hello world".utf8)
        subject.withUnsafeBytes { s in
            payload.withUnsafeBytes { p in
                Encoder.appendMessage(subject: s, seq: 1_234_567, payload: p, to: &buffer)
            }
        }
        #expect(String(decoding: buffer, as: UTF8.self) == "MSG news.uk 1234567 hello world\n")
    }

    @Test(arguments: [UInt64(0), 1, 9, 10, 99, 100, 18_446_744_073_709_551_615])
    func decimal(value: UInt64) {
        var buffer: [UInt8] = []
        DecimalDigits.append(value, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == String(value))
        // Appended after what the buffer holds, as every writer of lines and frames uses it.
        var line = Array("seq=".utf8)
        DecimalDigits.append(value, to: &line)
        #expect(String(decoding: line, as: UTF8.self) == "seq=\(value)")
    }

    @Test func parsesServerLines() {
        #expect(ServerLine.parse("+HELLO fanout/1 host1 auth=none") == .hello(serverName: "host1", fields: ["auth": "none"]))
        #expect(ServerLine.parse("+OK 3") == .success(word: "OK", text: "3"))
        #expect(ServerLine.parse("+PONG") == .success(word: "PONG", text: ""))
        #expect(ServerLine.parse("-ERR limit too many") == .failure(ProtocolError(.limit, "too many")))
        #expect(ServerLine.parse("MSG a.b 12 x y") == .message(subject: "a.b", seq: 12, payload: Array("x y".utf8)))
        #expect(ServerLine.parse("MSG a.b 12 ") == .message(subject: "a.b", seq: 12, payload: []))
        #expect(ServerLine.parse("MSG a.b x y") == nil)
        #expect(ServerLine.parse("garbage") == nil)
    }

    @Test func revocationNoticeRoundTrips() {
        let notice = ProtocolError.revoked(["sensors.>", "to"])
        #expect(notice.line == "-ERR denied revoked: no longer allowed to subscribe to sensors.> to\n")
        #expect(notice.revokedPatterns == ["sensors.>", "to"], "every named pattern, and nothing else")
        #expect(ProtocolError(.denied, "not allowed to publish to 'x'").revokedPatterns == nil)
        guard case .failure(let parsed)? = ServerLine.parse(String(notice.line.dropLast())) else {
            Issue.record("a revocation notice parses as a failure line")
            return
        }
        #expect(parsed.revokedPatterns == ["sensors.>", "to"])
    }

    @Test func greeting() {
        #expect(Encoder.greeting(serverName: "h", authRequired: false, epoch: "e1") == "+HELLO fanout/1 h auth=none epoch=e1\n")
        #expect(ProtocolError(.tooLong, "x").line == "-ERR too-long x\n")
    }
}
