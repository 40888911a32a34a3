#!/usr/bin/env python3
"""What history (protocol 1.1) costs, and that the servers without it did not get slower. Prints one table.

Usage: python3 Benchmarks/scripts/history.py [--pairs N] [--old DIR] [--new DIR] [--parts 1234]
  --new DIR   the build measured (default .build/release: fanoutd and the `fanout` load generator)
  --old DIR   the build before history, for part 4 (default: none, part 4 skipped), for example a build of
              f7eda62 made with `swift build -c release --scratch-path .build-before` in a worktree of it
  --pairs N   alternating pairs per comparison (default 5); the median of each figure is printed
  --parts     which parts to run (default 1234)
  --scenarios part 4's scenarios (default ABCDFG)
  --raw FILE  append every run's figures to FILE (JSON lines)
  --with-e    part 4 also measures E (p99 latency at 2,000 msgs/s; two more minutes)

Setup as in compare.sh: loopback, servers pinned to core 0 (`taskset -c 0`), the load generator
(`fanout bench`, always the new build's) to core 1, 100-byte payloads, a window of 100 publishes.
  1. Scenario A (1 publisher, 100 subscribers of bench.0, 400,000 messages) against two new servers, one
     keeping 1,000 messages of bench.> and one without history, in an order that swaps from pair to pair.
  2. 1,000,000 retained 100-byte messages (1,000 subjects x 1,000) published pipelined: server RSS.
  3. Replay of 50,000 retained 100-byte messages to one subscriber: from sending RESUME to the 50,000th MSG.
  4. Scenarios A, B, C, D, F and G (E with --with-e) of compare.sh without history, old build against new, alternating.

Server CPU is utime+stime from /proc/PID/stat (fields 14 and 15) around each run, per delivery (per
acknowledged publish in C). `srv%` is that CPU over the run's delivery window: a server core well below
100% busy means the generator (or the shared machine) set the pace, and then CPU per delivery is the fairer
comparison. `gen%` is the generator's own CPU over its whole run (it polls, so it is near 100% by design).
"""
import argparse
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HZ = os.sysconf("SC_CLK_TCK")
PAYLOAD = b"x" * 100
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--new", default=os.path.join(ROOT, ".build/release"))
parser.add_argument("--old")
parser.add_argument("--pairs", type=int, default=5)
parser.add_argument("--parts", default="1234")
parser.add_argument("--scenarios", default="ABCDFG", help="part 4's scenarios (default ABCDFG; E with --with-e)")
parser.add_argument("--raw", help="append every run's figures to this file, one JSON line per table row")
parser.add_argument("--with-e", action="store_true", help="part 4 also measures E (p99 at 2,000 msgs/s, 2 min)")
options = parser.parse_args()
FANOUT = os.path.join(options.new, "fanout")

resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
work = tempfile.mkdtemp(prefix="history-bench-")
raw = open(options.raw or os.devnull, "a")
servers = []
next_port = [17530]


# MARK: servers

def start(build, config=None):
    """Starts `build`'s fanoutd on core 0 with an optional YAML config text; returns (process, port)."""
    port = next_port[0]
    next_port[0] += 1
    command = ["taskset", "-c", "0", os.path.join(build, "fanoutd"), "--listen", f"127.0.0.1:{port}",
               "--log-level", "warning"]
    if config:
        path = os.path.join(work, f"config-{port}.yaml")
        with open(path, "w") as file:
            file.write(config)
        command += ["--config", path]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
    environment["FANOUTD_MAX_CONNECTIONS"] = "10100"
    log = open(os.path.join(work, f"fanoutd-{port}.log"), "w")
    process = subprocess.Popen(command, stdout=log, stderr=log, env=environment)
    servers.append(process)
    for _ in range(200):
        try:
            connect(port).close()
            return process, port
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)
    sys.exit(f"fanoutd on port {port} did not start: {open(log.name).read()}")


def stop(process):
    process.terminate()
    process.wait()
    servers.remove(process)


def connect(port, rcvbuf=None):
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(60)
    sock.connect(("127.0.0.1", port))
    return sock


def read_line(sock, buffered=b""):
    while b"\n" not in buffered:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        buffered += chunk
    line, rest = buffered.split(b"\n", 1)
    return line.decode(), rest


def greet(port, rcvbuf=None):
    sock = connect(port, rcvbuf)
    greeting, rest = read_line(sock)
    assert not rest
    return sock, greeting


