import FanoutProtocol

/// What a Server-Sent Events stream keeps: its resumable subjects with the last seq it sent of each, the
/// epoch those numbers belong to, and which RESUME replies are still to come.
///
/// The event id is `<epoch>:<seq of subject 1>,<seq of subject 2>,...`, one number per concrete subject of
/// the stream's URL, in the URL's order. A browser's EventSource reconnects to the same URL with the last
/// id it saw as Last-Event-ID, so the positions line up with the subjects again, and the stream resumes
/// each subject with RESUME after its seq. Limits: patterns (`a.>`) are live only (RESUME takes one
/// concrete subject); at most `maxResumable` concrete subjects per stream (the id stays under 400 bytes);
/// the resume is exact only while history retains what was missed (the RESUME reply's missed count is
/// sent as a `missed` event otherwise); after a restart (a new epoch) the stream starts from the present.
final class EventStreamSession {
    static let maxResumable = 16

    let subjects: [String]
    var positions: [UInt64]
    var epoch: String
    /// Indexes into `subjects` of RESUMEs whose replies have not been read yet, oldest first.
    var pendingReplies: [Int] = []
    /// Reused for building events.
    var scratch: [UInt8] = []

    init(subjects: [String], positions: [UInt64], epoch: String) {
        self.subjects = subjects
        self.positions = positions
        self.epoch = epoch
    }

    /// The current id: nil when the stream has no resumable subject.
    var eventID: String? {
        subjects.isEmpty ? nil : epoch + ":" + positions.map(String.init).joined(separator: ",")
    }

    /// Appends `id: <epoch>:<positions>\n` (the current id) without building strings: once per message per
    /// stream on the publish path.
    func appendEventID(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: "id: ".utf8)
        buffer.append(contentsOf: epoch.utf8)
        buffer.append(UInt8(ascii: ":"))
        for (number, position) in positions.enumerated() {
            if number > 0 { buffer.append(UInt8(ascii: ",")) }
            DecimalDigits.append(position, to: &buffer)
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Positions from a Last-Event-ID for `count` subjects, when it was made by this server's `epoch`.
    static func positions(fromEventID id: String, epoch: String, count: Int) -> [UInt64]? {
        let parts = id.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, parts[0] == epoch else { return nil }
        let numbers = parts[1].split(separator: ",", omittingEmptySubsequences: false).compactMap { UInt64($0) }
        return numbers.count == count ? numbers : nil
    }
}
