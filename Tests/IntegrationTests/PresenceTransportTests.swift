import Foundation
import Testing

/// Presence (1.3) on the other transports: joins and leaves are ordinary messages, so a WebSocket watcher gets
/// them as a TCP one does, and a WebSocket member joins and leaves as a TCP one does.
@Suite("Presence transports", .threadPerTest, .timeLimit(.minutes(2)))
struct PresenceTransportTests {
    /// A member and a watcher over WebSocket (presence_ws.py), a watcher over TCP beside: the same numbered
    /// join and leave reach both, for a QUIT and for the client's close frame, plain and in a group.
    @Test func aWebSocketMemberJoinsAndLeaves() throws {
        let daemon = try PresenceRig.daemon(arguments: ["--http-listen", "127.0.0.1:0"])
        let run = try runPythonCheck("presence_ws.py", "members", daemon: daemon).finish(timeout: 60)
        #expect(run.status == 0 && run.stdout.contains("ok members"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }
}
