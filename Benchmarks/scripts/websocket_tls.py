#!/usr/bin/env python3
"""WebSocket over TLS (https_listen, wss://) against plain WebSocket (http_listen, ws://), in the same run.

    Benchmarks/scripts/websocket_tls.py fanout [--bin .build/release] [--subscribers 100] [--messages 20000]
                                               [--rounds 5] [--processes 2]
    Benchmarks/scripts/websocket_tls.py idle [--bin .build/release] [--count 5000] [--batch 250]
    Benchmarks/scripts/websocket_tls.py openssl [--count 3000] [--num-tickets N]

fanout: one fanoutd serving both listeners; each round runs plain then TLS: --subscribers WebSocket
connections (spread over --processes client processes) subscribe to one subject, a TCP publisher sends
--messages PUBs of 100 bytes (window 100), and the round ends when every subscriber has every message.
Prints deliveries/s and the server's CPU time (user + system, from /proc) per delivery for each, and the
medians and the TLS/plain ratio of CPU per delivery. `fanout bench` cannot be the generator here: its
WebSocket peer speaks no TLS and hands its socket to a raw-descriptor sink. These Python clients decrypt in
OpenSSL and count frames with bytes.count, but they may still be the bottleneck: the script prints the
clients' CPU share, and when it is near 100% per process, deliveries/s measure the clients, while CPU per
delivery still measures the server.

idle: a fresh fanoutd per transport (ws, then wss), --count idle connections that each subscribed to one
shared subject, and the growth of the server's resident memory per connection (as websocket_idle.py does
for ws and TCP).

openssl: what OpenSSL itself holds per server-side connection, without fanoutd: --count handshakes in memory
(Python's ssl module, which sets SSL_MODE_RELEASE_BUFFERS too), TLS 1.3 then TLS 1.2, with the client side
freed, and the growth of this process's resident memory per connection; --num-tickets sets how many TLS 1.3
tickets the server side sends (OpenSSL's default is 2), to see what session state costs.
"""
import argparse
import asyncio
import base64
import multiprocessing
import os
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

