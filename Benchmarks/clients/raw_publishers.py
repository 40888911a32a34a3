"""Publishers that load a server for the receive benchmarks at the least cost to themselves: each writes its
protocol's publish commands in large pipelined batches on a plain socket, in a process of its own, and
reads the replies only to keep the socket flowing. The subscriber under test is what is measured."""
from __future__ import annotations

import socket
import sys
import threading


def commands(kind: str, subject: str, payload: bytes, count: int) -> bytes:
    if kind == "fanoutd":
        one = b"PUB " + subject.encode() + b" " + payload + b"\n"
    elif kind == "redis":
        one = (b"*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
               % (len(subject), subject.encode(), len(payload), payload))
    else:
        one = b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(payload), payload)
    return one * count


def run(kind: str, port: int, subject: str, payload_size: int, count: int) -> None:
    connection = socket.create_connection(("127.0.0.1", port))
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if kind == "nats":
        connection.recv(4096)
        connection.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')

    def drain() -> None:
        while connection.recv(1 << 20):
            pass
    threading.Thread(target=drain, daemon=True).start()
    batch = 1000
    block = commands(kind, subject, b"x" * payload_size, batch)
    for _ in range(count // batch):
        connection.sendall(block)
    # Stay connected (end of input would tell fanoutd the client left): the benchmark stops this process.
    threading.Event().wait(120)


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
