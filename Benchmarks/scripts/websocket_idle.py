#!/usr/bin/env python3
"""Resident memory of idle WebSocket connections, against idle TCP connections, in one fanoutd each.

    Benchmarks/scripts/websocket_idle.py [--bin .build/release] [--count 10000]

Starts a fresh fanoutd per transport, reads its RSS with one client connected, opens --count idle clients
that each subscribe to one shared subject (a dashboard's usual state), reads the RSS again, and prints
the growth per connection, and PING round trips from another client while they are open. WebSocket clients do the opening handshake, read the greeting frame and send
one masked SUB frame; TCP clients type the same SUB.
"""
import argparse
import asyncio
import base64
import os
import resource
import socket
import subprocess
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def masked(text):
    payload = text.encode()
    mask = os.urandom(4)
    return bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def websocket_client(port, held):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    for expected in (b"+HELLO", b"+OK"):
        header = await reader.readexactly(2)
        frame = await reader.readexactly(header[1] & 0x7F)
        assert frame.startswith(expected), frame
        if expected == b"+HELLO":
            writer.write(masked("SUB ticker"))
    held.append(writer)


async def tcp_client(port, held):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert (await reader.readline()).startswith(b"+HELLO")
    writer.write(b"SUB ticker\n")
    assert (await reader.readline()).startswith(b"+OK")
    held.append(writer)


async def measure(binary, transport, count):
    tcp_port, http_port = free_port(), free_port()
    env = dict(os.environ, FANOUTD_MAX_CONNECTIONS=str(count + 100), FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT="0")
    server = subprocess.Popen([f"{binary}/fanoutd", "--listen", f"127.0.0.1:{tcp_port}", "--http-listen",
                               f"127.0.0.1:{http_port}", "--log-level", "warning"], env=env)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", http_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        held = []
        connect = websocket_client if transport == "websocket" else tcp_client
        port = http_port if transport == "websocket" else tcp_port
        await connect(port, held)
        await asyncio.sleep(0.5)
        before = rss_kib(server.pid)
        for start in range(0, count, 500):
            await asyncio.gather(*(connect(port, held) for _ in range(min(500, count - start))))
        await asyncio.sleep(1)
        after = rss_kib(server.pid)
        # Everyone else is still served: PING round trips on a fresh TCP connection, with the idle ones open.
        reader, writer = await asyncio.open_connection("127.0.0.1", tcp_port)
        await reader.readline()
        times = []
        for _ in range(200):
            started = time.perf_counter()
            writer.write(b"PING\n")
            assert (await reader.readline()).startswith(b"+PONG")
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        writer.close()
        for writer in held:
            writer.close()
        return before, after, times[len(times) // 2], times[int(len(times) * 0.99)]
    finally:
        server.terminate()
        server.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=".build/release")
    parser.add_argument("--count", type=int, default=10000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.count * 2 + 1000), hard))
    print(f"{'transport':<10} {'connections':>11} {'RSS before':>12} {'RSS after':>12} {'per connection':>15}"
          f" {'PING p50':>9} {'PING p99':>9}")
    for transport in ("tcp", "websocket"):
        before, after, p50, p99 = asyncio.run(measure(args.bin, transport, args.count))
        per = (after - before) * 1024 / args.count
        print(f"{transport:<10} {args.count:>11} {before:>9} KiB {after:>9} KiB {per:>13.0f} B"
              f" {p50:>6.2f} ms {p99:>6.2f} ms")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
