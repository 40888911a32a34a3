"""WebSocket checks against a running fanoutd, with the `websockets` client library and raw sockets.

Usage: websocket_checks.py CHECK HTTP_PORT TCP_PORT
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
Every wait is bounded (TIMEOUT seconds).
"""
import asyncio
import base64
import os
import socket
import struct
import sys

import websockets
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from ws_frames import masked

TIMEOUT = 10


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


async def recv(ws):
    return await asyncio.wait_for(ws.recv(), TIMEOUT)


async def greeted(url, **options):
    ws = await asyncio.wait_for(connect(url, open_timeout=TIMEOUT, **options), TIMEOUT)
    hello = await recv(ws)
    expect(hello.startswith("+HELLO fanout/1 "), f"greeting: {hello!r}")
    return ws


async def tcp_client(port):
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), TIMEOUT)
    line = await asyncio.wait_for(reader.readline(), TIMEOUT)
    expect(line.startswith(b"+HELLO"), f"tcp greeting {line!r}")
    return reader, writer


async def tcp_line(reader):
    return (await asyncio.wait_for(reader.readline(), TIMEOUT)).decode().rstrip("\r\n")


async def closed_with(ws, code):
    try:
        while True:
            await recv(ws)
    except ConnectionClosed:
        pass
    expect(ws.close_code == code, f"close code {ws.close_code}, expected {code} ({ws.close_reason!r})")


async def roundtrip(http, tcp):
    url = f"ws://127.0.0.1:{http}/ws"
    sub = await greeted(url)
    await sub.send("SUB news.>")
    expect(await recv(sub) == "+OK 1", "SUB reply")
    # A TCP publisher reaches the WebSocket subscriber, one frame per MSG line.
    reader, writer = await tcp_client(tcp)
    writer.write(b"PUB news.uk hello world\nPUB news.fr bonjour\n")
    expect(await tcp_line(reader) == "+OK 1", "tcp PUB reply")
    expect(await tcp_line(reader) == "+OK 1", "second tcp PUB reply")
    expect(await recv(sub) == "MSG news.uk 1 hello world", "first message")
    expect(await recv(sub) == "MSG news.fr 1 bonjour", "second message")
    # A WebSocket publisher reaches a TCP subscriber and the WebSocket one; two lines in one frame are two commands.
    writer.write(b"SUB news.>\n")
    expect(await tcp_line(reader) == "+OK 1", "tcp SUB reply")
    pub = await greeted(url)
    await pub.send("PUB news.uk from the browser\nPING x")
    expect(await recv(pub) == "+OK 2", "ws PUB reply")
    expect(await recv(pub) == "+PONG x", "second line of the frame")
    expect(await tcp_line(reader) == "MSG news.uk 2 from the browser", "tcp subscriber")
    expect(await recv(sub) == "MSG news.uk 2 from the browser", "ws subscriber")
    # Fragmented: one message over three frames.
    await pub.send(["PUB news.uk ", "frag", "mented"])
    expect(await recv(pub) == "+OK 2", "fragmented PUB reply")
    expect(await recv(sub) == "MSG news.uk 3 fragmented", "fragmented message")
    # CLIENTS lists the transport.
    await pub.send("CLIENTS")
    listing = await recv(pub)
    expect(listing.count("transport=ws") == 2 and "transport=tcp" in listing, f"CLIENTS: {listing}")
    # Ping and pong.
    pong = await pub.ping(b"are you there")
    await asyncio.wait_for(pong, TIMEOUT)
    # QUIT: the reply, then a normal close.
    await pub.send("QUIT")
    expect(await recv(pub) == "+OK bye", "QUIT reply")
    await closed_with(pub, 1000)
    # The client's close is answered with its code.
    await asyncio.wait_for(sub.close(code=1000), TIMEOUT)
    expect(sub.close_code == 1000, f"echoed close {sub.close_code}")
    writer.close()


async def close_codes(http, tcp):
    url = f"ws://127.0.0.1:{http}/ws"
    # A binary frame is one BPUB (1.2): anything else in one is answered, and the connection stays.
    ws = await greeted(url)
    await ws.send(b"\x00\x01", text=False)
    expect((await recv(ws)).startswith("-ERR "), "a binary frame that is no command")
    await ws.send(b"BPUB a 3\nabcd", text=False)
    expect((await recv(ws)).startswith("-ERR syntax"), "a binary frame whose bytes do not match its header")
    await ws.close()
    ws = await greeted(url)
    await ws.send(b"PING \xc3\x28", text=True)
    await closed_with(ws, 1007)
    ws = await greeted(url)
    await ws.send("PUB a " + "x" * 600)  # the server runs with max_line=512
    await closed_with(ws, 1009)
    ws = await greeted(url)
    await ws.send(["PUB a " + "x" * 300, "y" * 300])  # too long only together
    await closed_with(ws, 1009)
    # A line of max_line that fits still gets the protocol's answer, not a close.
    ws = await greeted(url)
    await ws.send("PING " + "z" * 400)
    expect((await recv(ws)).startswith("+PONG zzz"), "long PING")
    await ws.close()
    # The server is still serving everyone else.
    ws = await greeted(url)
    await ws.send("PING still")
    expect(await recv(ws) == "+PONG still", "after the bad clients")
    await ws.close()