def info(port):
    sock, _ = greet(port)
    sock.sendall(b"INFO\n")
    reply, _ = read_line(sock)
    sock.close()
    return dict(pair.split("=", 1) for pair in reply.split()[1:] if "=" in pair)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of the whole line: utime, stime


def cpu_ns(pid):
    """On-CPU nanoseconds of every thread (schedstat): finer than stat's ticks, for short runs."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as schedstat:
            total += int(schedstat.read().split()[0])
    return total


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(key + r":\s+(\d+)", status.read()).group(1))


# MARK: the load generator

def bench(process, port, arguments):
    """One `fanout bench` run against a server: its result, the server's CPU and the generator's."""
    command = ["taskset", "-c", "1", FANOUT, "bench", "--server", f"127.0.0.1:{port}", "--payload", "100",
               "--window", "100", "--json"] + arguments.split()
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = cpu_ticks(process.pid)
    started = time.perf_counter()
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - started
    after = cpu_ticks(process.pid)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(output)["results"][0]
    delivered = int(result["delivered"])
    rate = float(result["delivered_per_s"])
    if delivered == 0:  # publish only: per acknowledged publish
        delivered, rate = int(result["published"]), float(result["published_per_s"])
    server_cpu = (after - before) / HZ
    generator_cpu = (children.ru_utime - before_children.ru_utime) + (children.ru_stime - before_children.ru_stime)
    window = delivered / rate if rate else wall
    return {
        "rate": rate,
        "cpu_ns": server_cpu * 1e9 / delivered if delivered else 0,
        "srv": 100 * server_cpu / window,
        "gen": 100 * generator_cpu / wall,
        "lost": int(result["lost"]),
        "p99": float(result["latency_us"]["p99"]),
    }


def med(runs, key):
    return statistics.median(run[key] for run in runs)


def header(other, this):
    """Column titles; ns is server CPU nanoseconds per delivery."""
    print("%-30s %11s %11s %6s %-11s %6s %6s %6s %-11s %s" % (
        "", other + "/s", this + "/s", "ratio", " pairs", "ns " + other, "ns " + this, "ratio", " pairs",
        f"srv%/gen% {this}, {other}"))


def comparison_row(name, other, this, note=""):
    """A row of medians: rates and CPU per delivery, each ratio this/other of the medians with the range of
    the pairs' own ratios; srv% and gen% of this side, then of the other."""
    rates = sorted(t["rate"] / o["rate"] for o, t in zip(other, this))
    cpus = sorted(t["cpu_ns"] / o["cpu_ns"] for o, t in zip(other, this) if o["cpu_ns"])
    lost = sum(r["lost"] for r in other + this)
    print("%-30s %11.0f %11.0f %5.2fx %5.2f-%-5.2f %6.0f %6.0f %5.2fx %5.2f-%-5.2f %3.0f/%-3.0f %3.0f/%-3.0f%s%s" % (
        name, med(other, "rate"), med(this, "rate"), med(this, "rate") / med(other, "rate"), rates[0], rates[-1],
        med(other, "cpu_ns"), med(this, "cpu_ns"), med(this, "cpu_ns") / med(other, "cpu_ns"), cpus[0], cpus[-1],
        med(this, "srv"), med(this, "gen"), med(other, "srv"), med(other, "gen"),
        f"  lost {lost}" if lost else "", note), flush=True)
    raw.write(json.dumps({"row": name, "other": other, "this": this}) + "\n")
    raw.flush()


def alternate(a, b, arguments, pairs):
    """Runs `arguments` against a and b, a first in even pairs and b first in odd ones."""
    runs_a, runs_b = [], []
    for pair in range(pairs):
        if pair % 2 == 0:
            runs_a.append(bench(*a, arguments))
            runs_b.append(bench(*b, arguments))
        else:
            runs_b.append(bench(*b, arguments))
            runs_a.append(bench(*a, arguments))
    return runs_a, runs_b


# MARK: publishing from Python

def publish(port, subjects, count, batch=10000):
    """Publishes `count` 100-byte messages round-robin over `subjects`, pipelined in batches."""
    sock, _ = greet(port)
    sent = errors = 0
    while sent < count:
        n = min(batch, count - sent)
        sock.sendall(b"".join(b"PUB %s %s\n" % (subjects[(sent + i) % len(subjects)], PAYLOAD) for i in range(n)))
        sent += n
        lines = 0
        while lines < n:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise OSError("connection closed while publishing")
            lines += chunk.count(b"\n")
            errors += chunk.count(b"-ERR")
        if errors:
            raise OSError(f"{errors} publishes refused")
    sock.close()


