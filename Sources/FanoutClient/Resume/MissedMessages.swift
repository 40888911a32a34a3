/// What a resumed subject could not get back, as the server counted it.
public enum MissedMessages: Equatable, Sendable {
    /// This many messages after the client's position are gone for good (the history was too short); 0 when
    /// nothing was lost.
    case count(UInt64)
    /// The server cannot say: the subject's numbering restarted (a new epoch), so the client's position means
    /// nothing there.
    case unknown
}

/// What one `RESUME` after a reconnect found for a subject.
struct ResumeReport: Equatable, Sendable {
    let subject: String
    /// Messages the server replayed (each one the client had not had).
    let recovered: Int
    let missed: MissedMessages
}
