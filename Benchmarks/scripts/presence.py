#!/usr/bin/env python3
"""What presence (1.3) costs, measured in one run: the SUB/UNSUB rate and the memory per member with presence
off and on, and the fan-out of joins and leaves to 1,000 watchers beside the same fan-out of an ordinary PUB.

    Benchmarks/scripts/presence.py [--rounds 5] [--only rate,memory,fanout,crowd] [--fanoutd PATH]

fanoutd (`--log-level warning`, FANOUTD_MAX_CONNECTIONS 10100, otherwise its defaults) runs pinned to core 0;
this script is the load generator and pins itself to core 1. Server CPU is the on-CPU time of all its threads
(/proc/PID/task/*/schedstat) just before and after each measurement. `gen %` is this script's own CPU time over
the measurement's wall time: near 100% the generator's core is saturated and a rate is partly the generator's
(read the server's CPU per unit then). `other %` is the time cores 0 and 1 spent on anything but the server and
the generator (from /proc/stat), in percent of one core: above 10% a row's figures are not the server's alone.

rate     Two servers: one with `presence: []` (off), one with `presence: ["on.>", "fan.>"]`. Each round
         measures, in an order that swaps from round to round: the off server with subject room.x; the on server
         with off.x (configured, subject not kept); the on server with on.x (kept, no one watching); the on
         server with on.w (kept, one watcher reading $presence.on.w). One connection pipelines 50,000
         `SUB s` / `UNSUB s` pairs, 500 pairs a write, at most 2,000 pairs unanswered. Per row: commands per
         second and server CPU ns per command, medians over the rounds, and each row's ratio to the off server.
memory   10,000 connections on the on server; VmRSS after they connected, then after each sent
         `SUB off.m` (not kept), or `SUB on.m` (kept: a member, its join published to nobody), on fresh servers,
         alternating; the delta / 10,000 is the memory per subscription, and on minus off the memory per member.
fanout   1,000 watchers, each subscribed to $presence.fan.room and to fan.msg. Presence: one client pipelines
         2,000 SUB/UNSUB pairs of fan.room: 4,000 joins and leaves, each delivered to 1,000 watchers. Baselines:
         one client pipelines 4,000 `PUB fan.msg <payload>` of a payload as long as a leave's (consecutive PUBs
         of one read share a publish run); and 400 of the same PUB one at a time, each awaiting its `+OK`
         (each its own read, so its own run, as each presence event is; a tenth, as each costs milliseconds).
         In an order that swaps per round; each ends when every watcher has every line. Events per second,
         server CPU µs per event and ns per delivery, and the ratios presence / PUB.
crowd    10,000 members of crowd.room close their sockets in one go, on a server that keeps presence for it
         (10,000 leaves published) and on one with `presence: []`, alternating. A bystander PINGs 1 ms apart
         from a process of its own, each wait timed by the wall clock and as the server's loop thread's CPU
         time meanwhile; the departure ends when INFO shows the crowd gone (and the 20,000 events published).
         Per mode: the departure's wall and loop time, the PINGs during it, their p99 and max.
"""
import argparse
import multiprocessing
import os
import re
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
TIMEOUT = 120
servers = []
work = tempfile.mkdtemp(prefix="presence-bench-")
next_port = [17811]


# MARK: servers

def start(fanoutd, config):
    """Starts fanoutd on core 0 with the YAML `config`; returns (process, port)."""
    port = next_port[0]
    next_port[0] += 1
    path = os.path.join(work, f"config-{port}.yaml")
    with open(path, "w") as file:
        file.write(config)
    command = ["taskset", "-c", "0", fanoutd, "--listen", f"127.0.0.1:{port}", "--log-level", "warning",
               "--config", path]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
    environment["FANOUTD_MAX_CONNECTIONS"] = "10100"
    log = open(os.path.join(work, f"fanoutd-{port}.log"), "w")
    process = subprocess.Popen(command, stdout=log, stderr=log, env=environment)
    servers.append(process)
    for _ in range(200):
        try:
            greet(port).close()
            return process, port
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)
    sys.exit(f"fanoutd on port {port} did not start: {open(log.name).read()}")


