#!/usr/bin/env python3
"""Hostile-client benchmark for fanoutd: what one abusive client costs everyone else.

Each attack gets a fresh `fanoutd --listen 127.0.0.1:PORT`. While the attack runs from its own connections,
a prober (a separate process, so that the attacker's Python work cannot delay it) holds one more connection
and sends `PING` every 10 ms, one outstanding at a time, timing each round trip, and samples the server's
VmRSS every 50 ms. After the attack the attacker's connections are closed, the script waits 10 s, reads
VmRSS again and checks that a new client still gets `+PONG`.

Attacks (full scale; --scale small divides the counts by about 20 and bounds each phase by a few seconds):
  seq-table      SUB a.> on one connection, PUB to 999,999 new subjects a.N, then to 2,000 new b.K
  deep-wildcards SUB 10,000 patterns of 127 tokens from {a,*} plus q, then 250 PUBs of 128 tokens
  listings       1,000,000 exact subscriptions over 100 connections, then 10 x (10 CHANNELS zzz, SUB x,
                 UNSUB x, INFO)
  huge-sub       a 64 KB SUB line of ~18,000 distinct patterns, 20 times
  stalled-subs   300 subscribers with SO_RCVBUF 4096 that never read, 1 KB PUBs round-robin until all are
                 dropped (or 60 s)
  many-sockets   10,000 connections that send nothing; how long until a new client gets +PONG
  auth-guessing  connect, AUTH guessN, close, as fast as possible for 10 s against a server with one user
  ws-fragments   3 WebSocket clients each send 1 MiB BPUBs as one binary message in 16-byte continuation frames
  half-bpubs     1,000 connections each send `BPUB x 1048576` and all but its last byte, max_memory 32 MiB
                 (RSS growth must stay within max_memory plus a tenth, and go back after they close)
  question-pool  101 connections each ask 1,000 unanswered questions; another client's ASK must be taken

Targets: PING p99 <= 50 ms with no ping over 5 s; RSS bounded (peak growth within max_memory, and for
stalled-subs RSS 10 s after <= 2 x before); the server answers afterwards.

Usage: Benchmarks/scripts/hostile.py [--fanoutd PATH] [--scale full|small] [--only NAME[,NAME...]] [--strict]
Exit status: 0, or 1 if the daemon died during an attack (with --strict, also if any verdict is not PASS).
"""
import argparse
import os
import random
import re
import resource
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
PING_INTERVAL = 0.010
PING_TIMEOUT = 5.0
RSS_INTERVAL = 0.050
SETTLE_AFTER = 10.0
P99_TARGET_MS = 50.0


# ----------------------------------------------------------------------------------------------- helpers

def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            match = re.search(r"VmRSS:\s+(\d+)", status.read())
            return int(match.group(1)) if match else 0
    except OSError:
        return 0


def mib(kib):
    return "-" if kib is None else f"{kib / 1024:.0f}"


def fmt_ms(value):
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def percentile(sorted_values, fraction):
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, int(round(fraction * (len(sorted_values) - 1)))))
    return sorted_values[index]


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ------------------------------------------------------------------------------------------------ prober
# Runs as `hostile.py --probe PORT PID [TOKEN]` in a process of its own. Commands on stdin: "mark" starts a
# new segment of round trips, "stop" ends. On stop it prints, per segment, "SEG <timeouts> <rtt ms>...",
# then "PEAK <kib>" and "DISCONNECTS <n>".

def probe_main(port, pid, token):
    def connect():
        sock = socket.create_connection((HOST, port), timeout=10)
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError("closed before greeting")
            buffer += chunk
        buffer = buffer.split(b"\n", 1)[1]
        if token:
            sock.sendall(b"AUTH " + token.encode() + b"\n")
            while b"\n" not in buffer:
                chunk = sock.recv(4096)
                if not chunk:
                    raise OSError("closed after AUTH")
                buffer += chunk
            buffer = buffer.split(b"\n", 1)[1]
        sock.setblocking(False)
        return sock, buffer

    sock, buffer = connect()
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, "sock")
    selector.register(0, selectors.EVENT_READ, "stdin")
    print("ready", flush=True)
    segments = [[[], 0]]  # per segment: round trips in ms, pings over PING_TIMEOUT
    peak = rss_kib(pid)
    disconnects = 0
    counter = 0
    outstanding = None  # (tag, sent at)
    next_ping = next_rss = time.monotonic()
    commands = b""
    running = True

    def drop():
        nonlocal sock, outstanding, disconnects
        try:
            selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()
        sock = None
        disconnects += 1
        if outstanding is not None:  # its answer is lost: counted as timed out
            segments[-1][1] += 1
            outstanding = None

    while running:
        now = time.monotonic()
        if now >= next_rss:
            peak = max(peak, rss_kib(pid))
            next_rss = now + RSS_INTERVAL
        if sock is None:
            try:
                sock, buffer = connect()
                selector.register(sock, selectors.EVENT_READ, "sock")
            except OSError:
                sock = None
        if sock is not None and outstanding is None and now >= next_ping:
            counter += 1
            tag = b"p%d" % counter
            try:
                sock.send(b"PING " + tag + b"\n")  # a few bytes into an idle socket: never partial
                outstanding = (tag, now)
            except OSError:
                drop()
            next_ping = now + PING_INTERVAL
        wake = next_rss if outstanding is not None or sock is None else min(next_rss, next_ping)
        for key, _ in selector.select(max(0.0, wake - time.monotonic())):
            if key.data == "stdin":
                chunk = os.read(0, 4096)
                commands += chunk
                if not chunk:
                    running = False
                while b"\n" in commands:
                    command, commands = commands.split(b"\n", 1)
                    if command.strip() == b"stop":
                        running = False
                    elif command.strip() == b"mark":
                        segments.append([[], 0])
                continue
            if sock is None:
                continue
            try:
                chunk = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            received = time.monotonic()
            if not chunk:
                drop()
                continue
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if outstanding is not None and line.rstrip(b"\r") == b"+PONG " + outstanding[0]:
                    rtt = received - outstanding[1]
                    segments[-1][0].append(rtt * 1000)
                    if rtt >= PING_TIMEOUT:
                        segments[-1][1] += 1
                    outstanding = None
    if outstanding is not None:
        age = time.monotonic() - outstanding[1]
        segments[-1][0].append(age * 1000)  # a lower bound on that round trip
        if age >= PING_TIMEOUT:
            segments[-1][1] += 1
    peak = max(peak, rss_kib(pid))
    for rtts, timeouts in segments:
        print("SEG %d %s" % (timeouts, " ".join("%.3f" % r for r in rtts)))
    print("PEAK %d" % peak)
    print("DISCONNECTS %d" % disconnects, flush=True)