# MARK: the parts

A = "--publishers 1 --subscribers 100 --subjects 1 --messages 400000"
HISTORY_A = 'history:\n  - subjects: "bench.>"\n    max_messages: 1000\n    max_age: 0\nhistory_max_bytes: 268435456\n'


def part1():
    print(f"1. scenario A, history on (bench.>, 1,000 kept) vs off; new build; median of {options.pairs} pairs")
    header("off", "on")
    off = start(options.new)
    on = start(options.new, HISTORY_A)
    runs_on, runs_off = alternate(on, off, A, options.pairs)
    comparison_row("A delivered/s, CPU ns/delivery", runs_off, runs_on)
    kept = info(on[1])
    print("   history server afterwards: history_messages=%s history_bytes=%s" % (
        kept.get("history_messages"), kept.get("history_bytes")))
    stop(off[0]); stop(on[0])


def part2():
    print("2. 1,000,000 retained 100-byte messages (r.0 .. r.999, max_messages 1000 each); new build")
    config = 'history:\n  - subjects: "r.>"\n    max_messages: 1000\n    max_age: 0\nhistory_max_bytes: 1073741824\n'
    process, port = start(options.new, config)
    time.sleep(0.3)
    before = status_kib(process.pid, "VmRSS")
    started = time.perf_counter()
    publish(port, [b"r.%d" % i for i in range(1000)], 1_000_000)
    seconds = time.perf_counter() - started
    time.sleep(0.5)
    after, peak = status_kib(process.pid, "VmRSS"), status_kib(process.pid, "VmHWM")
    kept = info(port)
    messages, kept_bytes = int(kept["history_messages"]), int(kept["history_bytes"])
    print("   RSS %.1f MB (before publishing %.1f MB, peak %.1f MB); RSS growth %.1f MB = %.0f bytes per retained"
          " message" % (after / 1024, before / 1024, peak / 1024, (after - before) / 1024,
                        (after - before) * 1024 / messages))
    print("   INFO history_messages=%d history_bytes=%d (%.0f per message); published in %.1f s (%.0f/s)" % (
        messages, kept_bytes, kept_bytes / messages, seconds, 1_000_000 / seconds))
    stop(process)


def part3():
    print(f"3. replay of 50,000 retained 100-byte messages to one subscriber (RESUME r.0 <epoch> 0); median of"
          f" {options.pairs}; new build")
    config = 'history:\n  - subjects: "r.>"\n    max_messages: 50000\n    max_age: 0\nhistory_max_bytes: 1073741824\n'
    process, port = start(options.new, config)
    publish(port, [b"r.0"], 50_000)
    total, first, cpu, tick_cpu = [], [], [], []
    for _ in range(options.pairs):
        sock, greeting = greet(port, rcvbuf=16 << 20)
        epoch = re.search(r"epoch=(\S+)", greeting).group(1)
        before, before_ticks = cpu_ns(process.pid), cpu_ticks(process.pid)
        started = time.perf_counter()
        sock.sendall(b"RESUME r.0 %s 0\n" % epoch.encode())
        reply, data = read_line(sock)
        first.append(time.perf_counter() - started)
        lines, tail = data.count(b"\n"), data[-200:]
        while lines < 50_000:
            chunk = sock.recv(16 << 20)
            if not chunk:
                raise OSError("connection closed during the replay")
            lines += chunk.count(b"\n")
            tail = (tail + chunk)[-200:]
        total.append(time.perf_counter() - started)
        cpu.append((cpu_ns(process.pid) - before) / 1e9)
        tick_cpu.append((cpu_ticks(process.pid) - before_ticks) / HZ)
        assert "replayed=50000 missed=0" in reply, reply
        assert tail.rstrip(b"\n").rsplit(b"\n", 1)[-1].startswith(b"MSG r.0 50000 "), tail
        sock.close()
        time.sleep(0.2)
    print("   RESUME to 50,000th MSG: median %.1f ms (runs %s); to the +OK reply: %.1f ms" % (
        1000 * statistics.median(total), " ".join("%.1f" % (1000 * t) for t in total), 1000 * statistics.median(first)))
    print("   server CPU per replay: %.1f ms (schedstat; stat ticks: %.0f ms) = %.0f ns per replayed message" % (
        1000 * statistics.median(cpu), 1000 * statistics.median(tick_cpu), 1e9 * statistics.median(cpu) / 50_000))
    stop(process)


