#!/usr/bin/env python3
"""What history on disk (history_dir) costs against history in memory, and how fast a server starts on it.

Usage: python3 Benchmarks/scripts/disk_history.py [--pairs N] [--warmup N] [--build DIR] [--parts 12] [--scenarios AC]
  --build DIR  the build measured (default .build/release: fanoutd and the `fanout` load generator)
  --pairs N    rounds per comparison (default 5); the median of each figure is printed
  --warmup N   unmeasured rounds before them (default 1): the steady state of a history at its bound, whose
               emptied segment files are reused, not a new directory's first files

Setup as in history.py: loopback, servers pinned to core 0, `fanout bench` to core 1, 100-byte payloads,
a window of 100 publishes, every server keeping 1,000 messages of bench.>.
  1. Scenarios A (1 publisher, 100 subscribers, 400,000 messages) and C (4 publishers, no subscribers,
     1,000,000 messages) against three servers at once: history in memory, on disk with history_fsync
     everysec, and on disk with always. Each round runs the three in an order that rotates, so that a drift
     of the machine favours none; the ratios are disk against memory, medians of the rounds, with the range
     of the rounds' own ratios. CPU is the server's utime+stime per delivery (per publish in C).
  2. Start-up: 1,000,000 retained 100-byte messages (1,000 subjects x 1,000, published by `fanout bench`),
     then SIGTERM and a start on the same directory, timed from the exec to the first greeting read on a
     new connection; then the same after SIGKILL. Disk bytes per retained message from INFO.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HZ = os.sysconf("SC_CLK_TCK")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--build", default=os.path.join(ROOT, ".build/release"))
parser.add_argument("--pairs", type=int, default=5)
parser.add_argument("--warmup", type=int, default=1)
parser.add_argument("--parts", default="12")
parser.add_argument("--scenarios", default="AC")
options = parser.parse_args()
FANOUT = os.path.join(options.build, "fanout")
RULE = 'history:\n  - subjects: "bench.>"\n    max_messages: 1000\n    max_age: 0\nhistory_max_bytes: 268435456\n'
SCENARIOS = {
    "A": "--publishers 1 --subscribers 100 --subjects 1 --messages 400000",
    "C": "--publishers 4 --subscribers 0 --messages 1000000",
}
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
work = tempfile.mkdtemp(prefix="disk-history-bench-")
servers = []
next_port = [17560]


def connect(port):
    sock = socket.socket()
    sock.settimeout(60)
    sock.connect(("127.0.0.1", port))
    return sock


def greet(port):
    sock = connect(port)
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise OSError("closed before the greeting")
        data += chunk
    return sock


def info(port):
    sock = greet(port)
    sock.sendall(b"INFO\n")
    data = b""
    while not data.endswith(b"\n"):
        data += sock.recv(65536)
    sock.close()
    return dict(pair.split("=", 1) for pair in data.decode().split()[1:] if "=" in pair)


def launch(config, port):
    path = os.path.join(work, f"config-{port}.yaml")
    with open(path, "w") as file:
        file.write(config)
    command = ["taskset", "-c", "0", os.path.join(options.build, "fanoutd"), "--listen", f"127.0.0.1:{port}",
               "--log-level", "warning", "--config", path]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
    environment["FANOUTD_MAX_CONNECTIONS"] = "10100"
    log = open(os.path.join(work, f"fanoutd-{port}.log"), "a")
    process = subprocess.Popen(command, stdout=log, stderr=log, env=environment)
    servers.append(process)
    return process


def wait_greeting(process, port, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            greet(port).close()
            return
        except OSError:
            if process.poll() is not None:
                sys.exit(f"fanoutd on port {port} exited: {open(os.path.join(work, f'fanoutd-{port}.log')).read()}")
            time.sleep(0.002)
    sys.exit(f"fanoutd on port {port} did not answer")


def start(config):
    port = next_port[0]
    next_port[0] += 1
    process = launch(config, port)
    wait_greeting(process, port)
    return process, port


def stop(process, sig=signal.SIGTERM):
    process.send_signal(sig)
    process.wait()
    servers.remove(process)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def bench(server, arguments):
    process, port = server
    command = ["taskset", "-c", "1", FANOUT, "bench", "--server", f"127.0.0.1:{port}", "--payload", "100",
               "--window", "100", "--json"] + arguments.split()
    before = cpu_ticks(process.pid)
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    after = cpu_ticks(process.pid)
    result = json.loads(output)["results"][0]
    count, rate = int(result["delivered"]), float(result["delivered_per_s"])
    if count == 0:
        count, rate = int(result["published"]), float(result["published_per_s"])
    return {"rate": rate, "cpu_ns": (after - before) / HZ * 1e9 / count, "lost": int(result["lost"])}


def row(name, base, this):
    rates = sorted(t["rate"] / b["rate"] for b, t in zip(base, this))
    cpus = sorted(t["cpu_ns"] / b["cpu_ns"] for b, t in zip(base, this))
    median = lambda runs, key: statistics.median(r[key] for r in runs)
    print("%-34s %10.0f/s %10.0f/s %5.2fx [%4.2f-%4.2f]   %6.0f %6.0f ns/msg %5.2fx [%4.2f-%4.2f]%s" % (
        name, median(base, "rate"), median(this, "rate"), median(this, "rate") / median(base, "rate"),
        rates[0], rates[-1], median(base, "cpu_ns"), median(this, "cpu_ns"),
        median(this, "cpu_ns") / median(base, "cpu_ns"), cpus[0], cpus[-1],
        "  lost %d" % sum(r["lost"] for r in base + this) if any(r["lost"] for r in base + this) else ""),
        flush=True)


def part1():
    print(f"1. memory history against disk history, {options.pairs} rounds, order rotating; "
          "columns: memory, disk, ratio [range]; CPU the same")
    for scenario in options.scenarios:
        memory = start(RULE)
        everysec = start(RULE + f"history_dir: {work}/everysec-{scenario}\nhistory_fsync: everysec\n")
        always = start(RULE + f"history_dir: {work}/always-{scenario}\nhistory_fsync: always\n")
        servers3 = [memory, everysec, always]
        # Unmeasured rounds first: a new server's first segments are new files, written into page-cache pages
        # the kernel must allocate; once history is at its bound, emptied segments are reused instead.
        for _ in range(options.warmup):
            for server in servers3:
                bench(server, SCENARIOS[scenario])
        runs = [[], [], []]
        for round_ in range(options.pairs):
            for offset in range(3):
                index = (round_ + offset) % 3
                runs[index].append(bench(servers3[index], SCENARIOS[scenario]))
        row(f"{scenario} everysec / memory", runs[0], runs[1])
        row(f"{scenario} always / memory", runs[0], runs[2])
        for process, _ in servers3:
            stop(process)


def timed_start(config, port):
    started = time.monotonic()
    process = launch(config, port)
    wait_greeting(process, port)
    elapsed = time.monotonic() - started
    # The server's own CPU up to its first greeting: on a shared machine the wall time counts the others too.
    cpu_seconds.append(cpu_ticks(process.pid) / HZ)
    return process, elapsed


cpu_seconds = []


def part2():
    directory = f"{work}/startup"
    config = RULE + f"history_dir: {directory}\nhistory_fsync: everysec\n"
    process, port = start(config)
    subprocess.run(["taskset", "-c", "1", FANOUT, "bench", "--server", f"127.0.0.1:{port}", "--payload", "100",
                    "--window", "100", "--json", "--publishers", "4", "--subscribers", "0", "--subjects", "1000",
                    "--messages", "1000000"], check=True, capture_output=True)
    while info(port).get("history_write_queue") != "0":
        time.sleep(0.05)
    figures = info(port)
    messages, disk = int(figures["history_messages"]), int(figures["history_disk_bytes"])
    print(f"2. {messages} retained messages: history_disk_bytes {disk}, {disk / messages:.1f} bytes per message "
          f"(payload 100, subject 7-9 bytes); history_bytes in memory {figures['history_bytes']}")
    times = []
    for attempt in range(3):
        stop(process)
        process, seconds = timed_start(config, port)
        times.append(seconds)
        assert info(port)["history_messages"] == str(messages)
    print("   start after SIGTERM, exec to first greeting: %s s (median %.3f s); server CPU %s s" % (
        " ".join("%.3f" % t for t in times), statistics.median(times), " ".join("%.3f" % t for t in cpu_seconds)))
    stop(process, signal.SIGKILL)
    process, seconds = timed_start(config, port)
    print("   start after SIGKILL: %.3f s (server CPU %.3f s), %s messages recovered" % (
        seconds, cpu_seconds[-1], info(port)["history_messages"]))
    print("   load average at the end: %.1f" % os.getloadavg()[0])
    stop(process)


try:
    if "1" in options.parts:
        part1()
    if "2" in options.parts:
        part2()
finally:
    for process in list(servers):
        process.kill()
    shutil.rmtree(work, ignore_errors=True)
