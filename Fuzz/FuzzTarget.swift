// libFuzzer entry point, compiled by scripts/fuzz.sh together with the sources of FanoutProtocol,
// FanoutMulticast and the subject index as one module. Each input is checked two ways:
//
// 1. As client bytes: the line framer must yield the same events however the input is split, never hold a
//    partial line over max_line + 1 bytes, and every line must parse into a command or a one-line error
//    whose code the protocol defines.
// 2. As subjects: its lines are split into patterns and subjects; every pattern the validator accepts goes
//    into a SubjectIndex, and for every valid concrete subject the index must return exactly the members
//    whose patterns the reference matcher says match, each once.
// 3. As WebSocket frames: the decoder must give the same events however the input is split, hold no more
//    than a message, a control frame and a header, and hand out only valid UTF-8 text.
// 4. As an HTTP request head: the parser must give the same outcome however the input is split and hold
//    no more than its limit; a head it accepts keeps the path it was given and a sane Content-Length.
// 5. As a configuration file (ConfigFuzzCheck.swift).
// 6. As a history segment file (HistoryRecordFuzzCheck.swift).
// 7. As an application token, whole and as a signed payload (TokenFuzzCheck.swift).
// 8. As MQTT 3.1.1 packets, topics and filters (MQTTFuzzCheck.swift).

final class FuzzMember: Subscriber {
    let pattern: String
    var deliveryMark: UInt64 = 0
    init(pattern: String) { self.pattern = pattern }
}

private let knownCodes: Set<String> = ["unknown-command", "syntax", "bad-subject"]

private func events(_ bytes: UnsafeRawBufferPointer, maxLine: Int, chunk: Int) -> [String] {
    var framer = LineFramer(maxLine: maxLine)
    var out: [String] = []
    var start = 0
    while start < bytes.count {
        let end = min(start + chunk, bytes.count)
        let consumed = framer.feed(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) { event in
            switch event {
            case .line(let line):
                precondition(line.count <= maxLine, "a line over max_line was handed out")
                do throws(ProtocolError) {
                    let command = try CommandParser.parse(line)
                    out.append("ok:" + String(decoding: line, as: UTF8.self))
                    // A BPUB header announces bytes: small ones are read, larger ones skipped, as the server does.
                    if case .bpub(_, let length)? = command {
                        return length <= 4096 ? .readPayload(Int(length)) : .skipPayload(Int(min(length, 1 << 40)))
                    }
                } catch {
                    precondition(knownCodes.contains(error.code.rawValue), "unexpected code \(error.code)")
                    precondition(!error.text.utf8.contains(0x0A) && !error.text.utf8.contains(0x0D), "error text breaks the line")
                    out.append("err:" + error.code.rawValue)
                }
            case .tooLong:
                out.append("too-long")
            case .payload(let payload):
                precondition(payload.count <= 4096, "a payload over what was asked for")
                out.append("payload:\(payload.count)")
            case .badPayloadEnd:
                out.append("bad-payload-end")
            }
            return .goOn
        }
        precondition(consumed == end - start, "the framer must consume what it is given")
        precondition(framer.bufferedCount <= max(maxLine + 1, 4096), "partial line or payload over its cap")
        start = end
    }
    return out
}

private func checkSubjects(_ bytes: UnsafeRawBufferPointer) {
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).prefix(64)
    let index = SubjectIndex<FuzzMember>()
    var members: [FuzzMember] = []
    var subjects: [String] = []
    for (number, raw) in lines.enumerated() {
        let line = UnsafeRawBufferPointer(rebasing: raw)
        let text = String(decoding: line, as: UTF8.self)
        let valid = (try? Subject.validatePattern(line)) != nil
        let concrete = (try? Subject.validateConcrete(line)) != nil
        precondition(!concrete || valid, "a valid concrete subject must be a valid pattern")
        if number % 2 == 0, valid {
            let member = FuzzMember(pattern: text)
            members.append(member)
            index.subscribe(member, to: text)
        } else if concrete {
            subjects.append(text)
        }
    }
    for subject in subjects {
        var found: [FuzzMember] = []
        index.collectReceivers(of: subject, into: &found)
        let expected = Set(members.filter { Subject.matches(pattern: $0.pattern, subject: subject) }.map(ObjectIdentifier.init))
        precondition(found.count == Set(found.map(ObjectIdentifier.init)).count, "a member was collected twice")
        precondition(Set(found.map(ObjectIdentifier.init)) == expected, "index and reference matcher disagree on \(subject)")
    }
}