PAYLOAD = b"x" * 100
TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def make_certificate(directory):
    """A self-signed certificate for 127.0.0.1 (the clients trust exactly it)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def start_server(binary, cert, key, connections):
    tcp, http, https = free_port(), free_port(), free_port()
    env = dict(os.environ, FANOUTD_MAX_CONNECTIONS=str(connections + 100), FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT="0",
               FANOUTD_TLS_CERT=cert, FANOUTD_TLS_KEY=key, FANOUTD_MAX_UNAUTHENTICATED=str(connections + 100))
    server = subprocess.Popen([f"{binary}/fanoutd", "--listen", f"127.0.0.1:{tcp}", "--http-listen",
                               f"127.0.0.1:{http}", "--https-listen", f"127.0.0.1:{https}", "--log-level", "warning"],
                              env=env)
    for port in (tcp, http, https):
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
    return server, tcp, http, https


def masked(text):
    payload = text.encode()
    mask = os.urandom(4)
    return bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def open_websocket(port, tls, subject):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls,
                                                   server_hostname="127.0.0.1" if tls else None)
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
            writer.write(masked(f"SUB {subject}"))
    return reader, writer


def client_context(cert):
    if cert is None:
        return None
    context = ssl.create_default_context(cafile=cert)
    return context


def subscriber_process(port, cert, subject, connections, messages, pipe):
    """Opens `connections` WebSockets, reports "ready", then counts MSG frames until each has `messages`."""
    async def run():
        tls = client_context(cert)
        opened = await asyncio.gather(*(open_websocket(port, tls, subject) for _ in range(connections)))
        pipe.send("ready")
        marker = f"MSG {subject} ".encode()
        started = time.process_time()

        async def count(reader):
            seen, carry = 0, b""
            while seen < messages:
                chunk = await reader.read(262144)
                if not chunk:
                    raise RuntimeError("closed")
                data = carry + chunk
                seen += data.count(marker)
                carry = data[-(len(marker) - 1):]
        await asyncio.gather(*(count(reader) for reader, _ in opened))
        pipe.send(time.process_time() - started)
        for _, writer in opened:
            writer.close()
    asyncio.run(run())


def publish(port, subject, messages, window=100):
    with socket.create_connection(("127.0.0.1", port)) as sock:
        stream = sock.makefile("rb")
        assert stream.readline().startswith(b"+HELLO")
        line = b"PUB " + subject.encode() + b" " + PAYLOAD + b"\n"
        sent = 0
        while sent < messages:
            batch = min(window, messages - sent)
            sock.sendall(line * batch)
            for _ in range(batch):
                reply = stream.readline()
                assert reply.startswith(b"+OK"), reply
            sent += batch


def fanout_round(server, tcp, port, cert, subject, args):
    per = [args.subscribers // args.processes + (1 if i < args.subscribers % args.processes else 0)
           for i in range(args.processes)]
    pipes, processes = [], []
    for count in per:
        parent, child = multiprocessing.Pipe()
        process = multiprocessing.Process(target=subscriber_process,
                                          args=(port, cert, subject, count, args.messages, child))
        process.start()
        pipes.append(parent)
        processes.append(process)
    for pipe in pipes:
        assert pipe.recv() == "ready"
    cpu_before, started = server_cpu_seconds(server.pid), time.perf_counter()
    publish(tcp, subject, args.messages)
    client_cpu = [pipe.recv() for pipe in pipes]
    elapsed = time.perf_counter() - started
    cpu = server_cpu_seconds(server.pid) - cpu_before
    for process in processes:
        process.join()
    deliveries = args.subscribers * args.messages
    return deliveries / elapsed, cpu / deliveries * 1e9, max(client_cpu) / elapsed


def fanout(args):
    with tempfile.TemporaryDirectory() as directory:
        cert, key = make_certificate(directory)
        server, tcp, http, https = start_server(args.bin, cert, key, args.subscribers * 2)
        results = {"ws": [], "wss": []}
        try:
            print(f"{'round':>5} {'transport':<9} {'deliveries/s':>13} {'server ns/delivery':>19}"
                  f" {'busiest client':>15}")
            for round_number in range(args.rounds):
                for name, port, tls in (("ws", http, None), ("wss", https, cert)):
                    rate, cost, client = fanout_round(server, tcp, port, tls, f"bench{round_number}{name}", args)
                    results[name].append((rate, cost))
                    print(f"{round_number:>5} {name:<9} {rate:>13.0f} {cost:>19.0f} {client:>14.0%}")
                    sys.stdout.flush()
        finally:
            server.terminate()
            server.wait(timeout=30)
    medians = {name: (statistics.median(r for r, _ in rows), statistics.median(c for _, c in rows))
               for name, rows in results.items()}
    for name, (rate, cost) in medians.items():
        print(f"median {name:<4} {rate:>13.0f} deliveries/s {cost:>8.0f} ns of server CPU per delivery")
    print(f"TLS/plain server CPU per delivery: {medians['wss'][1] / medians['ws'][1]:.2f}x; "
          f"deliveries/s {medians['wss'][0] / medians['ws'][0]:.2f}x")


async def idle_measure(binary, cert, key, tls, count, batch):
    server, tcp, http, https = start_server(binary, cert, key, count)
    try:
        context = client_context(cert if tls else None)
        port = https if tls else http
        held = [await open_websocket(port, context, "ticker")]
        await asyncio.sleep(0.5)
        before = rss_kib(server.pid)
        # In groups of `batch`: handshakes in flight at once leave freed memory in the heap that counts in RSS.
        for start in range(0, count, batch):
            held += await asyncio.gather(*(open_websocket(port, context, "ticker")
                                           for _ in range(min(batch, count - start))))
        await asyncio.sleep(1)
        after = rss_kib(server.pid)
        for _, writer in held:
            writer.close()
        return before, after
    finally:
        server.terminate()
        server.wait(timeout=30)


def idle(args):
    with tempfile.TemporaryDirectory() as directory:
        cert, key = make_certificate(directory)
        print(f"{'transport':<10} {'connections':>11} {'RSS before':>12} {'RSS after':>12} {'per connection':>15}")
        per = {}
        for name, tls in (("ws", False), ("wss", True)):
            before, after = asyncio.run(idle_measure(args.bin, cert, key, tls, args.count, args.batch))
            per[name] = (after - before) * 1024 / args.count
            print(f"{name:<10} {args.count:>11} {before:>9} KiB {after:>9} KiB {per[name]:>13.0f} B")
            sys.stdout.flush()
        print(f"wss/ws memory per idle connection: {per['wss'] / per['ws']:.2f}x")


def openssl_connection(server, client):
    """A server-side SSL object after a full handshake and one record, over memory BIOs."""
    to_server, from_server, to_client, from_client = (ssl.MemoryBIO() for _ in range(4))
    accepted = server.wrap_bio(to_server, from_server, server_side=True)
    connecting = client.wrap_bio(to_client, from_client, server_hostname="127.0.0.1")
    for _ in range(10):
        for end in (connecting, accepted):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        if from_client.pending:
            to_server.write(from_client.read())
        if from_server.pending:
            to_client.write(from_server.read())
    connecting.write(b"SUB ticker")
    to_server.write(from_client.read())
    assert accepted.read(100) == b"SUB ticker"
    return accepted, to_server, from_server


def openssl(args):
    with tempfile.TemporaryDirectory() as directory:
        cert, key = make_certificate(directory)
        # Kept to the end: memory freed by one version's connections would be reused by the next one's unseen.
        kept = []
        for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
            server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            server.load_cert_chain(cert, key)
            server.maximum_version = version
            if args.num_tickets is not None:
                server.num_tickets = args.num_tickets
            client = ssl.create_default_context(cafile=cert)
            held = [openssl_connection(server, client) for _ in range(200)]
            before = rss_kib(os.getpid())
            held += [openssl_connection(server, client) for _ in range(args.count)]
            per = (rss_kib(os.getpid()) - before) * 1024 / args.count
            kept.append(held)
            print(f"{version.name}: {per:.0f} B per server-side OpenSSL connection ({ssl.OPENSSL_VERSION})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["fanout", "idle", "openssl"])
    parser.add_argument("--bin", default=".build/release")
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--num-tickets", type=int, default=None)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(args.count, args.subscribers) * 2 + 1000), hard))
    {"fanout": fanout, "idle": idle, "openssl": openssl}[args.what](args)


if __name__ == "__main__":
    main()
