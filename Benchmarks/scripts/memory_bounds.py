#!/usr/bin/env python3
"""Measures fanoutd's memory under hostile clients: a subscriber that never reads, a line without a newline,
and a command flood whose replies are never read. Prints one line per case with RSS before, peak and after.

Usage: python3 Benchmarks/scripts/memory_bounds.py [path/to/fanoutd]   (default .build/release/fanoutd)
"""
import os
import re
import socket
import subprocess
import sys
import threading
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else ".build/release/fanoutd"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def start(env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
    environment.update(env or {})
    process = subprocess.Popen([BINARY, "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, env=environment, text=True)
    for line in process.stderr:
        if "listening on " in line:
            port = int(line.rsplit(":", 1)[1])
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
            return process, port
    raise SystemExit("fanoutd did not start")


def connect(port, rcvbuf=None):
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    sock.recv(200)  # greeting
    return sock


def read_lines(sock, count):
    data = b""
    while data.count(b"\n") < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return data


def info(port):
    sock = connect(port)
    sock.sendall(b"INFO\n")
    reply = read_lines(sock, 1).decode()
    sock.close()
    return dict(pair.split("=", 1) for pair in reply.split()[1:] if "=" in pair)


def slow_consumer(messages=200_000, size=1000):
    process, port = start()
    before = rss_kib(process.pid)
    stalled = connect(port, rcvbuf=4096)
    stalled.sendall(b"SUB flood\n")
    healthy = connect(port)
    healthy.sendall(b"SUB flood\n")
    read_lines(healthy, 1)
    publisher = connect(port)
    received = [0]

    def reader():
        buffered = b""
        expected = 1
        while received[0] < messages:
            chunk = healthy.recv(1 << 20)
            if not chunk:
                return
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                seq = int(line.split(b" ", 3)[2])
                assert seq == expected, f"out of order: {seq} != {expected}"
                expected += 1
                received[0] += 1

    thread = threading.Thread(target=reader)
    thread.start()
    payload = b"p" * size
    peak = before
    batch = 500
    started = time.monotonic()
    for sent in range(0, messages, batch):
        while received[0] < sent - 2000:  # the healthy subscriber keeps up: stay within 2,000 of it
            time.sleep(0.0005)
        publisher.sendall((b"PUB flood " + payload + b"\n") * batch)
        read_lines(publisher, batch)
        if sent % 20_000 == 0:
            peak = max(peak, rss_kib(process.pid))
    thread.join(60)
    elapsed = time.monotonic() - started
    fields = info(port)
    after = rss_kib(process.pid)
    process.terminate()
    process.wait(10)
    mb = messages * (size + 20) / 1e6
    print(f"slow consumer: {mb:.0f} MB published in {elapsed:.1f}s; healthy subscriber got {received[0]}/{messages} "
          f"in order; slow_consumers={fields['slow_consumers']}; RSS before {before} KiB, peak {peak} KiB, "
          f"after {after} KiB (max_pending_bytes 32 MiB)")


def endless_line(megabytes=256):
    process, port = start()
    before = rss_kib(process.pid)
    sock = connect(port)
    chunk = b"z" * (1 << 20)
    peak = before
    for index in range(megabytes):
        sock.sendall(chunk)
        if index % 16 == 0:
            peak = max(peak, rss_kib(process.pid))
    sock.sendall(b"\nPING\n")
    replies = read_lines(sock, 2).decode().splitlines()
    print(f"line without newline: {megabytes} MiB sent; replies {replies[0][:32]!r}..., {replies[1]!r}; "
          f"RSS before {before} KiB, peak {peak} KiB")
    process.terminate()
    process.wait(10)


def command_flood():
    process, port = start()
    before = rss_kib(process.pid)
    sock = connect(port)
    sock.settimeout(2)
    burst = b"PING flood-flood-flood-flood\n" * 20_000
    sent = 0
    try:
        while sent < 4 << 30:
            sock.sendall(burst)
            sent += len(burst)
    except socket.timeout:
        pass
    peak = rss_kib(process.pid)
    print(f"command flood, replies never read: server stopped reading after {sent / 1e6:.0f} MB; "
          f"RSS before {before} KiB, with the flood pending {peak} KiB")
    process.kill()
    process.wait(10)


if __name__ == "__main__":
    slow_consumer()
    endless_line()
    command_flood()
