#!/usr/bin/env python3
"""A connection storm over wss://: connections per second and server CPU per connection, with and without tokens.

    Benchmarks/scripts/wss_storm.py [--bin .build/release] [--count 10000] [--workers 2] [--runs 3]

For each case it starts a fresh fanoutd on https_listen (a P-256 certificate from a CA made here) and opens
--count WebSocket connections over TLS as fast as --workers client processes can, each presenting its own token
in the URL (`/ws?token=`), and keeps them all open until the last is upgraded and greeted. Cases, in one run:

- `none`: no token keys configured, the same storm without `?token=` (the TLS and WebSocket cost alone);
- `HS256`: every connection presents its own HS256 token (`token_secret_file`);
- `ES256`: every connection presents its own ES256 token (`token_public_key_file`).

It prints, per case, the median of --runs runs: connections per second (wall time from the first connect to the
last greeting), the server's CPU (user + system from /proc) per connection, and the clients' CPU per connection:
when the clients' CPU per second is near the cores they have, they are the limit, not the server. The token
check's share is (CPU per connection with tokens - without) / CPU per connection with tokens.
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

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def make_certificates(directory):
    """A CA and a P-256 server certificate for 127.0.0.1 signed by it, with the openssl command."""
    def run(*arguments):
        subprocess.run(["openssl", *arguments], check=True, capture_output=True, cwd=directory)
    run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key")
    run("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=storm test CA", "-days", "2", "-out", "ca.pem")
    run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server.key")
    run("req", "-new", "-key", "server.key", "-subj", "/CN=127.0.0.1", "-out", "server.csr")
    with open(os.path.join(directory, "san.ext"), "w") as extensions:
        extensions.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "san.ext", "-out", "server.pem")


def write_config(directory, case, port, http_port):
    lines = [
        f"listen: [\"127.0.0.1:{port}\"]",
        f"https_listen: \"127.0.0.1:{http_port}\"",
        f"tls_cert: \"{directory}/server.pem\"",
        f"tls_key: \"{directory}/server.key\"",
        "max_connections: 30000",
        "max_unauthenticated: 30000",
        "log_level: warning",
    ]
    if case == "HS256":
        lines.append(f"token_secret_file: \"{directory}/secret\"")
    if case == "ES256":
        lines.append(f"token_public_key_file: \"{directory}/token.pub.pem\"")
    path = os.path.join(directory, f"{case}.yaml")
    with open(path, "w") as config:
        config.write("\n".join(lines) + "\n")
    return path


def mint(case, count, directory):
    if case == "none":
        return [None] * count
    expires = int(time.time()) + 3600
    claims = lambda i: {"sub": f"user{i}", "exp": expires, "fanout": {"subscribe": [f"storm.{i}"]}}
    if case == "HS256":
        secret = open(os.path.join(directory, "secret"), "rb").read()
        return [jwt.encode(claims(i), secret, algorithm="HS256") for i in range(count)]
    key = serialization.load_pem_private_key(open(os.path.join(directory, "token.key.pem"), "rb").read(), None)
    return [jwt.encode(claims(i), key, algorithm="ES256") for i in range(count)]


async def open_one(port, context, token, held):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="127.0.0.1")
    key = base64.b64encode(os.urandom(16)).decode()
    path = f"/ws?token={token}" if token else "/ws"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        raise RuntimeError(head.split(b"\r\n")[0].decode(errors="replace"))
    header = await reader.readexactly(2)
    greeting = await reader.readexactly(header[1] & 0x7F)
    if not greeting.startswith(b"+HELLO"):
        raise RuntimeError(greeting.decode(errors="replace"))
    held.append(writer)


async def storm(port, ca, tokens, concurrency, ready, go):
    context = ssl.create_default_context(cafile=ca)
    held = []
    gate = asyncio.Semaphore(concurrency)

    async def guarded(token):
        async with gate:
            await open_one(port, context, token, held)

    ready.set()
    go.wait()
    await asyncio.gather(*(guarded(token) for token in tokens))
    return held


def worker(port, ca, tokens, concurrency, ready, go, done, results):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    loop = asyncio.new_event_loop()
    started = time.process_time()
    try:
        held = loop.run_until_complete(storm(port, ca, tokens, concurrency, ready, go))
        results.put(("ok", time.monotonic(), time.process_time() - started))
    except Exception as error:  # reported to the parent, which fails the run
        results.put(("error", repr(error), 0))
        return
    done.wait()
    for writer in held:
        writer.transport.abort()
    loop.close()


def one_run(binary, directory, case, count, workers):
    port, http_port = free_port(), free_port()
    config = write_config(directory, case, port, http_port)
    server = subprocess.Popen([binary, "--config", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            if subprocess.run(["ss", "-Hltn", f"sport = :{http_port}"], capture_output=True, text=True).stdout:
                break
            time.sleep(0.05)
        tokens = mint(case, count, directory)
        share = [tokens[i::workers] for i in range(workers)]
        ready = [multiprocessing.Event() for _ in range(workers)]
        go, done = multiprocessing.Event(), multiprocessing.Event()
        results = multiprocessing.Queue()
        processes = [multiprocessing.Process(target=worker, args=(http_port, f"{directory}/ca.pem", share[i], 64,
                                                                   ready[i], go, done, results))
                     for i in range(workers)]
        for process in processes:
            process.start()
        for event in ready:
            event.wait(60)
        cpu_before = cpu_seconds(server.pid)
        start = time.monotonic()
        go.set()
        finished = [results.get(timeout=600) for _ in processes]
        cpu_after = cpu_seconds(server.pid)
        done.set()
        for process in processes:
            process.join(60)
        errors = [f for f in finished if f[0] != "ok"]
        if errors:
            raise RuntimeError(f"{case}: {errors[0][1]}")
        wall = max(f[1] for f in finished) - start
        client_cpu = sum(f[2] for f in finished)
        return count / wall, (cpu_after - cpu_before) / count, client_cpu / count, client_cpu / wall
    finally:
        server.terminate()
        server.wait(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=".build/release")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    binary = os.path.abspath(os.path.join(options.bin, "fanoutd"))
    with tempfile.TemporaryDirectory() as directory:
        make_certificates(directory)
        with open(os.path.join(directory, "secret"), "wb") as secret:
            secret.write(os.urandom(32))
        key = ec.generate_private_key(ec.SECP256R1())
        with open(os.path.join(directory, "token.key.pem"), "wb") as private:
            private.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
        with open(os.path.join(directory, "token.pub.pem"), "wb") as public:
            public.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo))
        medians = {}
        print(f"{options.count} wss:// connections, {options.workers} client processes, median of {options.runs}")
        print(f"{'case':6} {'conn/s':>8} {'server µs/conn':>15} {'client µs/conn':>15} {'client cores':>13}")
        for case in ("none", "HS256", "ES256"):
            runs = [one_run(binary, directory, case, options.count, options.workers) for _ in range(options.runs)]
            rate, server, client, cores = (statistics.median(r[i] for r in runs) for i in range(4))
            medians[case] = server
            print(f"{case:6} {rate:8.0f} {server * 1e6:15.1f} {client * 1e6:15.1f} {cores:13.2f}")
        for case in ("HS256", "ES256"):
            share = (medians[case] - medians["none"]) / medians[case]
            print(f"token check's share of server CPU per connection, {case}: {share * 100:.0f}%")


if __name__ == "__main__":
    sys.exit(main())
