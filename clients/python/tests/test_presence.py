"""Presence (1.3) against a scripted server that speaks exactly the contract's lines: the WHO and KICK lines the
client sends, the members and joins and leaves it reads (a user written with `_`, a group member, a field or a
reason this version does not know, a payload that is neither), and the push `-ERR kicked`, after which the
client does not come back. test_presence_fanoutd runs the same against fanoutd."""
import asyncio
import logging
import unittest

import fanout
import fanout.blocking
from fanout.presence import parse_event, parse_member

from .support import FakeServer, bounded
from .test_resume import Recorder

# A reconnect that would come within milliseconds, were one made.
FAST = fanout.Backoff(initial=0.01, maximum=0.02)


class ParsingTests(unittest.TestCase):
    def test_a_member_word_reads_every_field_and_ignores_unknown_ones(self):
        self.assertEqual(parse_member("id=7,user=alice,since_s=12"), fanout.Member("7", "alice", 12, None))
        self.assertEqual(parse_member("id=n2/9,user=-,since_s=0,group=pool,zone=eu"),
                         fanout.Member("n2/9", None, 0, "pool"))
        for bad in ("id=7,user=alice", "id=,user=a,since_s=1", "id=7,user=a,since_s=x", "id=7 user=a since_s=1",
                    "id=7,user=a,since_s=1,junk"):
            with self.subTest(word=bad), self.assertRaises(ValueError):
                parse_member(bad)

    def test_joins_and_leaves_read_as_the_contract_writes_them(self):
        join = parse_event("$presence.chat.room1", 4, b"join id=7,user=alice_b,since_s=0")
        self.assertEqual((join.kind, join.member, join.reason, join.subject, join.seq),
                         ("join", fanout.Member("7", "alice_b", 0), None, "chat.room1", 4))
        leave = parse_event("$presence.chat.room1", 5, b"leave id=7,user=alice_b,since_s=12,reason=kicked")
        self.assertEqual((leave.kind, leave.member.since_s, leave.reason), ("leave", 12, "kicked"))
        # A reason a later server adds is kept as its text.
        self.assertEqual(parse_event("$presence.x", 6, b"leave id=8,user=-,since_s=1,reason=moved").reason, "moved")
        for bad in (b"join", b"hello id=7,user=a,since_s=0", b"leave id=7,user=a,since_s=1",
                    b"leave id=7,user=a,since_s=1,reason=", b"join id=7,since_s=0"):
            with self.subTest(payload=bad), self.assertRaises(ValueError):
                parse_event("$presence.x", 1, bad)


class WhoAndKickTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_who_sends_the_subject_and_limit_and_reads_count_and_members_in_order(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "WHO chat.room1")
            conn.send("+OK 3 id=7,user=alice,since_s=12 id=node2/9,user=bob_smith,since_s=3,group=pool "
                      "id=8,user=-,since_s=0,future=1")
            self.assertEqual(await conn.line(), "WHO chat.room1 1")
            conn.send("+OK 3 id=7,user=alice,since_s=12")
            self.assertEqual(await conn.line(), "WHO chat.empty 0")
            conn.send("+OK 0")
            self.assertEqual(await conn.line(), "WHO news.uk")
            conn.send("-ERR syntax no presence kept for news.uk")
            self.assertEqual(await conn.line(), "WHO chat.room1")
            conn.send("+OK 1 id=7,user=alice")
            self.assertEqual(await conn.line(), "PING")
            conn.send("+PONG")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            who = await client.who("chat.room1")
            self.assertEqual(who.count, 3)
            self.assertEqual(who.members, [fanout.Member("7", "alice", 12), fanout.Member("node2/9", "bob_smith", 3,
                                                                                             "pool"),
                                           fanout.Member("8", None, 0)])
            self.assertEqual(await client.who("chat.room1", limit=1),
                             fanout.Who(3, [fanout.Member("7", "alice", 12)]))
            self.assertEqual(await client.who("chat.empty", 0), fanout.Who(0, []))
            with self.assertRaises(fanout.Syntax) as refused:
                await client.who("news.uk")
            self.assertEqual(refused.exception.text, "no presence kept for news.uk")
            with self.assertRaises(fanout.ProtocolViolation):
                await client.who("chat.room1")
            # A wildcard or a bad limit is refused here, and nothing is sent: the next line is the PING.
            with self.assertRaises(fanout.BadSubject):
                await client.who("chat.*")
            with self.assertRaises(ValueError):
                await client.who("chat.room1", -1)
            self.assertEqual(await client.ping(), "PONG")
            await client.close()

    @bounded(20)
    async def test_kick_names_a_client_or_a_user_with_an_optional_reason(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "KICK 7 spamming the room")
            conn.send("+OK 1")
            self.assertEqual(await conn.line(), "KICK node2/9")
            conn.send("+OK 0")
            self.assertEqual(await conn.line(), "KICK user=alice")
            conn.send("+OK 2")
            self.assertEqual(await conn.line(), "KICK 7")
            conn.send("-ERR denied KICK needs an administrator")
            self.assertEqual(await conn.line(), "PING")
            conn.send("+PONG")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            self.assertEqual(await client.kick(7, "spamming the room"), 1)
            self.assertEqual(await client.kick("node2/9"), 0)
            self.assertEqual(await client.kick("user=alice"), 2)
            with self.assertRaises(fanout.Denied):
                await client.kick("7")
            for client_word, reason in (("7 8", None), ("7", "two\nlines"), ("7", "x" * 257)):
                with self.subTest(client=client_word, reason=reason), self.assertRaises(ValueError):
                    await client.kick(client_word, reason)
            self.assertEqual(await client.ping(), "PONG")
            await client.close()


class PresenceSubscriptionTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_joins_and_leaves_arrive_typed_with_their_seqs_and_a_malformed_one_is_skipped(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "RESUME $presence.chat.room1")
            conn.send("+OK 1 epoch=E1 seq=3 replayed=0 missed=0")
            conn.send("MSG $presence.chat.room1 4 join id=7,user=alice_b,since_s=0")
            conn.send("MSG $presence.chat.room1 5 join id=8,user=-,since_s=0,group=pool")
            conn.send("MSG $presence.chat.room1 6 hello")
            conn.send("MSG $presence.chat.room1 7 leave id=8,user=-,since_s=2,group=pool,reason=vanished")
            conn.send("MSG $presence.chat.room1 8 leave id=7,user=alice_b,since_s=12,reason=closed")
            self.assertEqual(await conn.line(), "UNSUB $presence.chat.room1")
            conn.send("+OK 0")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            events = []
            with self.assertLogs("fanout", logging.WARNING) as logs:
                async with client.presence("chat.room1") as presence:
                    async for event in presence:
                        events.append(event)
                        if len(events) == 4:
                            break
            self.assertEqual(events, [
                fanout.PresenceEvent("join", fanout.Member("7", "alice_b", 0), None, "chat.room1", 4),
                fanout.PresenceEvent("join", fanout.Member("8", None, 0, "pool"), None, "chat.room1", 5),
                fanout.PresenceEvent("leave", fanout.Member("8", None, 2, "pool"), "vanished", "chat.room1", 7),
                fanout.PresenceEvent("leave", fanout.Member("7", "alice_b", 12), "closed", "chat.room1", 8),
            ])
            self.assertEqual(presence.malformed, 1)
            self.assertIn("seq 6", "".join(logs.output))
            await client.close()

    @bounded(20)
    async def test_a_pattern_watches_every_subject_it_matches_and_a_presence_subject_is_refused(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "SUB $presence.chat.>")
            conn.send("+OK 1")
            conn.send("MSG $presence.chat.a 1 join id=3,user=u,since_s=0")
            conn.send("MSG $presence.chat.b 9 leave id=4,user=v,since_s=5,reason=timeout")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            presence = await client.presence("chat.>")
            first, second = await presence.next(5), await presence.next(5)
            self.assertEqual([(e.subject, e.seq, e.kind, e.reason) for e in (first, second)],
                             [("chat.a", 1, "join", None), ("chat.b", 9, "leave", "timeout")])
            with self.assertRaises(fanout.BadSubject):
                await client.presence("$presence.chat.a")
            with self.assertRaises(fanout.BadSubject):
                await client.presence("chat." + "x" * 241)
            await client.close()


class KickedTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_after_the_kicked_push_the_client_never_reconnects_and_everything_ends_with_kicked(self):
        kicked = asyncio.Event()

        async def script(conn):
            self.assertEqual(await conn.line(), "SUB news.*")
            conn.send("+OK 1")
            self.assertEqual(await conn.line(), "PING")
            conn.send("-ERR kicked spamming the room")
            conn.writer.close()
            kicked.set()

        async with FakeServer(script) as server:
            events = Recorder()
            client = await fanout.connect(server.address, reconnect=FAST, on_event=events)
            sub = await client.subscribe("news.*")
            pinging = asyncio.ensure_future(client.ping())
            with self.assertRaises(fanout.Kicked) as ended:
                await sub.next(10)
            self.assertEqual((ended.exception.code, ended.exception.reason), ("kicked", "spamming the room"))
            with self.assertRaises(fanout.Kicked):
                await pinging
            [event] = await events.wait_for("kicked")
            self.assertEqual(event.detail, "spamming the room")
            await events.wait_for("disconnected")
            # A reconnect with this backoff would have come within 20 ms: none comes in 50 times that.
            await asyncio.sleep(1)
            self.assertEqual(len(server.connections), 1)
            self.assertEqual(events.of("reconnecting"), [])
            with self.assertRaises(fanout.Kicked):
                await client.publish("news.uk", "x")
            self.assertTrue(kicked.is_set())
            await client.close()


class BlockingTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_the_blocking_client_has_who_kick_and_presence(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "WHO chat.room1 5")
            conn.send("+OK 1 id=7,user=alice,since_s=1")
            self.assertEqual(await conn.line(), "KICK 7")
            conn.send("+OK 1")
            self.assertEqual(await conn.line(), "RESUME $presence.chat.room1")
            conn.send("+OK 1 epoch=E1 seq=0 replayed=0 missed=0")
            conn.send("MSG $presence.chat.room1 1 leave id=7,user=alice,since_s=1,reason=kicked")
            self.assertEqual(await conn.line(), "UNSUB $presence.chat.room1")
            conn.send("+OK 0")
            await conn.closed()

        async with FakeServer(script) as server:
            def run():
                with fanout.blocking.connect(server.address) as client:
                    who = client.who("chat.room1", 5)
                    kicked = client.kick(7)
                    with client.presence("chat.room1") as presence:
                        return who, kicked, presence.next(5)
            who, kicked, event = await asyncio.get_running_loop().run_in_executor(None, run)
            self.assertEqual((who, kicked), (fanout.Who(1, [fanout.Member("7", "alice", 1)]), 1))
            self.assertEqual((event.kind, event.reason, event.seq), ("leave", "kicked", 1))


if __name__ == "__main__":
    unittest.main()
