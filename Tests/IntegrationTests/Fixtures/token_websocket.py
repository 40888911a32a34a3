#!/usr/bin/env python3
"""Opens a WebSocket to fanoutd presenting a token one way, and checks it is authenticated by it.

    token_websocket.py HTTP_PORT WAY TOKEN

WAY is query (?token=), bearer (Authorization: Bearer) or subprotocol (Sec-WebSocket-Protocol: fanout,
bearer.<token>, which must be answered with "fanout" alone). After the 101 the server sends its greeting and
the token's +OK; then SUB chat.room42 must be +OK 1 and SUB other refused. Exits 0 when all held, printing
what went wrong otherwise."""
import base64
import os
import socket
import struct
import sys

from ws_frames import masked


def read_frame(sock):
    head = recv_exactly(sock, 2)
    length = head[1] & 0x7F
    if length == 126:
        length = struct.unpack("!H", recv_exactly(sock, 2))[0]
    elif length == 127:
        length = struct.unpack("!Q", recv_exactly(sock, 8))[0]
    return head[0] & 0x0F, recv_exactly(sock, length)


def recv_exactly(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise SystemExit("connection closed")
        data += chunk
    return data


def main():
    port, way, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    path, extra = "/ws", ""
    if way == "query":
        path += "?token=" + token
    elif way == "bearer":
        extra = f"Authorization: Bearer {token}\r\n"
    else:
        extra = f"Sec-WebSocket-Protocol: fanout, bearer.{token}\r\n"
    key = base64.b64encode(os.urandom(16)).decode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(1)
    head = response.decode()
    problems = []
    if not head.startswith("HTTP/1.1 101"):
        raise SystemExit("no 101: " + head)
    if token in head:
        problems.append("the response echoes the token")
    protocols = [line.split(":", 1)[1].strip() for line in head.split("\r\n")
                 if line.lower().startswith("sec-websocket-protocol:")]
    if way == "subprotocol" and protocols != ["fanout"]:
        problems.append(f"subprotocol answer {protocols}, not ['fanout']")
    if way != "subprotocol" and protocols:
        problems.append(f"a subprotocol nobody offered: {protocols}")
    lines = [read_frame(sock)[1].decode().rstrip("\n") for _ in range(2)]
    if not lines[0].startswith("+HELLO ") or "auth=required" not in lines[0]:
        problems.append("greeting " + lines[0])
    if lines[1] != "+OK":
        problems.append("the token's reply " + lines[1])
    for command, expected in (("SUB chat.room42", "+OK 1"), ("SUB other", "-ERR denied ")):
        sock.sendall(masked(0x1, command.encode()))
        reply = read_frame(sock)[1].decode().rstrip("\n")
        if not reply.startswith(expected):
            problems.append(f"{command}: {reply}")
    if problems:
        raise SystemExit("; ".join(problems))
    print("ok")


main()
