import Foundation
import Testing

/// An ASK holds its receivers unretained while it checks their backlogs, and a check may drop any of them
/// (the largest backlog past max_memory): the dropped ones count as gone, and the server goes on.
@Suite("Receivers dropped while a question is put", .threadPerTest, .timeLimit(.minutes(2)))
struct QuestionReceiverDropTests {
    @Test func receiversDroppedPastMaxMemoryCountAsGone() throws {
        let daemon = try Daemon(environment: [
            "FANOUTD_MAX_PENDING_BYTES": String(2 << 20),
            "FANOUTD_MAX_MEMORY": String(8 << 20),
            "FANOUTD_SEND_BUFFER_BYTES": "4096",
            "FANOUTD_WRITE_TIMEOUT": "60",
            "FANOUTD_MAX_ASKS": "2000",
        ])
        // Eight receivers that never read: each question goes to all of them, 8 KB a question.
        var stalled: [LineClient] = []
        for _ in 0..<8 {
            let client = try LineClient(port: daemon.port, timeout: 30, receiveBuffer: 4096)
            #expect(try client.readLine().hasPrefix("+HELLO "))
            #expect(try client.command("SUB stall.q") == "+OK 1")
            stalled.append(client)
        }
        let observer = try daemon.client()
        let asker = try daemon.client(timeout: 30)
        let payload = String(repeating: "q", count: 1000)
        let count = 1500
        try asker.send((0..<count).map { "ASK stall.q 2000 0 \($0) \(payload)\n" }.joined())
        var ids = Set<String>()
        var done: [String] = []
        while ids.count < count || done.count < count {
            let line = try asker.readLine()
            if line.hasPrefix("+OK ") {
                let words = line.split(separator: " ")
                #expect(words.count == 3, "\(line)")
                ids.insert(String(words[1]))
            } else if line.hasPrefix("DONE ") {
                done.append(line)
            } else {
                Issue.record("unexpected line \(line.prefix(80))")
                break
            }
        }
        let info = infoFields(try observer.command("INFO"))
        let dropped = Int(info["memory_drops"] ?? "0") ?? 0
        #expect(dropped > 0, "the bound dropped receivers: \(info)")
        // Each question closed once, at its timeout; a receiver dropped before it was put to is not asked.
        var gone = 0
        for line in done {
            let fields = line.split(separator: " ")
            #expect(ids.contains(String(fields[1])))
            let asked = Int(fields[2].dropFirst("asked=".count)) ?? -1
            let goneHere = Int(fields[4].dropFirst("gone=".count)) ?? -1
            #expect(asked >= 8 - dropped && asked <= 8 && fields[3] == "answered=0"
                    && goneHere >= 0 && goneHere <= dropped, "\(line)")
            gone += goneHere
        }
        #expect(gone > 0, "questions put to a dropped receiver count it gone")
        #expect(Set(done.map { $0.split(separator: " ")[1] }).count == count)
        #expect(try observer.command("PING") == "+PONG")
        #expect(infoFields(try observer.command("INFO"))["open_questions"] == "0")
        for client in stalled { client.close() }
    }
}
