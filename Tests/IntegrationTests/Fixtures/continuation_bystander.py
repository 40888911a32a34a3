"""A bystander's PING while WebSocket clients send 1 MiB BPUBs in 16-byte continuation frames.

Usage: continuation_bystander.py HTTP_PORT TCP_PORT SERVER_PID [SENDERS [FRAGMENT]]
Each sender writes one binary message, `BPUB <subject> 1048576` and its bytes, as a first frame and then
continuation frames of 16 bytes, and must get its one `+OK`. Meanwhile a TCP client PINGs in a loop. For each
PING it measures the wall-clock wait and the loop time the server spent meanwhile (the CPU time of its loop
thread, from /proc: what the wait is on a machine of its own, whatever else runs here). Prints
"ok p99_ms=.. max_ms=.. loop_p99_ms=.. loop_max_ms=.. pings=.. seconds=.." and exits 0 when every sender was
answered; the caller judges the latency. Every wait is bounded.
"""
import base64
import os
import socket
import sys
import threading
import time

from ws_frames import masked

TIMEOUT = 120
PAYLOAD = 1 << 20
FRAGMENT = 16


def frame(opcode, payload, fin):
    return masked(opcode, payload, fin, mask=b"\x0f\x1e\x2d\x3c")


def message(fragment):
    header = b"BPUB bystander.load %d\n" % PAYLOAD
    body = header + bytes(range(256)) * (PAYLOAD // 256) + b"\n"
    pieces = [body[i:i + fragment] for i in range(0, len(body), fragment)]
    frames = [frame(2, pieces[0], len(pieces) == 1)]
    # Every continuation piece of 16 bytes masks the same way, so equal pieces share their frame.
    cache = {}
    for index, piece in enumerate(pieces[1:], start=1):
        last = index == len(pieces) - 1
        key = (piece, last)
        if key not in cache:
            cache[key] = frame(0, piece, last)
        frames.append(cache[key])
    return b"".join(frames)


def web_socket(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    data = b""
    while b"+HELLO" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError("closed before the greeting")
        data += chunk
    return sock


def sender(port, data, results, index):
    try:
        sock = web_socket(port)
        sock.sendall(data)
        reply = b""
        while b"+OK" not in reply and b"-ERR" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        results[index] = b"+OK" in reply
        sock.close()
    except Exception as error:  # reported through results
        results[index] = repr(error)


def loop_seconds(pid):
    """CPU time of the server's loop thread (its main thread), in seconds."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as stat:
        return int(stat.read().split()[0]) / 1e9


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def main():
    http, tcp, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    senders = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    data = message(int(sys.argv[5]) if len(sys.argv) > 5 else FRAGMENT)
    pinger = socket.create_connection(("127.0.0.1", tcp), timeout=TIMEOUT)
    pinger.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = pinger.makefile("rb")
    reader.readline()
    results = [None] * senders
    threads = [threading.Thread(target=sender, args=(http, data, results, i)) for i in range(senders)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    latencies, loop_times = [], []
    while not latencies or any(thread.is_alive() for thread in threads) and time.monotonic() - started < TIMEOUT:
        sent, loop_before = time.monotonic(), loop_seconds(pid)
        pinger.sendall(b"PING bystander\n")
        line = reader.readline()
        if line != b"+PONG bystander\n":
            print(f"FAIL the bystander's PING got {line!r}", flush=True)
            sys.exit(1)
        latencies.append(time.monotonic() - sent)
        loop_times.append(loop_seconds(pid) - loop_before)
        time.sleep(0.002)
    for thread in threads:
        thread.join(1)
    seconds = time.monotonic() - started
    if not all(result is True for result in results):
        print(f"FAIL senders: {results} after {seconds:.1f} s", flush=True)
        sys.exit(1)
    print("latencies_ms", [round(x * 1000, 1) for x in latencies], flush=True)
    print("loop_ms", [round(x * 1000, 1) for x in loop_times], flush=True)
    print(f"ok p99_ms={p99(latencies):.1f} max_ms={max(latencies) * 1000:.1f} loop_p99_ms={p99(loop_times):.1f} "
          f"loop_max_ms={max(loop_times) * 1000:.1f} pings={len(latencies)} seconds={seconds:.2f}", flush=True)

if __name__ == "__main__":
    main()
