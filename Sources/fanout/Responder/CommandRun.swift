#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// One run of the responder's command for one question: the payload on its stdin, its stdout collected, on the
/// calling (worker) thread. The command leads a process group of its own, so that a timeout kills what it
/// started too (`sh -c 'sleep 99'`), and starts with SIGPIPE at its default (this process ignores it).
struct CommandRun {
    /// How a run ended.
    enum Outcome: Equatable, Sendable {
        /// Exit status 0: everything it wrote to stdout.
        case output([UInt8])
        /// A non-zero exit status.
        case failed(status: Int32)
        /// Ended by a signal it did not get from us.
        case signalled(Int32)
        /// Still running at the deadline: killed, with its process group.
        case timedOut
        /// Wrote more than the cap to stdout: killed.
        case tooMuchOutput
        case cannotStart(String)
    }

    let arguments: [String]
    let environment: [String: String]
    let timeout: Duration
    let maxOutput: Int

    /// Runs the command to its end or its deadline. `started` gets the process id (for killing on exit).
    func run(input: [UInt8], started: (pid_t) -> Void, ended: (pid_t) -> Void) -> Outcome {
        let deadline = ContinuousClock.now + timeout
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1]
        // Pipes are made close-on-exec and the command spawned under one lock: a command spawned by another
        // worker in between would inherit these pipes, and hold our command's stdout open past its exit.
        Self.spawnLock.lock()
        guard pipe(&stdinPipe) == 0 else {
            Self.spawnLock.unlock()
            return .cannotStart(Self.errorText("pipe"))
        }
        guard pipe(&stdoutPipe) == 0 else {
            close(stdinPipe[0]); close(stdinPipe[1])
            Self.spawnLock.unlock()
            return .cannotStart(Self.errorText("pipe"))
        }
        for fd in stdinPipe + stdoutPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies; the originals close at exec.
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), mask = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        Self.spawnLock.unlock()
        guard spawned == 0 else {
            close(stdinPipe[1]); close(stdoutPipe[0])
            return .cannotStart("\(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        started(pid)
        defer { ended(pid) }
        var writer: Int32? = stdinPipe[1]
        _ = fcntl(stdinPipe[1], F_SETFL, fcntl(stdinPipe[1], F_GETFL) | O_NONBLOCK)
        let reader = stdoutPipe[0]
        defer {
            if let writer { close(writer) }
            close(reader)
        }
        var written = 0
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        if input.isEmpty, let open = writer { close(open); writer = nil }
        // Feed stdin and drain stdout together: a command may write before it has read everything.
        while true {
            let left = deadline - .now
            guard left > .zero else { return killed(pid, .timedOut) }
            var fds = [pollfd(fd: reader, events: Int16(POLLIN), revents: 0)]
            if let writer { fds.append(pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)) }
            let milliseconds = Int32(Swift.min((left / .milliseconds(1)).rounded(.up), 60_000))
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 && errno != EINTR { return killed(pid, .cannotStart(Self.errorText("poll"))) }
            if ready <= 0 { continue }
            if fds.count > 1, fds[1].revents != 0, let open = writer {
                let sent = input[written...].withUnsafeBytes { write(open, $0.baseAddress, $0.count) }
                if sent > 0 { written += sent }
                // All written, or the command closed its stdin without reading it all (EPIPE): no more input.
                if written == input.count || (sent < 0 && errno != EAGAIN && errno != EINTR) {
                    close(open)
                    writer = nil
                }
            }
            if fds[0].revents != 0 {
                let count = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                output.append(contentsOf: chunk[0..<count])
                if output.count > maxOutput { return killed(pid, .tooMuchOutput) }
            }
        }
        // Its stdout is closed; it normally exits at once, but the deadline still holds.
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard ContinuousClock.now < deadline else { return killed(pid, .timedOut) }
            usleep(1000)
        }
        let exit = status & 0x7f
        if exit != 0 { return .signalled(exit) }
        let code = (status >> 8) & 0xff
        return code == 0 ? .output(output) : .failed(status: code)
    }

    /// Kills the command's process group and reaps the command.
    private func killed(_ pid: pid_t, _ outcome: Outcome) -> Outcome {
        kill(-pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return outcome
    }

    private static let spawnLock = ConditionLock()

    private static func errorText(_ call: String) -> String {
        "\(call): \(String(cString: strerror(errno)))"
    }
}
