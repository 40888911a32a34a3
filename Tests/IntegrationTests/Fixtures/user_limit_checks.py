"""Per-user limits over WebSocket and event streams, against a fanoutd started with Fixtures/auth.yaml,
max_connections_per_user 1 and user_publish_rate 1 (burst 1).

Usage: user_limit_checks.py CHECK HTTP_PORT TCP_PORT
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
Every wait is bounded (TIMEOUT seconds).
"""
import asyncio
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

TIMEOUT = 10
READER = "reader-secret-token"
SENSORS = "sensor-secret-token"
OVER = "-ERR limit too many connections for user reader (max_connections_per_user 1)"


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


async def status_of(http, target):
    """The status of a GET whose response is not read further (an event stream may not end)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", http), TIMEOUT)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{http}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    body = await asyncio.wait_for(reader.read(4096), TIMEOUT)
    writer.close()
    return int(head.split(b" ")[1]), body.decode(errors="replace")


async def websocket(http, tcp):
    url = f"ws://127.0.0.1:{http}/ws"
    first = await greeted(url, additional_headers={"Authorization": f"Bearer {READER}"})
    expect(await recv(first) == "+OK", "the user's first connection")
    # A bearer token on the upgrade: refused before the 101.
    try:
        await greeted(url, additional_headers={"Authorization": f"Bearer {READER}"})
        raise AssertionError("a second connection of reader was upgraded")
    except InvalidStatus as refused:
        expect(refused.response.status_code == 429, f"status {refused.response.status_code}")
        body = refused.response.body.decode()
        expect('"error":"limit"' in body and "max_connections_per_user 1" in body, f"body {body}")
    # AUTH as a frame: the limit line, then a policy-violation close.
    late = await greeted(url)
    await late.send(f"AUTH {READER}")
    expect(await recv(late) == OVER, "AUTH over the limit")
    try:
        await recv(late)
        raise AssertionError("the refused connection stayed open")
    except ConnectionClosed as closed:
        expect(closed.rcvd is not None and closed.rcvd.code == 1008, f"close {closed.rcvd}")
    # An event stream of the same user: 429 before the stream starts.
    status, body = await status_of(http, f"/events?subject=a&token={READER}")
    expect(status == 429 and '"error":"limit"' in body, f"event stream: {status} {body}")
    await first.send("PING")
    expect(await recv(first) == "+PONG", "the first connection is still served")
    # The publish rate, on a WebSocket of another user: one at once, then -ERR limit.
    sensors = await greeted(url, additional_headers={"Authorization": f"Bearer {SENSORS}"})
    expect(await recv(sensors) == "+OK", "sensors")
    await sensors.send("PUB sensors.a 1\nPUB sensors.a 2")
    expect(await recv(sensors) == "+OK 0", "the burst")
    expect(await recv(sensors) == "-ERR limit publish rate for user sensors over user_publish_rate 1/s", "over it")
    await sensors.close()
    await first.close()


CHECKS = {"websocket": websocket}

if __name__ == "__main__":
    name, http, tcp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        asyncio.run(asyncio.wait_for(CHECKS[name](http, tcp), 60))
    except Exception as error:
        print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)
