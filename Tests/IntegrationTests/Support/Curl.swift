import Foundation

/// One HTTP request made with the system's curl: the status and the body's lines.
func curl(_ arguments: [String], timeout: TimeInterval = 20) throws -> (status: Int, body: [String]) {
    let run = try ExternalProgram("curl", ["-s", "--max-time", String(Int(timeout)), "-w", "\n%{http_code}\n"] + arguments)
        .finish(timeout: timeout + 5)
    guard run.status == 0, let last = run.stdout.last, let status = Int(last) else {
        throw TestFailure("curl \(arguments.joined(separator: " ")) failed: \((run.stdout + run.stderr).joined(separator: "\n"))")
    }
    var body = Array(run.stdout.dropLast())
    // The status went on a line of its own: a body that ended with a newline leaves an empty line before it.
    if body.last == "" { body.removeLast() }
    return (status, body)
}

/// `curl -N` on an event stream, its lines collected as they arrive.
func eventStream(port: Int, query: String, headers: [String] = []) throws -> ExternalProgram {
    try ExternalProgram("curl", ["-s", "-N", "--max-time", "60"] + headers.flatMap { ["-H", $0] }
                        + ["http://127.0.0.1:\(port)/events?\(query)"])
}
