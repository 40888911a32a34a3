#!/usr/bin/env python3
"""Presence across two nodes: time from a join on node 1 (its SUB answered) to WHO on node 2 counting it.

Usage: python3 Benchmarks/scripts/presence_cluster.py [--joins N] [--bin DIR] [--lease S]
  --joins N   joins measured (default 300), each by a connection of its own that stays
  --bin DIR   the build measured (default .build/release, else .build/debug): its fanoutd
  --lease S   the cluster's presence_lease (default 3)

One redis-server (no persistence) and two fanoutd nodes on loopback share `cluster:` with `presence:
["bench.>"]`. For each join: a new connection to node 1 sends `SUB bench.room` and waits for `+OK 1`; from
then, a connection to node 2 sends `WHO bench.room 0` again and again until the count includes the join. The
wait includes WHO's own round trips (node 2 to Redis and back), at most one of which started before the
join reached Redis. Prints p50, p99 and max in milliseconds, and the WHO round trip alone.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--joins", type=int, default=300)
parser.add_argument("--bin")
parser.add_argument("--lease", type=float, default=3)
options = parser.parse_args()
build = options.bin or next(os.path.join(ROOT, d) for d in (".build/release", ".build/debug")
                            if os.path.exists(os.path.join(ROOT, d, "fanoutd")))
FANOUTD = os.path.join(build, "fanoutd")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Line:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.read()  # the greeting

    def read(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def command(self, text):
        self.sock.sendall(text.encode() + b"\n")
        return self.read()


def wait_up(port, shards=1):
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            client = Line(port)
            info = client.command("INFO")
            client.sock.close()
            if all(f"shard{i}_status=up" in info for i in range(shards)):
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"node on {port} never had its shard up")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


work = tempfile.mkdtemp(prefix="presence-cluster-")
redis_port = free_port()
processes = [subprocess.Popen(["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no",
                               "--dir", work], stdout=subprocess.DEVNULL)]
try:
    config = os.path.join(work, "cluster.yaml")
    with open(config, "w") as f:
        f.write(f'cluster:\n  redis: ["redis://127.0.0.1:{redis_port}"]\n  presence_lease: {options.lease}\n'
                'presence: ["bench.>"]\n')
    ports = [free_port(), free_port()]
    for port in ports:
        processes.append(subprocess.Popen([FANOUTD, "--config", config, "--listen", f"127.0.0.1:{port}"],
                                          stderr=subprocess.DEVNULL))
    for port in ports:
        wait_up(port)
    watcher = Line(ports[1])
    round_trips = []
    for _ in range(50):
        started = time.perf_counter()
        watcher.command("WHO bench.room 0")
        round_trips.append((time.perf_counter() - started) * 1000)
    members = []
    waits = []
    for index in range(options.joins):
        member = Line(ports[0])
        reply = member.command("SUB bench.room")
        joined = time.perf_counter()
        if reply != "+OK 1":
            raise RuntimeError(f"SUB answered {reply}")
        members.append(member)
        while True:
            reply = watcher.command("WHO bench.room 0")
            if not reply.startswith("+OK "):
                raise RuntimeError(f"WHO answered {reply}")
            if int(reply.split()[1]) >= index + 1:
                break
        waits.append((time.perf_counter() - joined) * 1000)
    print(f"joins {len(waits)} on node 1, WHO on node 2 ({build}): p50 {statistics.median(waits):.3f} ms, "
          f"p99 {percentile(waits, 99):.3f} ms, "
          f"max {max(waits):.3f} ms; WHO round trip alone p50 {statistics.median(round_trips):.3f} ms")
finally:
    for process in reversed(processes):
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