def stop(process):
    process.terminate()
    process.wait(30)
    servers.remove(process)


def connect(port):
    sock = socket.socket()
    sock.settimeout(TIMEOUT)
    sock.connect(("127.0.0.1", port))
    return sock


def read_line(sock):
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data[:-1].decode()


def greet(port):
    sock = connect(port)
    greeting = read_line(sock)
    assert greeting.startswith("+HELLO "), greeting
    return sock


def command(sock, line):
    sock.sendall(line.encode() + b"\n")
    return read_line(sock)


def cpu_ns(pid):
    """On-CPU nanoseconds of every thread of `pid` (schedstat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as schedstat:
                total += int(schedstat.read().split()[0])
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def busy_ticks_cores_0_1():
    """Ticks cores 0 and 1 spent on anything but idle and iowait."""
    total = 0
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith("cpu0 ") or line.startswith("cpu1 "):
                fields = [int(x) for x in line.split()[1:]]
                total += sum(fields) - fields[3] - fields[4]
    return total


class Measure:
    """The server's CPU, the generator's CPU, the other processes' share of cores 0 and 1, and the wall time
    between `__enter__` and `__exit__`."""

    def __init__(self, pid):
        self.pid = pid

    def __enter__(self):
        self.server = cpu_ns(self.pid)
        self.generator = time.process_time()
        self.busy = busy_ticks_cores_0_1()
        self.started = time.perf_counter()
        return self

    def __exit__(self, *_):
        self.wall = time.perf_counter() - self.started
        self.server_ns = cpu_ns(self.pid) - self.server
        generator = time.process_time() - self.generator
        self.gen_pct = 100 * generator / self.wall
        busy = (busy_ticks_cores_0_1() - self.busy) / CLOCK_TICKS
        self.other_pct = max(0.0, 100 * (busy - self.server_ns / 1e9 - generator) / self.wall)


def drain(sock, lines):
    """Reads until `lines` newlines came; returns the bytes read."""
    data = bytearray()
    count = 0
    while count < lines:
        chunk = sock.recv(262144)
        if not chunk:
            raise OSError("connection closed")
        count += chunk.count(b"\n")
        data += chunk
    return bytes(data)


# MARK: rate

def churn(sock, subject, pairs, watcher=None, batch=500, window=2000):
    """Pipelines `pairs` SUB/UNSUB pairs of `subject`, `batch` a write, at most `window` pairs unanswered;
    a `watcher` (non-blocking) reads its joins and leaves meanwhile, and all of them before this returns."""
    chunk = (f"SUB {subject}\nUNSUB {subject}\n" * batch).encode()
    sent = answered = watched = 0
    while answered < 2 * pairs:
        while sent < pairs and sent - answered // 2 < window:
            sock.sendall(chunk)
            sent += batch
        data = sock.recv(262144)
        if not data:
            raise OSError("connection closed")
        answered += data.count(b"\n")
        while watcher is not None:
            try:
                data = watcher.recv(262144)
            except BlockingIOError:
                break
            watched += data.count(b"\n")
    if watcher is not None and watched < 2 * pairs:
        watcher.setblocking(True)
        drain(watcher, 2 * pairs - watched)
        watcher.setblocking(False)


def rate(fanoutd, rounds):
    pairs = 50_000
    off_server, off_port = start(fanoutd, "presence: []\n")
    on_server, on_port = start(fanoutd, 'presence: ["on.>", "fan.>"]\n')
    watcher = greet(on_port)
    assert command(watcher, "SUB $presence.on.w") == "+OK 1"
    watcher.setblocking(False)
    rows = [("presence off (presence: [])", off_server, off_port, "room.x"),
            ("presence on, subject not kept", on_server, on_port, "off.x"),
            ("presence on, kept, no watcher", on_server, on_port, "on.x"),
            ("presence on, kept, 1 watcher", on_server, on_port, "on.w")]
    results = {row[0]: [] for row in rows}
    for n in range(rounds):
        order = rows if n % 2 == 0 else list(reversed(rows))
        for label, server, port, subject in order:
            sock = greet(port)
            with Measure(server.pid) as measure:
                churn(sock, subject, pairs, watcher if subject == "on.w" else None)
            sock.close()
            results[label].append({"rate": 2 * pairs / measure.wall, "ns": measure.server_ns / (2 * pairs),
                                   "gen": measure.gen_pct, "other": measure.other_pct})
    watcher.close()
    stop(off_server)
    stop(on_server)
    print(f"\nSUB/UNSUB rate: 1 connection, {pairs:,} pairs pipelined, {rounds} rounds, medians")
    print("%-32s %12s %9s %8s %7s %6s %7s" % ("", "commands/s", "ns/cmd", "rate x", "cpu x", "gen %", "other %"))
    base = results[rows[0][0]]
    for label, *_ in rows:
        runs = results[label]
        print("%-32s %12.0f %9.0f %8.2f %7.2f %6.0f %7.0f" % (
            label, med(runs, "rate"), med(runs, "ns"), med(runs, "rate") / med(base, "rate"),
            med(runs, "ns") / med(base, "ns"), med(runs, "gen"), med(runs, "other")))


# MARK: memory

def memory(fanoutd, rounds, count=10_000):
    deltas = {"off.m": [], "on.m": []}
    for n in range(rounds):
        for subject in (["off.m", "on.m"] if n % 2 == 0 else ["on.m", "off.m"]):
            server, port = start(fanoutd, 'presence: ["on.>"]\n')
            clients = []
            for _ in range(count):
                clients.append(connect(port))
            for sock in clients:
                assert sock.recv(4096).startswith(b"+HELLO ")
            probe = greet(port)
            command(probe, "PING")
            before = rss_kib(server.pid)
            for index in range(0, count, 500):
                batch = clients[index:index + 500]
                for sock in batch:
                    sock.sendall(f"SUB {subject}\n".encode())
                for sock in batch:
                    assert sock.recv(4096) == b"+OK 1\n"
            # The joins are published (to nobody) before RSS is read.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                info = dict(w.split("=", 1) for w in command(probe, "INFO").split()[1:] if "=" in w)
                if subject == "off.m" or info.get("presence_events") == str(count):
                    break
                time.sleep(0.05)
            after = rss_kib(server.pid)
            deltas[subject].append((after - before) * 1024 / count)
            for sock in clients:
                sock.close()
            probe.close()
            stop(server)
    off, on = statistics.median(deltas["off.m"]), statistics.median(deltas["on.m"])
    print(f"\nMemory: {count:,} connections each SUB one subject, VmRSS delta / {count:,}, {rounds} rounds, medians")
    print(f"  subject not kept (a subscription):           {off:7.0f} bytes per subscription  {fmt(deltas['off.m'])}")
    print(f"  subject kept (a subscription and a member):  {on:7.0f} bytes per subscription  {fmt(deltas['on.m'])}")
    print(f"  a member over a subscription:                {on - off:7.0f} bytes")


def fmt(values):
    return "(" + ", ".join(f"{v:.0f}" for v in values) + ")"


# MARK: fan-out

def fanout(fanoutd, rounds, watchers=1000, pairs=2000):
    server, port = start(fanoutd, 'presence: ["fan.>"]\n')
    selector = selectors.DefaultSelector()
    socks = []
    for _ in range(watchers):
        sock = greet(port)
        sock.sendall(b"SUB $presence.fan.room fan.msg\n")
        socks.append(sock)
    for sock in socks:
        assert read_line(sock) == "+OK 2"
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    churner = greet(port)
    publisher = greet(port)
    events = 2 * pairs
    # A leave's payload is the longest: "leave id=1002,user=-,since_s=0,reason=unsub" (43 bytes).
    payload = "x" * len("leave id=1002,user=-,since_s=0,reason=unsub")

    counts = {}

    def await_all(lines):
        remaining = sum(1 for sock in socks if counts[sock] < lines)
        deadline = time.monotonic() + TIMEOUT
        while remaining:
            if time.monotonic() > deadline:
                sys.exit("fan-out: watchers did not get every line in time")
            for key, _ in selector.select(1):
                sock = key.fileobj
                try:
                    data = sock.recv(262144)
                except BlockingIOError:
                    continue
                if not data:
                    sys.exit("fan-out: a watcher was closed")
                before = counts[sock]
                counts[sock] = before + data.count(b"\n")
                if before < lines <= counts[sock]:
                    remaining -= 1

    def read_ready():
        for key, _ in selector.select(0):
            try:
                data = key.fileobj.recv(262144)
            except BlockingIOError:
                continue
            counts[key.fileobj] += data.count(b"\n")

    def one_at_a_time():
        line = f"PUB fan.msg {payload}\n".encode()
        for n in range(events // 10):
            publisher.sendall(line)
            assert read_line(publisher) == f"+OK {watchers}"
            if n % 50 == 49:
                read_ready()

    kinds = ["presence", "pub", "pub1"]
    results = {kind: [] for kind in kinds}
    for n in range(rounds):
        for kind in (kinds if n % 2 == 0 else list(reversed(kinds))):
            counts.clear()
            counts.update({sock: 0 for sock in socks})
            with Measure(server.pid) as measure:
                if kind == "presence":
                    churner.sendall(b"SUB fan.room\nUNSUB fan.room\n" * pairs)
                elif kind == "pub":
                    publisher.sendall(f"PUB fan.msg {payload}\n".encode() * events)
                else:
                    one_at_a_time()
                await_all(events // 10 if kind == "pub1" else events)
            if kind != "pub1":
                drain(churner if kind == "presence" else publisher, events)
            count = events // 10 if kind == "pub1" else events
            results[kind].append({"rate": count / measure.wall, "us": measure.server_ns / count / 1000,
                                  "ns_delivery": measure.server_ns / (count * watchers),
                                  "gen": measure.gen_pct, "other": measure.other_pct})
    stop(server)
    print(f"\nFan-out to {watchers:,} watchers: {events:,} events a round ({events * watchers:,} deliveries), "
          f"{rounds} rounds, medians")
    print("%-44s %10s %9s %12s %6s %7s" % ("", "events/s", "µs/event", "ns/delivery", "gen %", "other %"))
    for kind, label in (("presence", f"joins/leaves ({pairs:,} SUB/UNSUB pairs)"),
                        ("pub", f"PUB fan.msg, {len(payload)}-byte payload, pipelined"),
                        ("pub1", "the same PUB, 400 one at a time (await +OK)")):
        runs = results[kind]
        print("%-44s %10.0f %9.1f %12.1f %6.0f %7.0f" % (label, med(runs, "rate"), med(runs, "us"),
                                                          med(runs, "ns_delivery"), med(runs, "gen"),
                                                          med(runs, "other")))
    for base, label in (("pub", "presence / PUB pipelined"), ("pub1", "presence / PUB one at a time")):
        print("%-44s %10.2f %9.2f" % (label, med(results["presence"], "rate") / med(results[base], "rate"),
                                      med(results["presence"], "us") / med(results[base], "us")))

# MARK: a crowd closing

def loop_ns(pid):
    """On-CPU nanoseconds of the server's loop thread (its main thread)."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as schedstat:
        return int(schedstat.read().split()[0])


