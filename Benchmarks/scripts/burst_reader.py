#!/usr/bin/env python3
"""A healthy subscriber of a burst: the Python client (clients/python) subscribes and counts COUNT messages of
SIZE bytes while a raw socket pipelines the PUBs as fast as it can (all made ahead, written in one call) and
reads its replies on another thread. Prints whether the subscriber got them all or was dropped as a slow
consumer.

    python3 Benchmarks/scripts/burst_reader.py 127.0.0.1:7411 [COUNT [SIZE]]

Run it with the client installed (`pip install ./clients/python`) against a running fanoutd."""
import asyncio
import socket
import sys
import threading
import time

import fanout


def publish(host: str, port: int, count: int, size: int) -> float:
    sock = socket.create_connection((host, port))
    sock.recv(4096)  # the greeting
    answered = threading.Event()

    def drain() -> None:
        newlines = 0
        while newlines < count:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            newlines += chunk.count(b"\n")
        answered.set()

    threading.Thread(target=drain, daemon=True).start()
    line = b"PUB burst.x %s\n" % (b"x" * size)
    burst = line * count  # made ahead, then written in one call: as fast as a client can
    started = time.monotonic()
    sock.sendall(burst)
    answered.wait(120)
    sock.close()
    return time.monotonic() - started


async def main() -> None:
    address = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    host, port = address.rsplit(":", 1)
    dropped = []
    client = await fanout.connect(address, reconnect=False, on_event=lambda event: dropped.append(str(event)))
    sub = await client.subscribe("burst.x")
    publisher = asyncio.get_running_loop().run_in_executor(None, publish, host, int(port), count, size)
    received = 0
    error = None
    try:
        async for _ in sub:
            received += 1
            if received == count:
                break
    except Exception as failure:  # the server dropped the connection
        error = failure
    seconds = await publisher
    await client.close()
    verdict = "kept" if received == count else f"dropped ({error or dropped})"
    print(f"received {received} of {count} in {seconds:.2f} s: {verdict}")


asyncio.run(main())
