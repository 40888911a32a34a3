"""Presence (1.3) over WebSocket against a running fanoutd that keeps presence for chat.>.

Usage: presence_ws.py CHECK HTTP_PORT TCP_PORT
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
Every wait is bounded (TIMEOUT seconds).
"""
import asyncio
import re
import sys

# The helpers every WebSocket fixture shares: one bounded wait, one greeting check.
from websocket_checks import TIMEOUT, expect, greeted, recv


def timeless(line):
    """A leave's since_s depends on the machine's speed; the rest of the payload does not."""
    return re.sub(r"since_s=[0-9]+", "since_s=*", line) if " leave " in line else line


async def transport_of(ws, client):
    """The transport CLIENTS shows for the connection with id `client`."""
    await ws.send("CLIENTS")
    listing = await recv(ws)
    found = [word for word in listing.split(" ")[2:] if word.startswith(f"id={client},")]
    expect(len(found) == 1, f"id {client} in {listing!r}")
    return found[0].split("transport=")[1].split(",")[0]


async def members(http, tcp):
    """A member and a watcher over WebSocket, and a watcher over TCP: the same numbered joins and leaves reach
    both watchers, for a QUIT, for the client's own close frame, and for a KICK sent by the TCP watcher."""
    url = f"ws://127.0.0.1:{http}/ws"
    watcher = await greeted(url)
    await watcher.send("SUB $presence.chat.ws")
    expect(await recv(watcher) == "+OK 1", "watcher SUB")
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", tcp), TIMEOUT)
    expect((await asyncio.wait_for(reader.readline(), TIMEOUT)).startswith(b"+HELLO"), "tcp greeting")
    writer.write(b"SUB $presence.chat.ws\n")
    expect(await asyncio.wait_for(reader.readline(), TIMEOUT) == b"+OK 1\n", "tcp watcher SUB")

    async def tcp_line():
        return timeless((await asyncio.wait_for(reader.readline(), TIMEOUT)).decode().rstrip("\n"))

    seq = 0
    for farewell in ["QUIT", "close", "kick"]:
        member = await greeted(url)
        await member.send("QSUB g chat.ws" if farewell == "close" else "SUB chat.ws")
        expect(await recv(member) == "+OK 1", "member SUB")
        group = ",group=g" if farewell == "close" else ""
        join = await recv(watcher)
        found = re.fullmatch(rf"MSG \$presence\.chat\.ws {seq + 1} join id=([0-9]+),user=-,since_s=0{group}", join)
        expect(found is not None, f"ws watcher join: {join!r}")
        client = found.group(1)
        expect(await transport_of(member, client) == "ws", "the member is the WebSocket")
        expect(await tcp_line() == join, "tcp watcher join")
        await watcher.send("WHO chat.ws")
        who = await recv(watcher)
        expect(who.startswith(f"+OK 1 id={client},user=-,since_s="), f"WHO: {who!r}")
        if farewell == "QUIT":
            await member.send("QUIT")
            expect(await recv(member) == "+OK bye", "QUIT reply")
        elif farewell == "kick":
            writer.write(f"KICK {client} spam\n".encode())
            expect(await tcp_line() == "+OK 1", "KICK reply, before the leave")
            expect(await recv(member) == "-ERR kicked spam", "the kicked member is told why")
            await asyncio.wait_for(member.wait_closed(), TIMEOUT)
            expect(member.close_code == 1008, f"close code {member.close_code}")
        else:
            await member.close()
        reason = "kicked" if farewell == "kick" else "closed"
        leave = f"MSG $presence.chat.ws {seq + 2} leave id={client},user=-,since_s=*{group},reason={reason}"
        expect(timeless(await recv(watcher)) == leave, f"ws watcher leave, expected {leave!r}")
        expect(await tcp_line() == leave, "tcp watcher leave")
        seq += 2
    await watcher.close()
    writer.close()


CHECKS = {f.__name__.replace("_", "-"): f for f in [members]}

if __name__ == "__main__":
    name, http, tcp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        asyncio.run(asyncio.wait_for(CHECKS[name](http, tcp), 60))
    except Exception as error:
        print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)