class Prober:
    """The parent's handle on the prober process."""

    def __init__(self, port, pid, token=None):
        command = [sys.executable, os.path.abspath(__file__), "--probe", str(port), str(pid)]
        if token:
            command.append(token)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError("prober did not start")

    def mark(self):
        self.process.stdin.write("mark\n")
        self.process.stdin.flush()

    def stop(self):
        """[(sorted rtts ms, timeouts)] per segment, peak RSS KiB, disconnects."""
        try:
            self.process.stdin.write("stop\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        output, _ = self.process.communicate(timeout=60)
        segments, peak, disconnects = [], 0, 0
        for line in output.splitlines():
            words = line.split()
            if words and words[0] == "SEG":
                segments.append((sorted(float(w) for w in words[2:]), int(words[1])))
            elif words and words[0] == "PEAK":
                peak = int(words[1])
            elif words and words[0] == "DISCONNECTS":
                disconnects = int(words[1])
        return segments, peak, disconnects


def ping_stats(segments):
    """Percentiles corrected for coordinated omission: with one ping outstanding, a stall of T ms hides the
    T / 10 pings that would have been sent meanwhile, so each round trip r also counts r - 10, r - 20, ...
    ms (above 10), as HdrHistogram's recordValueWithExpectedInterval does. `raw_p99` is without that."""
    measured = sorted(r for seg in segments for r in seg[0])
    step = PING_INTERVAL * 1000
    corrected = list(measured)
    for rtt in measured:
        missed = rtt - step
        while missed > step:
            corrected.append(missed)
            missed -= step
    corrected.sort()
    timeouts = sum(seg[1] for seg in segments)
    return {"n": len(measured), "p50": percentile(corrected, 0.50), "p99": percentile(corrected, 0.99),
            "max": measured[-1] if measured else None, "timeouts": timeouts,
            "raw_p50": percentile(measured, 0.50), "raw_p99": percentile(measured, 0.99)}


# ------------------------------------------------------------------------------------------------ daemon

class Daemon:
    def __init__(self, binary, env=None, config=None, workdir=None):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
        environment.update(env or {})
        self.stderr_path = os.path.join(workdir, "fanoutd.stderr")
        self.stderr_file = open(self.stderr_path, "wb")
        command = [binary, "--listen", f"{HOST}:0"]
        if config:
            command += ["--config", config]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.stderr_file,
                                        env=environment, start_new_session=True)
        self.pid = self.process.pid
        self.port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.port is None:
            with open(self.stderr_path, "rb") as log:
                found = re.search(rb"listening on 127\.0\.0\.1:(\d+)", log.read())
            if found:
                self.port = int(found.group(1))
            elif self.process.poll() is not None:
                break
            else:
                time.sleep(0.05)
        if self.port is None:
            self.stop()
            with open(self.stderr_path, "rb") as log:
                raise RuntimeError("fanoutd did not start: " + log.read()[-500:].decode(errors="replace"))

    def stderr_bytes(self):
        try:
            return os.path.getsize(self.stderr_path)
        except OSError:
            return 0

    def crashed(self):
        return self.process.poll() is not None

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr_file.close()


# ------------------------------------------------------------------------------------ attacker connections

