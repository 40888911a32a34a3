import Foundation
import Testing

/// Every transport says the same thing: one scripted session of every verb (1.0 to 1.3, errors, any bytes,
/// questions both ways, a publish over HTTP) runs over TCP and over WebSocket framed every way, and each
/// transcript must equal TCP's (`transport_differential.py`, raw sockets, so that the framing is exact).
@Suite("Transports: the same replies and bytes on every one", .threadPerTest, .serialized, .timeLimit(.minutes(3)))
struct TransportDifferentialTests {
    static let http = ["--http-listen", "127.0.0.1:0"]
    /// A small max_payload, so that a refused BPUB (too long) is in the table.
    static let environment = ["FANOUTD_MAX_PAYLOAD": "4096"]

    private func expectPasses(_ check: String, arguments: [String] = [], environment: [String: String] = environment,
                              script: String = "transport_differential.py",
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let daemon = try Daemon(arguments: Self.http + arguments, environment: environment)
        let run = try runPythonCheck(script, check, daemon: daemon).finish(timeout: 150)
        #expect(run.status == 0 && run.stdout.contains("ok \(check)"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    /// TCP one byte a write; WebSocket text and binary frames, whole, two commands a frame, one-byte
    /// continuation frames, one byte a write: each the same transcript as TCP, one reply per command.
    @Test func everyFramingGivesTCPsTranscript() throws {
        try expectPasses("all")
    }

    /// The cases of issue 35: `BPUB x 0` in a text frame is answered; a text frame's BPUB bytes are never run as
    /// a command; a refused header without LF gets one `-ERR`; a binary frame's second command is answered.
    @Test func eachCommandInAFrameGetsExactlyOneReply() throws {
        try expectPasses("issue")
    }

    /// An event stream of a pattern, and one of a concrete subject, get exactly a TCP subscriber's messages
    /// (subject, seq, payload bytes, in order) from TCP PUB and BPUB (CR, LF, NUL, bytes not UTF-8), WebSocket
    /// text and binary frames and POST /publish; a question to a subject only a stream watches is `DONE` at
    /// once with nobody asked; payloads and questions with CRs shaped as `data:` lines forge no event. The
    /// stream is parsed by the HTML Standard's rules (CR, LF and CRLF each end a line). The default
    /// max_payload, so that payloads over max_line (pushed as BMSG, carried as base64) are in the table.
    @Test func eventStreamsGetATCPSubscribersMessages() throws {
        try expectPasses("sse", environment: [:], script: "transport_differential_sse.py")
    }

    /// A command that stops reading in the middle of a message (a failed AUTH's pause, output over the pause
    /// mark, a used-up turn) holds the rest of the message, which is answered once reading resumes.
    @Test func commandsAfterAStopInsideAMessageAreAnswered() throws {
        try expectPasses("held", arguments: ["--config", try fixture("auth.yaml")],
                         environment: ["FANOUTD_SEND_BUFFER_BYTES": "4096"])
    }

    /// Three WebSocket clients send a 1 MiB BPUB each in 16-byte continuation frames while a TCP client
    /// PINGs: the decoder's work per frame is that frame's and a turn is bounded between frames, so the loop
    /// time a PING waits (the server's loop thread's CPU time meanwhile: the wait on a machine of its own) has
    /// a p99 far under 50 ms. The wall-clock wait, which on a shared machine also holds other programs' time,
    /// gets a generous bound that a frozen loop (issue 35: 1.2 s) still breaks.
    @Test func continuationFramesDoNotHoldUpABystander() throws {
        let daemon = try Daemon(arguments: Self.http)
        let run = try ExternalProgram("python3", [try fixture("continuation_bystander.py"),
                                                  String(try daemon.httpPort()), String(daemon.port),
                                                  String(daemon.pid), "3"])
            .finish(timeout: 150)
        let summary = run.stdout.first { $0.hasPrefix("ok ") } ?? "no summary"
        let fields = Dictionary(uniqueKeysWithValues: summary.split(separator: " ").dropFirst().compactMap {
            let pair = $0.split(separator: "=")
            return pair.count == 2 ? (String(pair[0]), Double(pair[1]) ?? .infinity) : nil
        })
        let output = (run.stdout + run.stderr).joined(separator: "\n")
        #expect(run.status == 0 && summary.hasPrefix("ok "), "\(output)")
        #expect((fields["loop_p99_ms"] ?? .infinity) < 50, "the bystander's PING, loop time: \(output)")
        #expect((fields["p99_ms"] ?? .infinity) < 250, "the bystander's PING, wall clock: \(output)")
        #expect((fields["pings"] ?? 0) >= 5, "PINGs while the senders sent: \(summary)")
    }
}
