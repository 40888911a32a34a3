"""Groups, questions, any bytes (1.2) and the RESET push, against a scripted server that speaks exactly the
lines PROTOCOL.md gives them: the exact lines the client sends, and pushes fanoutd cannot be made to send on
demand (RESET, answers from another node). test_protocol_1_2_fanoutd runs the same verbs against fanoutd."""
import asyncio
import logging
import unittest

import fanout

from .support import FakeServer, bounded
from .test_resume import Recorder


class GroupTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_a_group_subscription_is_a_qsub_and_receives_its_share(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "QSUB workers jobs.> audit")
            conn.send("+OK 2")
            conn.send("MSG jobs.eu 4 job four")
            conn.send("MSG jobs.eu 9 job nine")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            sub = await client.subscribe("jobs.>", "audit", group="workers")
            # A member sees an increasing subsequence of seqs: no gap is reported for that.
            self.assertEqual([(await sub.next(5)).seq for _ in range(2)], [4, 9])
            await client.close()


class QuestionTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_ask_gathers_answers_until_done(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "ASK svc.health 500 0 are you ok")
            conn.send("+OK q17 3")
            conn.send("ANSWER q17 4 fine")
            conn.send("ANSWER q17 node2/9 all good")
            conn.send("DONE q17 asked=3 answered=2 gone=1")
            self.assertEqual(await conn.line(), "ASK svc.none 1000 1 ?")
            conn.send("+OK q18 0")
            conn.send("DONE q18 asked=0 answered=0 gone=0")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            result = await client.ask("svc.health", "are you ok", timeout=0.5)
            self.assertEqual(result.answers, [("4", b"fine"), ("node2/9", b"all good")])
            self.assertEqual((result.asked, result.answered, result.gone), (3, 2, 1))
            empty = await client.ask("svc.none", b"?", timeout=1, max_answers=1)
            self.assertEqual((empty.answers, empty.asked), ([], 0))
            await client.close()

    @bounded(20)
    async def test_respond_answers_each_question_with_the_handlers_result(self):
        answered = asyncio.get_running_loop().create_future()

        async def script(conn):
            self.assertEqual(await conn.line(), "SUB svc.health")
            conn.send("+OK 1")
            self.assertEqual(await conn.line(), "QSUB pool svc.work")
            conn.send("+OK 2")
            conn.send("ASK svc.health a1 ping")
            conn.send("ASK svc.work a2 job")
            lines = sorted([await conn.line(), await conn.line()])
            conn.send("+OK 1")
            conn.send("+OK 0")
            answered.set_result(lines)
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            client.respond("svc.health", lambda q: "pong " + q.text)

            async def work(question):
                await asyncio.sleep(0)
                return b"done " + question.payload
            client.respond("svc.work", work, group="pool")
            self.assertEqual(await answered, ["ANSWER a1 pong ping", "ANSWER a2 done job"])
            await client.close()


class AnyBytesTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_payloads_a_line_cannot_carry_go_as_bpub_and_arrive_as_bmsg(self):
        blob = bytes(range(256)) * 4000 + b"\r"

        async def script(conn):
            self.assertEqual(await conn.line(), "SUB bin.*")
            conn.send("+OK 1")
            self.assertEqual(await conn.line(), "BPUB bin.a 6")
            self.assertEqual(await conn.exactly(7), b"a\nb\x00c\n\n")
            conn.send("+OK 3")
            self.assertEqual(await conn.line(), f"BPUB bin.big {len(blob)}")
            self.assertEqual(await conn.exactly(len(blob) + 1), blob + b"\n")
            conn.send("+OK 1")
            self.assertEqual(await conn.line(), "PUB bin.line plain")
            conn.send("+OK 1")
            conn.send_bytes(b"BMSG bin.a 1 6\na\nb\x00c\n\n")
            conn.send_bytes(f"BMSG bin.big 1 {len(blob)}\n".encode() + blob + b"\n")
            conn.send("MSG bin.line 1 ends in CR\r")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address)
            sub = await client.subscribe("bin.*")
            self.assertEqual(await client.publish("bin.a", b"a\nb\x00c\n"), 3)
            self.assertEqual(await client.publish("bin.big", blob), 1)
            self.assertEqual(await client.publish("bin.line", "plain"), 1)
            messages = [await sub.next(5) for _ in range(3)]
            self.assertEqual(messages[0].payload, b"a\nb\x00c\n")
            self.assertEqual(messages[1].payload, blob)
            self.assertEqual(messages[2].payload, b"ends in CR\r")
            await client.close()


class ResetTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_a_reset_moves_the_position_and_is_reported_like_a_resume(self):
        async def script(conn):
            self.assertEqual(await conn.line(), "RESUME orders")
            conn.send("+OK 1 epoch=E1 seq=0 replayed=0 missed=0")
            conn.send("MSG orders 1 one")
            conn.send("MSG orders 2 two")
            conn.send("RESET orders epoch=E1 seq=5 missed=3")
            conn.send("MSG orders 6 six")
            conn.send("RESET orders epoch=E2 seq=0 missed=unknown")
            conn.send("MSG orders 1 new one")
            conn.send("MSG orders 1 new one again")
            conn.send("MSG orders 2 new two")
            await conn.closed()

        async with FakeServer(script) as server:
            events = Recorder()
            with self.assertLogs("fanout", logging.INFO) as logs:
                client = await fanout.connect(server.address, on_event=events)
                sub = await client.subscribe("orders")
                received = [(m.seq, m.text) for m in [await sub.next(5) for _ in range(5)]]
            self.assertEqual(received, [(1, "one"), (2, "two"), (6, "six"), (1, "new one"), (2, "new two")])
            resets = [(e.report.subject, e.report.missed) for e in events.of("reset")]
            self.assertEqual(resets, [("orders", 3), ("orders", None)])
            self.assertEqual(events.of("gap"), [])
            self.assertIn("WARNING:fanout:fanout: missed 3 messages on orders (reset by the server)", logs.output)
            self.assertIn("WARNING:fanout:fanout: missed messages on orders (unknown: the server's numbering "
                          "restarted)", logs.output)
            await client.close()


if __name__ == "__main__":
    unittest.main()
