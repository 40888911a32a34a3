/// Authentication and permissions across connections: failed-AUTH buckets, each user's shared grant, and
/// whether any user's permissions filter what subscribers receive.
struct AuthState {
    /// Failed-AUTH buckets per address, their log, and the unauthenticated connections' count.
    var gate = AuthGate()
    /// Each user's permissions as the one object its connections share (refreshed when a reload changes them).
    var permissionsByUser: [String: SharedPermissions] = [:]
    /// Whether any configured user has subscribe-deny patterns: only then are a run's receivers filtered.
    /// Kept in step with `configuration` (init and reload) so that opening a run does not scan the users.
    var anyUserWithholds = false

    mutating func tearDown() {
        gate.failureLog = nil
    }
}