class Conn:
    """A client connection whose replies are read on a thread of its own and counted where they lie."""

    def __init__(self, port, rcvbuf=None, reader=True, keep_lines=False):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(30)
        sock.connect((HOST, port))
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError("closed before the greeting")
            buffer += chunk
        self.greeting, self.tail = buffer.split(b"\n", 1)
        sock.settimeout(None)
        self.sock = sock
        self.lines = 0
        self.errors = 0
        self.error_samples = []
        self.kept = [] if keep_lines else None
        self.closed = False
        self.cv = threading.Condition()
        if reader:
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()

    def _read(self):
        tail = self.tail
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            data = tail + chunk if tail else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                tail = data
                continue
            complete, tail = data[:cut + 1], data[cut + 1:]
            count = complete.count(b"\n")
            errors = complete.count(b"-ERR")
            with self.cv:
                self.lines += count
                self.errors += errors
                if errors and len(self.error_samples) < 3:
                    for line in complete.split(b"\n"):
                        if line.startswith(b"-ERR") and len(self.error_samples) < 3:
                            self.error_samples.append(line[:120].decode(errors="replace"))
                if self.kept is not None:
                    self.kept.extend(complete.split(b"\n")[:-1])
                self.cv.notify_all()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def wait_lines(self, count, deadline):
        """True once `count` lines have arrived; False at the deadline or when the connection closed."""
        with self.cv:
            while self.lines < count:
                if self.closed:
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cv.wait(min(left, 0.5))
            return True

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def request(port, line, timeout=5.0, token=None):
    """One command on a fresh connection: its reply line, or None."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as sock:
            buffer = b""
            wanted = 2
            payload = line
            if token:
                payload = b"AUTH " + token.encode() + b"\n" + line
                wanted = 3
            sock.sendall(payload)
            while buffer.count(b"\n") < wanted:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                buffer += chunk
            lines = buffer.split(b"\n")
            return lines[wanted - 1].decode(errors="replace") if len(lines) > wanted - 1 else None
    except OSError:
        return None


def info(port, token=None):
    reply = request(port, b"INFO\n", token=token) or ""
    return dict(pair.split("=", 1) for pair in reply.split()[1:] if "=" in pair)


# ----------------------------------------------------------------------------------------------- attacks
# Each attack takes the context and returns (size text, notes list). It registers the connections it opens
# with ctx.own() so that the runner closes them when it ends.

class Context:
    def __init__(self, daemon, prober, scale, token=None):
        self.daemon = daemon
        self.port = daemon.port
        self.pid = daemon.pid
        self.prober = prober
        self.scale = scale
        self.small = scale == "small"
        self.div = 20 if self.small else 1
        self.limit = 10.0 if self.small else 60.0  # the time bound of an attack's main phase
        self.token = token
        self.owned = []
        self.segment_notes = []  # (label, segment index) reported in the notes

    def own(self, thing):
        self.owned.append(thing)
        return thing

    def close_all(self):
        for thing in self.owned:
            try:
                thing.close()
            except OSError:
                pass
        self.owned = []


def attack_seq_table(ctx):
    subjects = 999_999 // ctx.div if not ctx.small else 49_999
    extra = 2_000 // ctx.div
    batch = 10_000
    subscriber = ctx.own(Conn(ctx.port))
    subscriber.send(b"SUB a.>\n")
    subscriber.wait_lines(1, time.monotonic() + 10)
    publisher = ctx.own(Conn(ctx.port))
    deadline = time.monotonic() + ctx.limit
    start = time.monotonic()
    sent = 0
    while sent < subjects and time.monotonic() < deadline:
        upto = min(subjects, sent + batch)
        if not publisher.send(b"".join(b"PUB a.%d x\n" % n for n in range(sent, upto))):
            break
        sent = upto
        publisher.wait_lines(sent - 2 * batch, deadline)  # at most two batches in flight
    publisher.wait_lines(sent, deadline)
    first_phase = time.monotonic() - start
    done_a = publisher.lines
    ctx.prober.mark()
    t0 = time.monotonic()
    publisher.send(b"".join(b"PUB b.%d x\n" % k for k in range(extra)))
    finished = publisher.wait_lines(done_a + extra, t0 + ctx.limit)  # a time bound of its own
    last = time.monotonic() - t0
    done_b = publisher.lines - done_a
    size = f"{subjects:,} a.N + {extra:,} b.K"
    notes = [f"{done_a:,}/{subjects:,} a.N publishes acknowledged in {first_phase:.1f} s "
             f"({done_a / max(first_phase, 1e-9):,.0f}/s); deliveries read by the a.> subscriber: "
             f"{subscriber.lines - 1:,}",
             f"last {extra:,} publishes (b.K): {last * 1000:.0f} ms"
             + ("" if finished else f" and NOT finished ({done_b:,}/{extra:,} acknowledged)"),
             f"errors: {publisher.errors} {publisher.error_samples[:1]}"]
    if ctx.small:
        size += " (max_tracked_subjects=50000)"
    ctx.segment_notes.append(("the last publishes (b.K)", 1))
    return size, notes


def attack_deep_wildcards(ctx):
    count = 10_000 // ctx.div
    publishes = max(12, 250 // ctx.div)
    rng = random.Random(7)
    conn = ctx.own(Conn(ctx.port))
    patterns = [".".join(rng.choice("a*") for _ in range(127)) + ".q" for _ in range(count)]
    deadline = time.monotonic() + ctx.limit
    start = time.monotonic()
    for first in range(0, count, 1000):
        if not conn.send(b"".join(b"SUB " + p.encode() + b"\n" for p in patterns[first:first + 1000])):
            break
    conn.wait_lines(count, deadline)
    sub_time = time.monotonic() - start
    replied, refused = conn.lines, conn.errors
    samples = list(conn.error_samples)
    accepted = replied - refused
    ctx.prober.mark()
    hit = ".".join(["a"] * 128).encode()
    miss = ".".join(["a"] * 127 + ["b"]).encode()
    deadline = time.monotonic() + ctx.limit
    start = time.monotonic()
    sent = 0
    per_batch = 10
    while sent < publishes and time.monotonic() < deadline:
        lines = [b"PUB " + (hit if (sent + i) % 2 == 0 else miss) + b" x\n"
                 for i in range(min(per_batch, publishes - sent))]
        conn.send(b"".join(lines))
        sent += len(lines)
        conn.wait_lines(replied + sent, deadline)
    conn.wait_lines(replied + sent, deadline)
    pub_time = time.monotonic() - start
    done = conn.lines - replied
    size = f"{count:,} x 128-token SUB, {publishes} PUB"
    notes = [f"patterns accepted {accepted:,}, refused {refused:,} of {count:,} "
             f"(replies {replied:,} in {sub_time:.1f} s) {samples[:1]}",
             f"publishes acknowledged {done}/{publishes} in {pub_time * 1000:.0f} ms "
             f"({pub_time * 1000 / max(done, 1):.1f} ms each)"]
    ctx.segment_notes.append(("the publishes", 1))
    return size, notes


def attack_listings(ctx):
    connections = 100 // ctx.div
    per_connection = 10_000
    rounds = 10
    deadline = time.monotonic() + max(ctx.limit, 30 if ctx.small else 120)
    start = time.monotonic()
    subscribers = [ctx.own(Conn(ctx.port)) for _ in range(connections)]
    for c, conn in enumerate(subscribers):
        lines = []
        for first in range(0, per_connection, 1000):
            lines.append(b"SUB " + b" ".join(b"s.%d.%d" % (c, n) for n in range(first, first + 1000)) + b"\n")
        conn.send(b"".join(lines))
    expected = per_connection // 1000
    for conn in subscribers:
        conn.wait_lines(expected, deadline)
    setup = time.monotonic() - start
    refused = sum(c.errors for c in subscribers)
    total_subs = info(ctx.port).get("subscriptions", "?")
    ctx.prober.mark()
    lister = ctx.own(Conn(ctx.port, keep_lines=True))
    round_times = []
    deadline = time.monotonic() + ctx.limit
    sequence = b"CHANNELS zzz\n" * 10 + b"SUB x\nUNSUB x\nINFO\n"
    for r in range(rounds):
        if time.monotonic() >= deadline:
            break
        t0 = time.monotonic()
        lister.send(sequence)
        if not lister.wait_lines(13 * (r + 1), deadline):
            break
        round_times.append(time.monotonic() - t0)
    size = f"{connections * per_connection:,} subs, {rounds} x 13 cmds"
    notes = [f"setup: {connections} connections x {per_connection:,} subscriptions in {setup:.1f} s, "
             f"{refused} refused, INFO subscriptions={total_subs}",
             f"rounds done {len(round_times)}/{rounds}; round time mean "
             f"{statistics.mean(round_times) * 1000 if round_times else 0:.0f} ms, max "
             f"{max(round_times) * 1000 if round_times else 0:.0f} ms; "
             f"CHANNELS reply: {(lister.kept[0][:40].decode(errors='replace') if lister.kept else '-')}"]
    ctx.segment_notes.append(("the subscription setup", 0))
    ctx.skip_segments = 1  # the row reports the listing phase only
    return size, notes


def huge_sub_line(max_line=65536):
    alphabet = [chr(c) for c in range(0x21, 0x7F) if chr(c) not in ".*>"]
    patterns = list(alphabet)
    patterns += [a + b for a in alphabet for b in alphabet]
    patterns += [a + b + c for a in alphabet for b in alphabet for c in alphabet]
    line = "SUB"
    chosen = 0
    for pattern in patterns:
        if len(line) + 1 + len(pattern) > max_line - 8:
            break
        line += " " + pattern
        chosen += 1
    return line.encode() + b"\n", chosen


def attack_huge_sub(ctx):
    times = max(1, 20 // ctx.div)
    line, patterns = huge_sub_line()
    conn = ctx.own(Conn(ctx.port, keep_lines=True))
    deadline = time.monotonic() + ctx.limit
    start = time.monotonic()
    conn.send(line * times)
    conn.wait_lines(times, deadline)
    elapsed = time.monotonic() - start
    replies = [l.decode(errors="replace")[:60] for l in (conn.kept or [])]
    kinds = {}
    for reply in replies:
        key = " ".join(reply.split()[:2])
        kinds[key] = kinds.get(key, 0) + 1
    size = f"{len(line) - 1:,} B x {patterns:,} pats x {times}"
    notes = [f"{len(replies)}/{times} replies in {elapsed * 1000:.0f} ms "
             f"({elapsed * 1000 / max(len(replies), 1):.0f} ms each): {kinds}",
             f"first reply: {replies[0] if replies else '-'}"]
    return size, notes


def attack_stalled(ctx):
    count = 300 // ctx.div
    payload = b"x" * 1000
    stalled = []
    for n in range(count):
        conn = ctx.own(Conn(ctx.port, rcvbuf=4096, reader=False))
        conn.send(b"SUB s.%d\n" % n)
        stalled.append(conn)
    # Every subscription is confirmed before publishing (their replies sit unread in the kernel).
    wait_until = time.monotonic() + 10
    base = info(ctx.port)
    while int(base.get("subscriptions", 0)) < count and time.monotonic() < wait_until:
        time.sleep(0.05)
        base = info(ctx.port)
    base_clients = int(base.get("clients", 0))
    publisher = ctx.own(Conn(ctx.port))
    round_bytes = b"".join(b"PUB s.%d " % n + payload + b"\n" for n in range(count))
    rounds_per_send = max(1, (1 << 20) // len(round_bytes))
    chunk = round_bytes * rounds_per_send
    per_chunk = count * rounds_per_send
    stop = threading.Event()
    state = {"sent": 0}

    def pump():
        while not stop.is_set():
            if not publisher.send(chunk):
                return
            state["sent"] += per_chunk
            publisher.wait_lines(state["sent"] - 4 * per_chunk, time.monotonic() + 1)

    thread = threading.Thread(target=pump, daemon=True)
    start = time.monotonic()
    thread.start()
    deadline = start + (60 if not ctx.small else 20)
    dropped = 0
    last = {}
    while time.monotonic() < deadline:
        time.sleep(0.25)
        current = info(ctx.port)
        if current:
            last = current
            # base_clients is the prober, the stalled and the INFO connection; now the publisher too.
            dropped = count - (int(current.get("clients", base_clients + 1)) - 3)
            if dropped >= count:
                break
    elapsed = time.monotonic() - start
    stop.set()
    thread.join(timeout=10)
    size = f"{count} stalled, 1 KB PUBs"
    notes = [f"{dropped}/{count} stalled subscribers dropped in {elapsed:.1f} s; published "
             f"{int(last.get('published', 0)):,} ({int(last.get('published', 0)) / 1024:,.0f} MiB); "
             f"slow_consumers={last.get('slow_consumers', '?')} memory_drops={last.get('memory_drops', '-')} "
             f"backlog_bytes={last.get('backlog_bytes', '-')}"]
    if ctx.small:
        size += " (max_memory=54 MB)"
    ctx.rss_rule = "after<=2x"
    return size, notes


def attack_stalled_replays(ctx):
    """Connections that each ask for a long replay (LAST of 100,000 messages of 1 KB) and never read: every
    byte queued for a connection counts against max_memory, and a replay waits for its client to read."""
    messages = 100_000 // ctx.div
    count = 200 // ctx.div
    payload = b"h" * 1000
    publisher = ctx.own(Conn(ctx.port))
    batch = 1000
    for start in range(0, messages, batch):
        publisher.send(b"".join(b"PUB h.one %d " % n + payload + b"\n" for n in range(start, start + batch)))
        publisher.wait_lines(start + batch, time.monotonic() + 30)
    base = info(ctx.port)
    stalled = []
    for _ in range(count):
        conn = ctx.own(Conn(ctx.port, rcvbuf=4096, reader=False))
        conn.send(b"LAST h.one %d\n" % messages)
        stalled.append(conn)
    deadline = time.monotonic() + (20 if ctx.small else 30)
    peak_waiting = 0
    last = {}
    while time.monotonic() < deadline:
        time.sleep(0.25)
        current = info(ctx.port)
        if current:
            last = current
            peak_waiting = max(peak_waiting, int(current.get("replays_waiting", 0)))
    size = f"{count} x LAST of {messages:,} x 1 KB, unread"
    ctx.rss_rule = "within-max-memory"
    notes = [f"history {int(base.get('history_messages', 0)):,} msgs; replays waiting for their clients: "
             f"{peak_waiting}/{count}; memory_drops={last.get('memory_drops', '-')} "
             f"slow_consumers={last.get('slow_consumers', '-')} backlog_bytes={last.get('backlog_bytes', '-')}"]
    return size, notes


def attack_stalled_streams(ctx):
    """Event streams (SSE) of one subject that never read, while a publisher floods it: 50 streams, 20,000
    PUBs of 1 KB. Each message's event is encoded once for all the streams."""
    with open(ctx.daemon.stderr_path, "rb") as log:
        found = re.search(rb"serving HTTP on http://127\.0\.0\.1:(\d+)", log.read())
    http = int(found.group(1))
    count = 50 // (5 if ctx.small else 1)
    messages = 20_000 // (5 if ctx.small else 1)
    for _ in range(count):
        # A raw socket: an HTTP client is sent no greeting.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((HOST, http))
        sock.sendall(b"GET /events?subject=s.x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        ctx.own(sock)
    wait_until = time.monotonic() + 10
    while time.monotonic() < wait_until:
        if request(ctx.port, b"CHANNELS s.x\n") == f"+OK 1 s.x={count}":
            break
        time.sleep(0.05)
    publisher = ctx.own(Conn(ctx.port))
    payload = b"e" * 1000
    start = time.monotonic()
    for first in range(0, messages, 1000):
        publisher.send(b"".join(b"PUB s.x %d " % n + payload + b"\n" for n in range(first, first + 1000)))
        publisher.wait_lines(first + 1000, time.monotonic() + 60)
    elapsed = time.monotonic() - start
    last = info(ctx.port)
    size = f"{count} stalled SSE streams, {messages:,} x 1 KB"
    notes = [f"published in {elapsed:.2f} s; slow_consumers={last.get('slow_consumers', '-')} "
             f"memory_drops={last.get('memory_drops', '-')}"]
    return size, notes


def attack_many_sockets(ctx):
    count = 600 if ctx.small else 10_000
    idle_timeout = ctx.idle_timeout
    sockets = []
    start = time.monotonic()
    selector = selectors.DefaultSelector()
    failed = 0
    for first in range(0, count, 500):
        batch = []
        for _ in range(min(500, count - first)):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex((HOST, ctx.port))
            selector.register(sock, selectors.EVENT_WRITE)
            batch.append(sock)
        pending = set(batch)
        wait_until = time.monotonic() + 5
        while pending and time.monotonic() < wait_until:
            for key, _ in selector.select(0.5):
                pending.discard(key.fileobj)
                selector.unregister(key.fileobj)
        for sock in pending:
            selector.unregister(sock)
        for sock in batch:
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0 or sock in pending:
                failed += 1
            ctx.own(sock)
            sockets.append(sock)
    ready = time.monotonic()
    opened = ready - start
    time.sleep(1)
    greeted = refused = silent = 0
    for sock in sockets:
        try:
            data = sock.recv(64, socket.MSG_PEEK)
            if data.startswith(b"+HELLO"):
                greeted += 1
            elif data.startswith(b"-ERR"):
                refused += 1
            else:
                silent += 1
        except BlockingIOError:
            silent += 1
        except OSError:
            silent += 1
    # A legitimate client tries every 250 ms until it gets +PONG.
    got_in = None
    attempts = 0
    last_reply = None
    deadline = ready + idle_timeout + (10 if ctx.small else 30)
    while time.monotonic() < deadline:
        attempts += 1
        try:
            with socket.create_connection((HOST, ctx.port), timeout=2) as sock:
                sock.settimeout(2)
                buffer = b""
                sock.sendall(b"PING legit\n")
                while buffer.count(b"\n") < 2:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    buffer += chunk
                lines = buffer.split(b"\n")
                last_reply = lines[0][:60].decode(errors="replace")
                if len(lines) > 1 and lines[1].startswith(b"+PONG"):
                    got_in = time.monotonic() - ready
                    break
        except OSError as error:
            last_reply = str(error)[:60]
        time.sleep(0.25)
    if got_in is None or got_in > idle_timeout + 5:
        ctx.problems.append("a new client did not get in within idle_unsubscribed_timeout + 5 s")
    size = f"{count:,} idle sockets"
    if ctx.small:
        size += " (max 500, idle 2 s)"
    ctx.result_extra = ("got in after", "%.1f s" % got_in if got_in is not None else "never")
    notes = [f"opened {count:,} in {opened:.1f} s ({failed} failed at TCP level); after 1 s: {greeted} greeted, "
             f"{refused} refused (-ERR), {silent} silent (in the accept queue or closed)",
             f"legitimate client: " + (f"got +PONG {got_in:.1f} s after the sockets were open"
                                       if got_in is not None else
                                       f"never got in within {deadline - ready:.0f} s")
             + f" ({attempts} attempts; idle_unsubscribed_timeout {idle_timeout:g} s; last: {last_reply})"]
    return size, notes


def attack_auth(ctx):
    duration = 10.0 if not ctx.small else 5.0
    concurrency = 16
    selector = selectors.DefaultSelector()
    counts = {"checked": 0, "refused": 0, "limit": 0, "other": 0}
    samples = {}
    guess = [0]

    def open_one():
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex((HOST, ctx.port))
        guess[0] += 1
        selector.register(sock, selectors.EVENT_WRITE, {"guess": guess[0], "buffer": b"", "sent": False})

    stderr_start = ctx.daemon.stderr_bytes()
    start = time.monotonic()
    for _ in range(concurrency):
        open_one()
    while time.monotonic() - start < duration:
        for key, mask in selector.select(0.5):
            sock, state = key.fileobj, key.data
            finished = False
            if not state["sent"]:
                try:
                    sock.send(b"AUTH guess%d\n" % state["guess"])
                    state["sent"] = True
                    selector.modify(sock, selectors.EVENT_READ, state)
                except OSError:
                    counts["other"] += 1
                    finished = True
            else:
                try:
                    chunk = sock.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                state["buffer"] += chunk
                lines = state["buffer"].split(b"\n")
                reply = None
                if len(lines) >= 3 or (lines[0].startswith(b"-ERR") and len(lines) >= 2):
                    reply = lines[1] if lines[0].startswith(b"+HELLO") else lines[0]
                if reply is not None or not chunk:
                    text = (reply or b"<closed>").decode(errors="replace")
                    if "invalid token" in text:
                        kind = "checked"
                    elif "too many failed AUTH" in text:
                        kind = "refused"
                    elif text.startswith("-ERR limit"):
                        kind = "limit"
                    else:
                        kind = "other"
                    counts[kind] += 1
                    samples.setdefault(kind, text[:90])
                    finished = True
            if finished:
                selector.unregister(sock)
                sock.close()
                if time.monotonic() - start < duration:
                    open_one()
    elapsed = time.monotonic() - start
    for key in list(selector.get_map().values()):
        selector.unregister(key.fileobj)
        key.fileobj.close()
    time.sleep(0.5)
    stderr_bytes = ctx.daemon.stderr_bytes() - stderr_start
    total = sum(counts.values())
    size = f"{total:,} guesses in {elapsed:.0f} s"
    ctx.result_extra = ("checked/s", f"{counts['checked'] / elapsed:,.1f}")
    notes = [f"checked (invalid token) {counts['checked']:,}, refused unchecked (throttled) {counts['refused']:,}, "
             f"limit {counts['limit']:,}, other {counts['other']:,}; checked {counts['checked'] / elapsed:,.1f}/s, "
             f"all attempts {total / elapsed:,.0f}/s",
             f"daemon stderr: {stderr_bytes:,} bytes, {stderr_bytes / elapsed:,.0f} B/s",
             "replies: " + "; ".join(f"{kind}: {text}" for kind, text in sorted(samples.items()))]
    notes += [f"log lines like this one: {n:,} x {line}" for line, n in common_log_lines(ctx.daemon, stderr_start)]
    return size, notes


def common_log_lines(daemon, offset, top=2):
    """The daemon's most frequent stderr lines since offset, with numbers, ports and times masked."""
    try:
        with open(daemon.stderr_path, "rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
    except OSError:
        return []
    counts = {}
    for line in text.splitlines():
        shape = re.sub(r"\d+", "N", line.split(" ", 1)[1] if line[:4].isdigit() else line)[:110]
        counts[shape] = counts.get(shape, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])[:top]


def hash_token(binary, token):
    result = subprocess.run([binary, "--hash-token"], input=token.encode(), capture_output=True, timeout=30)
    found = re.search(rb"token_hash:\s*(\S+)", result.stdout)
    if not found:
        raise RuntimeError("fanoutd --hash-token failed: " + result.stderr.decode(errors="replace"))
    return found.group(1).decode()



# ------------------------------------------------------------------------------- attacks at the edges
# Each of these once held up or bloated the server (issue 35): a WebSocket message in tiny continuation
# frames, BPUB payloads left unfinished on many connections, and one client taking every open question.

def http_port(ctx):
    with open(ctx.daemon.stderr_path, "rb") as log:
        found = re.search(rb"serving HTTP on http://127\.0\.0\.1:(\d+)", log.read())
    return int(found.group(1))


class WebSocketConn:
    """A raw RFC 6455 client: frames are written exactly as given, so a test controls every split."""

    def __init__(self, port):
        sock = socket.create_connection((HOST, port), timeout=30)
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        sock.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError("closed during the upgrade")
            head += chunk
        if not head.startswith(b"HTTP/1.1 101"):
            raise OSError("upgrade refused: " + head.split(b"\r\n", 1)[0].decode(errors="replace"))
        self.buffer = head.split(b"\r\n\r\n", 1)[1]
        self.sock = sock

    @staticmethod
    def frame(opcode, payload, fin=True):
        # A zero mask key leaves the payload as it is; the server must unmask whatever the key.
        first = (0x80 if fin else 0) | opcode
        size = len(payload)
        if size < 126:
            header = bytes([first, 0x80 | size])
        elif size < 65536:
            header = bytes([first, 0x80 | 126]) + size.to_bytes(2, "big")
        else:
            header = bytes([first, 0x80 | 127]) + size.to_bytes(8, "big")
        return header + b"\0\0\0\0" + payload

    @classmethod
    def fragmented(cls, opcode, message, piece):
        pieces = [message[i:i + piece] for i in range(0, len(message), piece)] or [b""]
        return b"".join(cls.frame(opcode if i == 0 else 0, chunk, fin=(i == len(pieces) - 1))
                        for i, chunk in enumerate(pieces))

    def read_message(self, deadline):
        """The next data frame's payload (frames from the server are whole and unmasked), or None."""
        while True:
            if len(self.buffer) >= 2:
                size = self.buffer[1] & 0x7F
                offset = 2
                if size == 126:
                    size, offset = int.from_bytes(self.buffer[2:4], "big"), 4
                elif size == 127:
                    size, offset = int.from_bytes(self.buffer[2:10], "big"), 10
                if len(self.buffer) >= offset + size:
                    opcode = self.buffer[0] & 0x0F
                    payload = self.buffer[offset:offset + size]
                    self.buffer = self.buffer[offset + size:]
                    if opcode == 8:
                        return None
                    if opcode in (1, 2):
                        return payload
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                return None
            if not chunk:
                return None
            self.buffer += chunk

    def close(self):
        self.sock.close()


def attack_ws_fragments(ctx):
    """Three WebSocket clients each send a 1 MiB BPUB as one binary message cut into 16-byte continuation
    frames (65,536 frames a message), over and over: each frame must cost work in proportion to itself."""
    port = http_port(ctx)
    clients = 3
    size = 1 << 20
    message = b"BPUB ws.frag %d\n" % size + bytes(range(256)) * (size // 256) + b"\n"
    wire = WebSocketConn.fragmented(2, message, 16)
    rounds = 2 if ctx.small else 5
    replies = {"ok": 0, "other": []}
    lock = threading.Lock()

    def client():
        conn = ctx.own(WebSocketConn(port))
        conn.read_message(time.monotonic() + 10)  # the greeting
        for _ in range(rounds):
            conn.sock.sendall(wire)
            reply = conn.read_message(time.monotonic() + 60)
            with lock:
                if reply is not None and reply.startswith(b"+OK"):
                    replies["ok"] += 1
                else:
                    replies["other"].append(reply[:80] if reply else reply)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=ctx.limit * 2)
    elapsed = time.monotonic() - start
    if replies["ok"] != clients * rounds:
        ctx.problems.append(f"{replies['ok']}/{clients * rounds} fragmented BPUBs answered +OK: "
                            f"{replies['other'][:2]}")
    notes = [f"{replies['ok']}/{clients * rounds} messages of 1 MiB in 16-byte frames answered +OK in "
             f"{elapsed:.1f} s ({clients * rounds * size / max(elapsed, 1e-9) / 1e6:.1f} MB/s)"]
    return f"{clients} clients x {rounds} x 1 MiB in 16 B frames", notes


def attack_half_bpubs(ctx):
    """Connections that each announce a 1 MiB BPUB and send all but its last byte, under max_memory 32 MiB:
    bytes held for an unfinished payload count against max_memory like every other byte, and go back when the
    connections close."""
    count = 100 if ctx.small else 1000
    size = 1 << 20
    body = b"BPUB half.x %d\n" % size + b"h" * (size - 1)
    selector = selectors.DefaultSelector()
    pending = {}
    for _ in range(count):
        try:
            sock = socket.create_connection((HOST, ctx.port), timeout=10)
        except OSError:
            break  # refused at the door: counted below as not opened
        sock.setblocking(False)
        ctx.own(sock)
        pending[sock] = memoryview(body)
        selector.register(sock, selectors.EVENT_WRITE)
    opened = len(pending)
    deadline = time.monotonic() + ctx.limit
    last_progress = time.monotonic()
    finished = 0
    while pending and time.monotonic() < deadline and time.monotonic() - last_progress < 3:
        for key, _ in selector.select(timeout=0.5):
            sock = key.fileobj
            try:
                sent = sock.send(pending[sock][:1 << 16])
            except BlockingIOError:
                continue
            except OSError:
                selector.unregister(sock)
                del pending[sock]
                continue
            last_progress = time.monotonic()
            pending[sock] = pending[sock][sent:]
            if not len(pending[sock]):
                selector.unregister(sock)
                del pending[sock]
                finished += 1
    held = info(ctx.port)
    time.sleep(1.0)  # the RSS sampler's window with every unfinished payload held
    selector.close()
    ctx.rss_rule = "growth-within-max-memory"
    notes = [f"{opened}/{count} connections opened; {finished} sent all but the last byte, {len(pending)} were "
             f"held back by the server; clients={held.get('clients', '?')} "
             f"memory_drops={held.get('memory_drops', '-')} backlog_bytes={held.get('backlog_bytes', '-')}"]
    return f"{count} x BPUB 1 MiB less a byte, max_memory 32 MiB", notes


def attack_question_pool(ctx):
    """101 connections each ask 1,000 questions that nobody answers (60 s timeouts) toward one receiver that
    never answers; another client's ASK must still be taken: no one connection takes the whole pool."""
    askers = 6 if ctx.small else 101
    per = 1000
    receiver = ctx.own(Conn(ctx.port))
    receiver.send(b"SUB pool.q\n")
    receiver.wait_lines(1, time.monotonic() + 10)
    line = b"ASK pool.q 60000 0 are-you-there\n"
    conns = []
    for _ in range(askers):
        conn = ctx.own(Conn(ctx.port, keep_lines=False))
        conn.send(line * per)
        conns.append(conn)
    deadline = time.monotonic() + ctx.limit
    for conn in conns:
        conn.wait_lines(per, deadline)
    refused = sum(conn.errors for conn in conns)
    bystander = request(ctx.port, b"ASK pool.q 1000 0 bystander\n")
    other = request(ctx.port, b"ASK elsewhere.q 1000 0 bystander\n")
    for label, reply in (("on the flooded subject", bystander), ("on another subject", other)):
        if not reply or not reply.startswith("+OK"):
            ctx.problems.append(f"a bystander's ASK {label} was refused: {reply}")
    notes = [f"{askers} x {per:,} ASKs: {refused:,} refused; the bystander's ASKs got {bystander!r} and "
             f"{other!r}; open questions: {info(ctx.port).get('open_questions', '?')}"]
    return f"{askers} x {per:,} unanswered ASKs", notes


ATTACKS = [
    ("seq-table", attack_seq_table),
    ("deep-wildcards", attack_deep_wildcards),
    ("listings", attack_listings),
    ("huge-sub", attack_huge_sub),
    ("stalled-subs", attack_stalled),
    ("stalled-replays", attack_stalled_replays),
    ("stalled-streams", attack_stalled_streams),
    ("many-sockets", attack_many_sockets),
    ("auth-guessing", attack_auth),
    ("ws-fragments", attack_ws_fragments),
    ("half-bpubs", attack_half_bpubs),
    ("question-pool", attack_question_pool),
]


# ------------------------------------------------------------------------------------------------ runner

def run_attack(name, function, args, workdir):
    env, config, token = {}, None, None
    small = args.scale == "small"
    idle_timeout = 60.0
    if name == "seq-table" and small:
        env["FANOUTD_MAX_TRACKED_SUBJECTS"] = "50000"
    if name == "stalled-subs" and small:
        env["FANOUTD_MAX_MEMORY"] = str((1 << 30) // 20)
    if name == "many-sockets" and small:
        env["FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT"] = "2"
        env["FANOUTD_MAX_CONNECTIONS"] = "500"
        idle_timeout = 2.0
    if name == "stalled-replays":
        config = os.path.join(workdir, "history.yaml")
        with open(config, "w") as out:
            out.write('history:\n  - subjects: "h.>"\n    max_messages: 100000\nhistory_max_bytes: 268435456\n')
    if name == "stalled-streams":
        config = os.path.join(workdir, "http.yaml")
        with open(config, "w") as out:
            out.write('http_listen: "127.0.0.1:0"\n')
    if name == "ws-fragments":
        config = os.path.join(workdir, "ws.yaml")
        with open(config, "w") as out:
            out.write('http_listen: "127.0.0.1:0"\n')
    if name == "half-bpubs":
        env["FANOUTD_MAX_MEMORY"] = str(HALF_BPUB_MAX_MEMORY)
        env["FANOUTD_MAX_PENDING_BYTES"] = str(HALF_BPUB_MAX_MEMORY // 4)
    if name == "question-pool" and small:
        env["FANOUTD_MAX_OPEN_QUESTIONS"] = "5000"
    if name == "auth-guessing":
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        token = "".join(random.SystemRandom().choice(alphabet) for _ in range(32))
        config = os.path.join(workdir, "auth.yaml")
        with open(config, "w") as out:
            out.write("users:\n  hostile:\n    token_hash: \"%s\"\n" % hash_token(args.fanoutd, token))
    daemon = Daemon(args.fanoutd, env=env, config=config, workdir=workdir)
    result = {"name": name, "size": "-", "notes": [], "crashed": False}
    ctx = None
    try:
        time.sleep(0.3)
        result["before"] = rss_kib(daemon.pid)
        prober = Prober(daemon.port, daemon.pid, token)
        ctx = Context(daemon, prober, args.scale, token)
        ctx.idle_timeout = idle_timeout
        ctx.skip_segments = 0
        ctx.rss_rule = "growth<=max_memory"
        ctx.result_extra = None
        ctx.problems = []
        try:
            size, notes = function(ctx)
        except Exception as error:  # an attack that could not run is reported, not fatal
            size, notes = "-", [f"attack failed: {type(error).__name__}: {error}"]
        segments, peak, disconnects = prober.stop()
        result["size"], result["notes"] = size, notes
        result["ping"] = ping_stats(segments[ctx.skip_segments:])
        if not result["ping"]["n"]:
            # The attack's own phase was over before a single PING: the whole run is what was measured.
            result["ping"] = ping_stats(segments)
        result["ping_all"] = ping_stats(segments)
        for label, index in ctx.segment_notes:
            if index < len(segments):
                stats = ping_stats(segments[index:index + 1])
                result["notes"].append(f"PING during {label}: p50 {fmt_ms(stats['p50'])} p99 {fmt_ms(stats['p99'])} "
                                       f"max {fmt_ms(stats['max'])} ms, {stats['timeouts']} timeouts, {stats['n']} pings")
        raw = result["ping"]
        result["notes"].append(f"PING round trips measured: {raw['n']:,}, uncorrected p50 {fmt_ms(raw['raw_p50'])} "
                               f"p99 {fmt_ms(raw['raw_p99'])} ms")
        if disconnects:
            result["notes"].append(f"the prober's connection was closed by the server {disconnects} time(s)")
        result["peak"] = peak
        ctx.close_all()
        settle_until = time.monotonic() + SETTLE_AFTER
        while time.monotonic() < settle_until:
            result["peak"] = max(result["peak"], rss_kib(daemon.pid)) if not daemon.crashed() else result["peak"]
            time.sleep(0.1)
        result["after"] = rss_kib(daemon.pid) if not daemon.crashed() else None
        reply = request(daemon.port, b"PING still-there\n", token=None) if not daemon.crashed() else None
        result["alive"] = bool(reply and reply.startswith("+PONG"))
        if not result["alive"] and not daemon.crashed():
            # Busy or stuck? Keep asking for a while and say when it answered again.
            ended = settle_until - SETTLE_AFTER
            give_up = time.monotonic() + (20 if args.scale == "small" else 90)
            while time.monotonic() < give_up and not daemon.crashed():
                reply = request(daemon.port, b"PING still-there\n")
                if reply and reply.startswith("+PONG"):
                    result["recovered"] = time.monotonic() - ended
                    break
                time.sleep(1)
            result["notes"].append("answered again %.0f s after the attack ended" % result["recovered"]
                                   if "recovered" in result else
                                   "still not answering %.0f s after the attack ended" % (time.monotonic() - ended))
        result["rss_rule"] = ctx.rss_rule
        result["extra"] = ctx.result_extra
        result["problems"] = ctx.problems
    finally:
        if ctx is not None:
            ctx.close_all()
        if daemon.crashed():
            result["crashed"] = True
            result["notes"].append(f"fanoutd DIED during the attack (exit status {daemon.process.returncode})")
            result["alive"] = False
        daemon.stop()
        try:
            with open(daemon.stderr_path, "rb") as log:
                tail = log.read()[-600:].decode(errors="replace").strip().splitlines()
            if result["crashed"]:
                result["notes"].extend("stderr: " + line for line in tail[-5:])
        except OSError:
            pass
    return result


HALF_BPUB_MAX_MEMORY = 32 << 20


def max_memory_kib(name, scale):
    if name == "half-bpubs":
        return HALF_BPUB_MAX_MEMORY // 1024
    if name == "stalled-subs" and scale == "small":
        return (1 << 30) // 20 // 1024
    return (1 << 30) // 1024


def verdict(result, scale):
    problems = list(result.get("problems", []))
    ping = result.get("ping") or {}
    if ping.get("p99") is None or ping["p99"] > P99_TARGET_MS:
        problems.append(f"PING p99 {fmt_ms(ping.get('p99'))} ms > {P99_TARGET_MS:.0f} ms")
    if ping.get("timeouts"):
        problems.append(f"{ping['timeouts']} pings over {PING_TIMEOUT:.0f} s")
    before, peak, after = result.get("before"), result.get("peak"), result.get("after")
    # max_memory bounds queued bytes; the allocator holds more than that for them (libevent sizes a buffer
    # chain to the next power of two), so the peak may pass the bound by up to half again.
    if before and peak and peak - before > 1.5 * max_memory_kib(result["name"], scale):
        problems.append(f"RSS grew {mib(peak - before)} MiB, more than 1.5 x max_memory")
    if result.get("rss_rule") == "within-max-memory" and peak and peak > 1.1 * max_memory_kib(result["name"], scale):
        problems.append(f"RSS peaked at {mib(peak)} MiB, more than max_memory plus a tenth")
    if (result.get("rss_rule") == "growth-within-max-memory" and before and peak
            and peak - before > 1.1 * max_memory_kib(result["name"], scale)):
        problems.append(f"RSS grew {mib(peak - before)} MiB, more than max_memory plus a tenth")
    if result.get("rss_rule") == "growth-within-max-memory" and before and after and after - before > 0.25 * max_memory_kib(result["name"], scale):
        problems.append(f"RSS 10 s after the connections closed is {mib(after - before)} MiB over before: not given back")
    if result.get("rss_rule") == "after<=2x" and before and (after is None or after > 2 * before):
        problems.append(f"RSS after {mib(after)} MiB > 2 x before ({mib(before)} MiB)")
    if not result.get("alive"):
        problems.append("no answer afterwards" + (" (crashed)" if result.get("crashed") else ""))
    return ("PASS" if not problems else "FAIL") + (": " + "; ".join(problems) if problems else "")


def main():
    parser = argparse.ArgumentParser(description="Hostile-client benchmark for fanoutd (see the module docstring).")
    parser.add_argument("--fanoutd", default=None, help="the daemon binary (default .build/release/fanoutd)")
    parser.add_argument("--scale", choices=["full", "small"], default="full")
    parser.add_argument("--only", default=None, help="comma-separated attack names: "
                        + ", ".join(name for name, _ in ATTACKS))
    parser.add_argument("--strict", action="store_true", help="exit 1 when any attack's verdict is not PASS")
    parser.add_argument("--probe", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe_main(int(args.probe[0]), int(args.probe[1]), args.probe[2] if len(args.probe) > 2 else None)
        return 0
    if args.fanoutd is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        args.fanoutd = os.path.join(root, ".build", "release", "fanoutd")
    args.fanoutd = os.path.abspath(args.fanoutd)
    if not os.access(args.fanoutd, os.X_OK):
        print(f"hostile.py: {args.fanoutd} is not an executable; build it with "
              "`swift build -c release --product fanoutd`", file=sys.stderr)
        return 2
    selected = ATTACKS
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in dict(ATTACKS)]
        if unknown:
            print(f"hostile.py: unknown attack(s) {', '.join(unknown)}; choose from "
                  + ", ".join(name for name, _ in ATTACKS), file=sys.stderr)
            return 2
        selected = [(name, fn) for name, fn in ATTACKS if name in wanted]
    nofile = raise_nofile()
    print(f"fanoutd hostile-client run: {args.fanoutd}, scale {args.scale}, RLIMIT_NOFILE {nofile}, "
          f"PING every {PING_INTERVAL * 1000:.0f} ms", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="fanoutd-hostile-") as workdir:
        for name, function in selected:
            print(f"  running {name} ...", flush=True)
            started = time.monotonic()
            result = run_attack(name, function, args, workdir)
            result["elapsed"] = time.monotonic() - started
            results.append(result)
            for note in result["notes"]:
                print(f"    {note}", flush=True)

    header = ("attack", "size", "p50 ms", "p99 ms", "max ms", ">5s", "RSS before", "peak", "after 10s", "alive")
    rows = []
    for r in results:
        ping = r.get("ping") or {}
        rows.append((r["name"], r["size"], fmt_ms(ping.get("p50")), fmt_ms(ping.get("p99")),
                     fmt_ms(ping.get("max")), str(ping.get("timeouts", "-")), mib(r.get("before")) + " MiB",
                     mib(r.get("peak")) + " MiB", mib(r.get("after")) + " MiB",
                     "yes" if r.get("alive") else ("CRASHED" if r.get("crashed") else
                                                   "no (%.0f s)" % r["recovered"] if "recovered" in r else "no")))
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    print()
    print(f"PING ms: percentiles corrected for coordinated omission (a stall of T counts as the T / "
          f"{PING_INTERVAL * 1000:.0f} ms pings it held up); max and >5s are measured round trips; alive: answered "
          f"a new client's PING {SETTLE_AFTER:.0f} s after the attack (no (N s): only N s after it)")
    for row in [header, tuple("-" * w for w in widths)] + rows:
        print("  ".join(str(cell).ljust(widths[i]) if i < 2 else str(cell).rjust(widths[i])
                        for i, cell in enumerate(row)))
    print()
    for r in results:
        extra = f" ({r['extra'][0]} {r['extra'][1]})" if r.get("extra") else ""
        print(f"{r['name']}: {verdict(r, args.scale)}{extra}")
    if args.strict and any(verdict(r, args.scale) != "PASS" for r in results):
        return 1
    return 1 if any(r["crashed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