def pinger(port, pid, stopping, replies):
    """The bystander, a process of its own: PINGs 1 ms apart until `stopping`, then sends back each PING's
    (sent at, wall ms, loop ms)."""
    sock = greet(port)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    waits = []
    number = 0
    replies.put("ready")
    while not stopping.is_set():
        number += 1
        before, sent = loop_ns(pid), time.perf_counter()
        assert command(sock, f"PING {number}") == f"+PONG {number}"
        waits.append((sent, (time.perf_counter() - sent) * 1000, (loop_ns(pid) - before) / 1e6))
        time.sleep(0.001)
    replies.put(waits)


def crowd(fanoutd, rounds, count=10_000):
    results = {"off": [], "on": []}
    for n in range(rounds):
        for mode in (["off", "on"] if n % 2 == 0 else ["on", "off"]):
            server, port = start(fanoutd, 'presence: ["crowd.>"]\n' if mode == "on" else "presence: []\n")
            members = []
            for index in range(0, count, 500):
                batch = [connect(port) for _ in range(500)]
                for sock in batch:
                    assert sock.recv(4096).startswith(b"+HELLO ")
                    sock.sendall(b"SUB crowd.room\n")
                for sock in batch:
                    assert sock.recv(4096) == b"+OK 1\n"
                members += batch
            probe = greet(port)
            # Spawned, not forked: a forked child would hold the members' sockets open past their close.
            spawn = multiprocessing.get_context("spawn")
            stopping, replies = spawn.Event(), spawn.Queue()
            bystander = spawn.Process(target=pinger, args=(port, server.pid, stopping, replies))
            bystander.start()
            assert replies.get(timeout=30) == "ready"
            started, loop_before = time.perf_counter(), loop_ns(server.pid)
            for sock in members:
                sock.close()
            want = {"clients": "2"} if mode == "off" else {"clients": "2", "presence_events": str(2 * count)}
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                info = dict(w.split("=", 1) for w in command(probe, "INFO").split()[1:] if "=" in w)
                if all(info.get(key) == value for key, value in want.items()):
                    break
                time.sleep(0.005)
            wall, loop = (time.perf_counter() - started) * 1000, (loop_ns(server.pid) - loop_before) / 1e6
            stopping.set()
            waits = replies.get(timeout=30)
            bystander.join(10)
            during = [(w, l) for t, w, l in waits if t >= started]
            walls = sorted(w for w, _ in during)
            loops = sorted(l for _, l in during)
            results[mode].append({"wall": wall, "loop": loop, "pings": len(during),
                                  "p99": walls[min(len(walls) - 1, len(walls) * 99 // 100)], "max": walls[-1],
                                  "loop_p99": loops[min(len(loops) - 1, len(loops) * 99 // 100)],
                                  "loop_max": loops[-1]})
            probe.close()
            stop(server)
    print(f"\nA crowd closing: {count:,} members of one subject close their sockets in one go; a bystander PINGs "
          f"1 ms apart; {rounds} rounds, medians")
    print("%-34s %9s %9s %6s %8s %8s %11s %11s" % ("", "wall ms", "loop ms", "pings", "p99 ms", "max ms",
                                                    "loop p99 ms", "loop max ms"))
    for mode, label in (("off", "presence: [] (no leaves)"), ("on", "presence on (10,000 leaves)")):
        runs = results[mode]
        print("%-34s %9.0f %9.0f %6.0f %8.1f %8.1f %11.1f %11.1f" % (
            label, med(runs, "wall"), med(runs, "loop"), med(runs, "pings"), med(runs, "p99"), med(runs, "max"),
            med(runs, "loop_p99"), med(runs, "loop_max")))


def med(runs, key):
    return statistics.median(run[key] for run in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="rate,memory,fanout,crowd")
    parser.add_argument("--fanoutd", default=os.path.join(ROOT, ".build", "release", "fanoutd"))
    options = parser.parse_args()
    os.sched_setaffinity(0, {1})
    print(f"fanoutd: {options.fanoutd} (core 0); generator: this script (core 1)")
    try:
        for name in options.only.split(","):
            {"rate": rate, "memory": memory, "fanout": fanout, "crowd": crowd}[name](options.fanoutd, options.rounds)
    finally:
        for process in list(servers):
            process.kill()


if __name__ == "__main__":
    main()