def raw_handshake(port, headers, path="/ws"):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    sock.sendall(request.encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            break
        response += chunk
    head, _, rest = response.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    return sock, status, head.decode(errors="replace"), rest


GOOD = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", base64.b64encode(os.urandom(16)).decode()),
        ("Sec-WebSocket-Version", "13")]


def without(name):
    return [h for h in GOOD if h[0] != name]


def read_frame(sock, buffered=b""):
    data = buffered
    def need(n):
        nonlocal data
        while len(data) < n:
            chunk = sock.recv(4096)
            if not chunk:
                raise AssertionError("connection closed mid-frame")
            data += chunk
    need(2)
    opcode, length = data[0] & 0x0F, data[1] & 0x7F
    offset = 2
    if length == 126:
        need(4); length = struct.unpack("!H", data[2:4])[0]; offset = 4
    elif length == 127:
        need(10); length = struct.unpack("!Q", data[2:10])[0]; offset = 10
    need(offset + length)
    return opcode, data[offset:offset + length], data[offset + length:]


def close_code_after(sock, rest, frame):
    """Sends `frame` after the greeting and returns the close code the server answers with."""
    opcode, payload, rest = read_frame(sock, rest)
    expect(opcode == 1 and payload.startswith(b"+HELLO"), f"greeting frame {payload!r}")
    sock.sendall(frame)
    while True:
        opcode, payload, rest = read_frame(sock, rest)
        if opcode == 8:
            return struct.unpack("!H", payload[:2])[0]