def idle_rss(port, pid):
    """Server RSS growth per idle subscribed connection, 10,000 connections (compare.sh's F)."""
    before = status_kib(pid, "VmRSS")
    sockets = []
    for i in range(10000):
        sock = connect(port)
        sock.sendall(b"SUB idle.%d\n" % i)
        sockets.append(sock)
    for sock in sockets:
        data = b""
        while b"+OK" not in data:
            data += sock.recv(4096)
    time.sleep(0.5)
    after = status_kib(pid, "VmRSS")
    for sock in sockets:
        sock.close()
    return (after - before) * 1024 / 10000


def part4():
    print(f"4. without history: new build vs old ({options.old}); median of {options.pairs} alternating pairs")
    header("old", "new")
    f_old, f_new = [], []
    for pair in range(options.pairs if "F" in options.scenarios else 0):  # F on fresh servers, as compare.sh does
        for which in ((0, 1) if pair % 2 == 0 else (1, 0)):
            process, port = start(options.old if which == 0 else options.new)
            time.sleep(0.2)
            (f_old if which == 0 else f_new).append(idle_rss(port, process.pid))
            stop(process)
    if f_old: print("%-30s %11.0f %11.0f %5.2fx  (RSS bytes per idle subscribed connection, 10,000; lower is better)" % (
        "F idle 10k conns, bytes/conn", statistics.median(f_old), statistics.median(f_new),
        statistics.median(f_new) / statistics.median(f_old)), flush=True)
    raw.write(json.dumps({"row": "F", "old": f_old, "new": f_new}) + "\n")
    raw.flush()
    old = start(options.old)
    new = start(options.new)
    scenarios = [
        ("A fan-out 1x100", A),
        ("B 1000 subjects", "--publishers 1 --subscribers 1000 --subjects 1000 --messages 200000"),
        ("C publish only (per publish)", "--publishers 4 --subscribers 0 --messages 1000000"),
        ("D fan-out 1x5000", "--publishers 1 --subscribers 5000 --subjects 1 --messages 20000"),
        ("G A, 25 of 100 stalled", "--publishers 1 --subscribers 75 --stalled 25 --subjects 1 --messages 400000"),
    ]
    for name, arguments in scenarios:
        if name[0] not in options.scenarios:
            continue
        runs_new, runs_old = alternate(new, old, arguments, options.pairs)
        comparison_row(name, runs_old, runs_new)
    # E: p99 latency at 2,000 msgs/s, both servers at once (two generators on core 1), as compare.sh does.
    e_old, e_new = [], []
    if not (options.with_e or "E" in options.scenarios):
        stop(old[0]); stop(new[0])
        return
    for run in range(2 * options.pairs):
        command = lambda port: ["taskset", "-c", "1", FANOUT, "bench", "--server", f"127.0.0.1:{port}", "--payload",
                                "100", "--window", "100", "--json", "--publishers", "1", "--subscribers", "50",
                                "--subjects", "1", "--messages", "20000", "--rate", "2000"]
        order = (old, new) if run % 2 == 0 else (new, old)
        running = [subprocess.Popen(command(server[1]), stdout=subprocess.PIPE, text=True) for server in order]
        p99 = [float(json.loads(p.communicate()[0])["results"][0]["latency_us"]["p99"]) for p in running]
        (e_old if order[0] is old else e_new).append(p99[0])
        (e_new if order[0] is old else e_old).append(p99[1])
    print("%-30s %11.0f %11.0f %5.2fx  (p99 us, lower is better; %d runs, both servers at once)" % (
        "E p99 at 2k/s (us)", statistics.median(e_old), statistics.median(e_new),
        statistics.median(e_new) / statistics.median(e_old), 2 * options.pairs))
    stop(old[0]); stop(new[0])


def main():
    print("history.py %s  (%s; load average %s)" % (" ".join(sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M"),
                                                    " ".join(open("/proc/loadavg").read().split()[:3])), flush=True)
    for part in options.parts:
        if part == "4" and not options.old:
            print("4. skipped: no --old build")
            continue
        {"1": part1, "2": part2, "3": part3, "4": part4}[part]()
    print("load average at the end %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
try:
    main()
finally:
    for server in list(servers):
        server.kill()
