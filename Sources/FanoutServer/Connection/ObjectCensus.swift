/// Counts live `ClientConnection` objects, so that INFO can show that a dropped connection really
/// deinitialised: nothing (a subscriber set, a publish run) kept it alive.
///
/// Each connection holds the census strongly, so its deinit can report without touching the server, which
/// may already be gone during teardown.
final class ObjectCensus {
    private(set) var alive = 0

    func born() { alive += 1 }
    func died() { alive -= 1 }
}
