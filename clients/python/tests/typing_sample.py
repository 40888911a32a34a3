"""What users write, checked by `mypy --strict` in test_types: it must type-check as it is."""
import asyncio
from typing import Dict, List, Optional

import fanout
import fanout.blocking


def on_event(event: fanout.Event) -> None:
    if event.kind == "resumed" and event.report is not None:
        missed: "int | None" = event.report.missed
        print(event.report.subject, event.report.recovered, missed)


async def main() -> None:
    async with await fanout.connect("127.0.0.1:7411", on_event=on_event) as client:
        info = await client.info()
        clients: int = info.clients
        async with client.subscribe("news.*") as sub:
            async for message in sub:
                text: str = message.text
                print(text, clients, sub.dropped)
                break
        counts: List[int] = await client.publish_many([("a", b"1"), ("b", "2")])
        receivers: int = await client.publish("a", b"x")
        result = await client.ask("a", "q")
        answers: List[bytes] = [payload for _, payload in result.answers]
        print(counts, receivers, answers)


async def presence() -> None:
    client = await fanout.connect("127.0.0.1:7411")
    members: Dict[str, fanout.Member] = {}
    async with client.presence("chat.room1") as events:
        who: fanout.Who = await client.who("chat.room1", limit=1000)
        members.update((member.client, member) for member in who.members)
        async for event in events:
            if event.kind == "join":
                members[event.member.client] = event.member
            else:
                members.pop(event.member.client, None)
            reason: Optional[str] = event.reason
            print(event.seq, event.subject, reason, event.member.user, event.member.since_s, len(members))
            break
    try:
        closed: int = await client.kick("user=alice", "spamming")
        print(closed)
    except fanout.Kicked as kicked:
        print(kicked.reason)


async def fetch_token() -> str:
    return "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"  # from the application's backend


async def with_tokens() -> None:
    client = await fanout.connect("127.0.0.1:7411", token=fetch_token, on_event=on_event)
    static = await fanout.connect("127.0.0.1:7411", token=lambda: "static")
    current: "str | None" = client.token
    print(current, static.token)
    try:
        await fanout.connect("127.0.0.1:7411", token=fetch_token)
    except fanout.TokenError as error:
        print(error.__cause__)


def blocking() -> None:
    with fanout.blocking.connect("127.0.0.1:7411") as client:
        responder: fanout.blocking.Responder = client.respond("time", lambda question: "noon")
        responder.stop()
        client.publish_nowait("metrics", "1")
        flushed: int = client.flush()
        uptime: int = client.info().uptime_s
        print(flushed, uptime)
        who: fanout.Who = client.who("chat.room1")
        with client.presence("chat.room1") as events:
            for event in events:
                print(event.kind, who.count)
                break


if __name__ == "__main__":
    asyncio.run(main())
