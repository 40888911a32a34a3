"""KICK (1.3) checks against a running fanoutd over WebSocket, with the `websockets` client library.

Usage: kick_checks.py CHECK HTTP_PORT TCP_PORT
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
Every wait is bounded (TIMEOUT seconds).
"""
import asyncio
import sys

from websockets.exceptions import ConnectionClosed

# The helpers every WebSocket fixture shares: one bounded wait, one greeting check.
from websocket_checks import TIMEOUT, expect, greeted, recv


async def tcp_command(reader, writer, line):
    writer.write(line.encode() + b"\n")
    return (await asyncio.wait_for(reader.readline(), TIMEOUT)).decode().rstrip("\r\n")


async def websocket_ids(reader, writer):
    """The ids of the WebSocket connections CLIENTS lists, oldest first."""
    reply = await tcp_command(reader, writer, "CLIENTS")
    expect(reply.startswith("+OK "), f"CLIENTS: {reply!r}")
    entries = [dict(field.split("=", 1) for field in entry.split(",")) for entry in reply.split(" ")[2:]]
    return [entry["id"] for entry in entries if entry.get("transport") == "ws"]


async def frames_until_closed(ws):
    """The text frames left before the close, and the close code."""
    frames = []
    try:
        while True:
            frames.append(await recv(ws))
    except ConnectionClosed:
        pass
    return frames, ws.close_code


async def websocket(http, tcp):
    url = f"ws://127.0.0.1:{http}/ws"
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", tcp), TIMEOUT)
    expect((await asyncio.wait_for(reader.readline(), TIMEOUT)).startswith(b"+HELLO"), "tcp greeting")
    # Kicked by a TCP administrator: the farewell as a text frame, then close code 1008.
    victim = await greeted(url)
    await victim.send("SUB chat.room1")
    expect(await recv(victim) == "+OK 1", "SUB reply")
    [victim_id] = await websocket_ids(reader, writer)
    expect(await tcp_command(reader, writer, f"KICK {victim_id} flooding") == "+OK 1", "KICK reply")
    frames, code = await frames_until_closed(victim)
    expect(frames == ["-ERR kicked flooding"], f"kicked frames {frames!r}")
    expect(code == 1008, f"close code {code}, expected 1008")
    expect(await tcp_command(reader, writer, "PUB chat.room1 x") == "+OK 0", "the kicked subscriber left")
    # A WebSocket that kicks itself hears +OK 1 first.
    self_kicker = await greeted(url)
    [own_id] = await websocket_ids(reader, writer)
    await self_kicker.send(f"KICK {own_id}")
    frames, code = await frames_until_closed(self_kicker)
    expect(frames == ["+OK 1", "-ERR kicked by an administrator"], f"self-kick frames {frames!r}")
    expect(code == 1008, f"self-kick close code {code}")
    writer.close()


CHECKS = {"websocket": websocket}


def main():
    check, http, tcp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        asyncio.run(asyncio.wait_for(CHECKS[check](http, tcp), 60))
    except Exception as error:  # noqa: BLE001 - every failure is reported the same way
        print(f"FAILED {check}: {error!r}")
        sys.exit(1)
    print(f"ok {check}")


main()