async def bad_handshakes(http, tcp):
    checks = [
        ("missing key", without("Sec-WebSocket-Key"), 400),
        ("malformed key", without("Sec-WebSocket-Key") + [("Sec-WebSocket-Key", "short")], 400),
        ("wrong version", without("Sec-WebSocket-Version") + [("Sec-WebSocket-Version", "8")], 426),
        ("no upgrade", without("Upgrade"), 426),
        ("foreign origin", GOOD + [("Origin", "http://evil.example")], 403),
    ]
    for name, headers, status in checks:
        sock, got, head, _ = raw_handshake(http, headers)
        expect(got == status, f"{name}: status {got}, expected {status}\n{head}")
        sock.close()
    sock, got, head, _ = raw_handshake(http, GOOD, path="/nowhere")
    expect(got == 404, f"unknown path: {got}")
    sock.close()
    # The Origin check with the library: same host passes, a foreign one is refused.
    ws = await greeted(f"ws://127.0.0.1:{http}/ws", origin=f"http://127.0.0.1:{http}")
    await ws.close()
    try:
        await greeted(f"ws://127.0.0.1:{http}/ws", origin="http://evil.example")
        raise AssertionError("foreign origin accepted")
    except InvalidStatus as refused:
        expect(refused.response.status_code == 403, f"origin status {refused.response.status_code}")
    # Garbage instead of a request line, and a head that never ends (431).
    sock = socket.create_connection(("127.0.0.1", http), timeout=TIMEOUT)
    sock.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
    expect(sock.recv(100).startswith(b"HTTP/1.1 400"), "garbage request")
    sock.close()
    sock = socket.create_connection(("127.0.0.1", http), timeout=TIMEOUT)
    sock.sendall(b"GET /ws HTTP/1.1\r\n" + b"X-Filler: " + b"a" * (41 * 1024))
    expect(sock.recv(100).startswith(b"HTTP/1.1 431"), "endless head")
    sock.close()
    # Frames the decoder must refuse: unmasked, reserved bits, a fragmented ping, an oversize header.
    for name, frame, code in [
        ("unmasked", b"\x81\x04PING", 1002),
        ("reserved bits", b"\xc1\x80\x00\x00\x00\x00", 1002),
        ("fragmented ping", masked(9, b"", fin=False), 1002),
        ("oversize length", b"\x81\xff" + struct.pack("!Q", 1 << 40) + b"\x01\x02\x03\x04", 1009),
        ("unknown opcode", masked(3, b""), 1002),
    ]:
        sock, status, head, rest = raw_handshake(http, GOOD)
        expect(status == 101, f"{name}: upgrade {status}")
        got = close_code_after(sock, rest, frame)
        expect(got == code, f"{name}: close {got}, expected {code}")
        sock.close()
    # The accept value is right for the key sent (the library checks it too).
    sock, status, head, rest = raw_handshake(http, without("Sec-WebSocket-Key") + [("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")])
    expect("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head, head)
    sock.close()


async def allowed_origin(http, tcp):
    ws = await greeted(f"ws://127.0.0.1:{http}/ws", origin="https://app.example")
    await ws.close()
    try:
        await greeted(f"ws://127.0.0.1:{http}/ws", origin=f"http://127.0.0.1:{http}")
        raise AssertionError("same host accepted though not listed")
    except InvalidStatus as refused:
        expect(refused.response.status_code == 403, f"status {refused.response.status_code}")


async def auth(http, tcp):
    url = f"ws://127.0.0.1:{http}/ws"
    token = sys.argv[4]
    ws = await greeted(url)
    await ws.send("SUB a")
    expect((await recv(ws)).startswith("-ERR auth-required"), "SUB before AUTH")
    await ws.send(f"AUTH {token}")
    expect(await recv(ws) == "+OK", "AUTH as a frame")
    await ws.send("SUB a")
    expect(await recv(ws) == "+OK 1", "SUB after AUTH")
    await ws.close()
    ws = await greeted(url, additional_headers={"Authorization": f"Bearer {token}"})
    expect(await recv(ws) == "+OK", "bearer token")
    await ws.send("SUB a")
    expect(await recv(ws) == "+OK 1", "SUB with bearer")
    await ws.close()
    ws = await greeted(url, additional_headers={"Authorization": "Bearer wrong-token-wrong-token"})
    expect((await recv(ws)).startswith("-ERR denied"), "wrong bearer token")
    await ws.close()


async def shutdown(http, tcp):
    ws = await greeted(f"ws://127.0.0.1:{http}/ws")
    print("connected", flush=True)
    # The test signals the daemon now: the farewell line, then a going-away close.
    expect((await recv(ws)).startswith("-ERR shutting-down"), "farewell line")
    await closed_with(ws, 1001)


async def slow_consumer(http, tcp):
    """A WebSocket subscriber that stops reading is dropped like a TCP one (max_pending_bytes)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(TIMEOUT)
    sock.connect(("127.0.0.1", http))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{http}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    _, _, rest = response.partition(b"\r\n\r\n")
    _, greeting, rest = read_frame(sock, rest)
    sock.sendall(masked(1, b"SUB slow.x"))
    _, reply, rest = read_frame(sock, rest)
    expect(reply == b"+OK 1", f"SUB reply {reply!r}")
    # Now it never reads again. A TCP publisher floods the subject; INFO counts the drop.
    reader, writer = await tcp_client(tcp)
    payload = b"x" * 1000
    for _ in range(3000):
        writer.write(b"PUB slow.x " + payload + b"\n")
    await writer.drain()
    for _ in range(3000):
        await tcp_line(reader)
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        writer.write(b"INFO\n")
        info = await tcp_line(reader)
        if " slow_consumers=1 " in info:
            break
        expect(asyncio.get_running_loop().time() < deadline, f"no slow-consumer drop: {info}")
        await asyncio.sleep(0.05)
    # Everyone else is still served.
    ws = await greeted(f"ws://127.0.0.1:{http}/ws")
    await ws.send("PING after")
    expect(await recv(ws) == "+PONG after", "a new WebSocket after the drop")
    await ws.close()
    writer.close()
    sock.close()


async def delivered(http, tcp):
    """A message published over TCP reaches a WebSocket subscriber as one text frame without its LF (on a
    clustered node too, where it comes back from Redis first)."""
    sub = await greeted(f"ws://127.0.0.1:{http}/ws")
    await sub.send("SUB news.>")
    expect(await recv(sub) == "+OK 1", "SUB's reply")
    reader, writer = await tcp_client(tcp)
    for payload in ("first", "second"):
        writer.write(f"PUB news.uk {payload}\n".encode())
        expect((await tcp_line(reader)).startswith("+OK "), "PUB's reply")
    expect(await recv(sub) == "MSG news.uk 1 first", "first message, framed")
    expect(await recv(sub) == "MSG news.uk 2 second", "second message, framed")
    await sub.close()
    writer.close()


async def binary(http, tcp):
    """1.2's any bytes: a BPUB as one binary frame reaches a WebSocket subscriber as one binary frame holding the
    BMSG push whole and a TCP subscriber as BMSG; a payload a line can carry arrives as a text MSG frame."""
    sub = await greeted(f"ws://127.0.0.1:{http}/ws")
    await sub.send("SUB bin.>")
    expect(await recv(sub) == "+OK 1", "SUB's reply")
    reader, writer = await tcp_client(tcp)
    writer.write(b"SUB bin.>\n")
    expect(await tcp_line(reader) == "+OK 1", "TCP SUB's reply")
    pub = await greeted(f"ws://127.0.0.1:{http}/ws")
    payload = b"line one\nline\x00two\r\n\xff"
    await pub.send(b"BPUB bin.x %d\n" % len(payload) + payload + b"\n", text=False)
    expect(await recv(pub) == "+OK 2", "BPUB's reply")
    frame = await asyncio.wait_for(sub.recv(), TIMEOUT)
    expect(frame == b"BMSG bin.x 1 %d\n" % len(payload) + payload + b"\n", f"one binary frame: {frame!r}")
    header = await tcp_line(reader)
    expect(header == f"BMSG bin.x 1 {len(payload)}", f"TCP header: {header!r}")
    body = await asyncio.wait_for(reader.readexactly(len(payload) + 1), TIMEOUT)
    expect(body == payload + b"\n", "TCP bytes")
    # A PUB whose payload is not UTF-8 cannot go in a text frame (RFC 6455 8.1): it comes as its BMSG push.
    writer.write(b"PUB bin.latin \xff\xfe not utf-8\n")
    expect(await tcp_line(reader) == "+OK 2", "PUB of bytes that are not UTF-8")
    frame = await asyncio.wait_for(sub.recv(), TIMEOUT)
    expect(frame == b"BMSG bin.latin 1 12\n\xff\xfe not utf-8\n", f"a binary frame: {frame!r}")
    expect((await asyncio.wait_for(reader.readline(), TIMEOUT)) == b"MSG bin.latin 1 \xff\xfe not utf-8\n", "TCP: MSG")
    # A binary message over max_payload is dropped as it comes; the connection goes on.
    await pub.send(b"BPUB bin.z 2000000\n" + b"\x00" * 2000000 + b"\n", text=False)
    expect((await recv(pub)).startswith("-ERR too-long"), "an oversize BPUB frame")
    await pub.send(b"BPUB bin.y 5\nplain\n", text=False)
    expect(await recv(pub) == "+OK 2", "second BPUB's reply")
    expect(await recv(sub) == "MSG bin.y 1 plain", "a line payload as text")
    await pub.close()
    await sub.close()
    writer.close()


async def reset(http, tcp):
    """On a clustered node whose shard restarted without its data (the test restarts it): a RESET line reaches a
    WebSocket subscriber as a text frame, right before the new numbering's first message."""
    sub = await greeted(f"ws://127.0.0.1:{http}/ws")
    await sub.send("SUB r.ws")
    expect(await recv(sub) == "+OK 1", "SUB's reply")
    print("subscribed", flush=True)
    while True:
        frame = await recv(sub)
        if frame.startswith("RESET "):
            break
        expect(frame.startswith("MSG r.ws "), f"a message before the reset: {frame}")
    expect(frame.startswith("RESET r.ws epoch=") and frame.endswith(" seq=0 missed=unknown"), f"the reset: {frame}")
    expect(await recv(sub) == "MSG r.ws 1 after", "the new numbering's first message, right after")
    await sub.close()


async def mixed_run(http, tcp):
    """One publish run of over 4 KiB to a WebSocket subscriber and to an event stream of a pattern (no ids):
    each gets its own framing of the same messages, never the other transport's bytes."""
    sub = await greeted(f"ws://127.0.0.1:{http}/ws")
    await sub.send("SUB big.>")
    expect(await recv(sub) == "+OK 1", "SUB's reply")
    stream_reader, stream_writer = await asyncio.open_connection("127.0.0.1", http)
    stream_writer.write(b"GET /events?subject=big.%3E HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await stream_writer.drain()
    head = b""
    while b": +OK 1" not in head:
        head += await asyncio.wait_for(stream_reader.read(4096), 10)
    reader, writer = await tcp_client(tcp)
    payload = "p" * 1000
    writer.write("".join(f"PUB big.x {n} {payload}\n" for n in range(10)).encode())
    for _ in range(10):
        expect((await tcp_line(reader)) == "+OK 2", "PUB's reply counts both")
    for n in range(10):
        expect(await recv(sub) == f"MSG big.x {n + 1} {n} {payload}", f"frame {n}, a WebSocket frame of the message")
    events = b""
    while events.count(b"\n\n") < 10:
        events += await asyncio.wait_for(stream_reader.read(65536), 10)
    lines = [l for l in events.decode().split("\n") if l]
    expect(len(lines) == 10 and all(l.startswith('data: {"subject":"big.x"') for l in lines), f"events: {lines[:2]}")
    await sub.close()
    writer.close()
    stream_writer.close()


CHECKS = {f.__name__.replace("_", "-"): f for f in [roundtrip, binary, close_codes, bad_handshakes, allowed_origin, auth, shutdown,
                                                    slow_consumer, delivered, reset, mixed_run]}

if __name__ == "__main__":
    name, http, tcp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        asyncio.run(asyncio.wait_for(CHECKS[name](http, tcp), 60))
    except Exception as error:
        print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)