private func frameEvents(_ bytes: UnsafeRawBufferPointer, chunk: Int) -> [String] {
    var decoder = WebSocketDecoder(maxMessage: 100)
    decoder.maxBinaryMessage = 300
    var out: [String] = []
    var start = 0
    while start < bytes.count {
        let end = min(start + chunk, bytes.count)
        var offset = start
        while offset < end {
            let consumed = decoder.feed(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) { event in
                switch event {
                case .text(let text):
                    precondition(text.count <= 100, "a message over the limit was handed out")
                    precondition(UTF8Validation.isValid(text), "invalid UTF-8 handed out as text")
                    out.append("text:" + String(decoding: text, as: UTF8.self))
                case .binary(let message):
                    precondition(message.count <= 300, "a binary message over the limit was handed out")
                    out.append("binary:\(message.count)")
                case .binaryTooLong:
                    out.append("binaryTooLong")
                case .binaryRefused:
                    preconditionFailure("a message refused by an admit that agrees to everything")
                case .ping(let payload):
                    precondition(payload.count <= 125, "a ping over 125 bytes")
                    out.append("ping:\(payload.count)")
                case .pong: out.append("pong")
                case .close(let code): out.append("close:\(code ?? 0)")
                case .failure(let code, _):
                    precondition([1002, 1003, 1007, 1009].contains(code), "unexpected close code \(code)")
                    out.append("fail:\(code)")
                case .tooLong(let limit):
                    precondition(limit == 100 || limit == 300, "the limit reported is not the decoder's own")
                    out.append("tooLong")
                }
                return true
            }
            precondition(consumed > 0, "the decoder must make progress")
            offset += consumed
        }
        precondition(decoder.bufferedCount <= 100 + 125 + 14, "decoder holds more than a message")
        start = end
    }
    return out
}

private func requestOutcome(_ bytes: UnsafeRawBufferPointer, chunk: Int) -> String {
    var parser = HTTPRequestParser(maxHeadBytes: 512)
    var start = 0
    while start < bytes.count {
        let end = min(start + chunk, bytes.count)
        let outcome = parser.feed(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        precondition(parser.bufferedCount <= 513, "parser holds more than its limit")
        switch outcome {
        case .incomplete:
            start = end
        case .complete(let head, let consumed):
            precondition(consumed > 0 && consumed <= end - start, "consumed outside the chunk")
            precondition(head.path.hasPrefix("/") && head.contentLength >= 0, "accepted a bad head")
            return "ok \(head.method) \(head.path) \(head.headers.count) at \(start + consumed)"
        case .invalid(let status, _):
            precondition([400, 411, 431, 505].contains(status), "unexpected status \(status)")
            return "invalid \(status)"
        }
    }
    return "incomplete"
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let whole = events(bytes, maxLine: 64, chunk: max(size, 1))
    let split = events(bytes, maxLine: 64, chunk: 1 + size % 7)
    precondition(whole == split, "framing depends on how the input was split")
    checkSubjects(bytes)
    precondition(frameEvents(bytes, chunk: max(size, 1)) == frameEvents(bytes, chunk: 1 + size % 5),
                 "frame decoding depends on how the input was split")
    let oneRead = requestOutcome(bytes, chunk: max(size, 1))
    let pieces = requestOutcome(bytes, chunk: 1 + size % 3)
    precondition(oneRead == pieces, "request parsing depends on how the input was split: \(oneRead) vs \(pieces)")
    checkConfigText(bytes)
    checkHistoryRecords(bytes)
    checkTokens(bytes)
    checkMQTT(bytes)
    return 0
}
