import FanoutProtocol

/// The reply to `RESUME` and `LAST` (protocol 1.1), after `+OK `:
/// `<n> epoch=<e> seq=<s> replayed=<k> missed=<m|unknown>`.
struct ResumeReply: Equatable, Sendable {
    /// The connection's subscription count afterwards.
    var subscriptions: Int
    /// The subject's current epoch.
    var epoch: String
    /// The last seq assigned on the subject (0 if none).
    var seq: UInt64
    /// How many `MSG` lines follow the reply as a replay.
    var replayed: UInt64
    /// Messages after the client's position that are gone for good; nil for `unknown`.
    var missed: UInt64?

    /// Parses the text after `+OK`. Nil when a field is missing or malformed; unknown extra fields are ignored,
    /// as for the greeting.
    init?(_ text: String) {
        let words = text.split(separator: " ")
        guard let first = words.first, let count = Int(first) else { return nil }
        var fields: [Substring: Substring] = [:]
        for word in words.dropFirst() {
            guard let equals = word.firstIndex(of: "=") else { return nil }
            fields[word[..<equals]] = word[word.index(after: equals)...]
        }
        // The epoch goes back on a later RESUME line, so it must be a token (no word the line cannot carry).
        guard let epoch = fields["epoch"], Token.isValid(String(epoch)),
              let seq = fields["seq"].flatMap({ UInt64($0) }),
              let replayed = fields["replayed"].flatMap({ UInt64($0) }),
              let missed = fields["missed"] else { return nil }
        if missed == "unknown" {
            self.missed = nil
        } else {
            guard let number = UInt64(missed) else { return nil }
            self.missed = number
        }
        self.subscriptions = count
        self.epoch = String(epoch)
        self.seq = seq
        self.replayed = replayed
    }

    init(subscriptions: Int, epoch: String, seq: UInt64, replayed: UInt64, missed: UInt64?) {
        self.subscriptions = subscriptions
        self.epoch = epoch
        self.seq = seq
        self.replayed = replayed
        self.missed = missed
    }
}
