"""Groups, questions and any bytes (1.2) against a real fanoutd: what the scripted server of
test_protocol_1_2 cannot show, that the daemon and the client agree on these verbs."""
import asyncio
import time
import unittest

import fanout
from fanout.protocol import DEFAULT_MAX_LINE, PUSH_HEADER_ROOM, Framer

from .support import HISTORY_CONFIG, Daemon, bounded, until


async def clients_connected(client: fanout.Client) -> int:
    """How many connections the server holds, as CLIENTS counts them."""
    return int((await client.request("CLIENTS")).split()[0])


async def connect_all(daemon: Daemon, count: int):
    return [await fanout.connect(daemon.address) for _ in range(count)]


async def close_all(clients) -> None:
    for client in clients:
        await client.close()


async def drain(subscription: fanout.Subscription) -> list:
    """The messages already queued on a subscription, without waiting for more."""
    taken = []
    while subscription.pending:
        taken.append(await subscription.next(1))
    return taken


class GroupTests(unittest.IsolatedAsyncioTestCase):
    @bounded(30)
    async def test_each_message_reaches_exactly_one_member_and_the_members_share_them(self):
        async with Daemon() as daemon:
            members = await connect_all(daemon, 3)
            watcher, publisher = await connect_all(daemon, 2)
            subs = [await member.subscribe("jobs.>", group="workers") for member in members]
            plain = await watcher.subscribe("jobs.>")
            count = 60
            # One member of the group, and the plain subscriber.
            receivers = await asyncio.gather(*(publisher.publish("jobs.eu", f"job {i}") for i in range(count)))
            self.assertEqual(receivers, [2] * count)
            self.assertEqual([(await plain.next(5)).seq for _ in range(count)], list(range(1, count + 1)))
            # The plain subscriber's last message came after every member's share: all are queued by now.
            await publisher.ping()
            await until(lambda: sum(sub.pending for sub in subs) == count)
            shares = [[m.seq for m in await drain(sub)] for sub in subs]
            self.assertEqual(sorted(seq for share in shares for seq in share), list(range(1, count + 1)))
            for share in shares:
                self.assertEqual(share, sorted(share), "a member sees an increasing subsequence")
                self.assertGreater(len(share), 0, f"every member gets a share: {[len(s) for s in shares]}")
            await close_all(members + [watcher, publisher])

    @bounded(30)
    async def test_a_vanished_member_is_never_chosen(self):
        async with Daemon() as daemon:
            stays, leaves, publisher = await connect_all(daemon, 3)
            sub = await stays.subscribe("jobs.*", group="workers")
            await leaves.subscribe("jobs.*", group="workers")
            before = await clients_connected(publisher)
            await leaves.close()
            await until_async(lambda: clients_connected(publisher), before - 1)
            receivers = await asyncio.gather(*(publisher.publish("jobs.x", str(i)) for i in range(40)))
            self.assertEqual(receivers, [1] * 40)
            self.assertEqual([(await sub.next(5)).text for _ in range(40)], [str(i) for i in range(40)])
            await close_all([stays, publisher])

    @bounded(30)
    async def test_a_pattern_is_held_in_one_mode_only(self):
        async with Daemon() as daemon:
            client, publisher = await connect_all(daemon, 2)
            plain = await client.subscribe("work.a")
            # fanoutd would move work.a into the group, and the plain subscription would get a share only.
            with self.assertRaisesRegex(ValueError, "already subscribed plainly"):
                await client.subscribe("work.a", group="pool")
            with self.assertRaisesRegex(ValueError, "already subscribed plainly"):
                client.respond("work.a", lambda q: "", group="pool")
            grouped = await client.subscribe("work.b", group="pool")
            with self.assertRaisesRegex(ValueError, "in group pool"):
                await client.subscribe("work.b", group="other")
            with self.assertRaisesRegex(ValueError, "in group pool"):
                await client.last("work.b")
            # Both are still held as they were.
            self.assertEqual(await publisher.publish("work.a", "one"), 1)
            self.assertEqual(await publisher.publish("work.b", "two"), 1)
            self.assertEqual((await plain.next(5)).text, "one")
            self.assertEqual((await grouped.next(5)).text, "two")
            await grouped.unsubscribe()
            self.assertEqual(await publisher.publish("work.b", "nobody"), 0)
            await close_all([client, publisher])


async def until_async(read, wanted, timeout: float = 10.0) -> None:
    """Waits until an awaited reading (a server counter no event announces) equals `wanted`."""
    deadline = time.monotonic() + timeout
    while (value := await read()) != wanted:
        if time.monotonic() > deadline:
            raise AssertionError(f"still {value}, not {wanted}")
        await asyncio.sleep(0.01)


class QuestionTests(unittest.IsolatedAsyncioTestCase):
    @bounded(30)
    async def test_ask_gathers_every_responders_answer_then_done(self):
        async with Daemon() as daemon:
            responders = await connect_all(daemon, 3)
            asker = (await connect_all(daemon, 1))[0]
            for index, client in enumerate(responders):
                client.respond("svc.health", lambda q, index=index: f"ok {index} {q.text}")
            await until_async(lambda: channel_count(asker, "svc.health"), 3)
            result = await asker.ask("svc.health", "ping", timeout=5)
            self.assertEqual((result.asked, result.answered, result.gone), (3, 3, 0))
            self.assertEqual(sorted(p for _, p in result.answers), [b"ok 0 ping", b"ok 1 ping", b"ok 2 ping"])
            self.assertEqual(len({r for r, _ in result.answers}), 3, "three distinct responder ids")
            await close_all(responders + [asker])

    @bounded(30)
    async def test_max_answers_closes_the_question_early(self):
        async with Daemon() as daemon:
            responders = await connect_all(daemon, 3)
            asker = (await connect_all(daemon, 1))[0]
            for client in responders:
                client.respond("svc.any", lambda q: "here")
            await until_async(lambda: channel_count(asker, "svc.any"), 3)
            started = time.monotonic()
            result = await asker.ask("svc.any", "who", timeout=10, max_answers=1)
            self.assertLess(time.monotonic() - started, 5, "closed by the first answer, not the timeout")
            self.assertEqual((result.asked, result.answered, len(result.answers)), (3, 1, 1))
            await close_all(responders + [asker])

    @bounded(30)
    async def test_a_silent_receiver_is_counted_at_the_timeout(self):
        async with Daemon() as daemon:
            silent, answering, asker = await connect_all(daemon, 3)
            # A plain subscriber gets the question and never answers it.
            await silent.subscribe("svc.slow")
            answering.respond("svc.slow", lambda q: "fast")
            await until_async(lambda: channel_count(asker, "svc.slow"), 2)
            started = time.monotonic()
            result = await asker.ask("svc.slow", "?", timeout=0.3)
            self.assertGreaterEqual(time.monotonic() - started, 0.25)
            self.assertEqual((result.asked, result.answered, result.gone), (2, 1, 0))
            self.assertEqual(result.answers[0][1], b"fast")
            await close_all([silent, answering, asker])

    @bounded(30)
    async def test_a_responder_that_disconnects_counts_as_gone(self):
        async with Daemon() as daemon:
            leaving, answering, asker = await connect_all(daemon, 3)
            asked = asyncio.get_running_loop().create_future()

            async def never(question):
                asked.set_result(question)
                await asyncio.Event().wait()
            leaving.respond("svc.work", never)
            answering.respond("svc.work", lambda q: "done")
            await until_async(lambda: channel_count(asker, "svc.work"), 2)
            question = asyncio.ensure_future(asker.ask("svc.work", "job", timeout=20))
            await asked
            started = time.monotonic()
            await leaving.close()
            result = await question
            self.assertLess(time.monotonic() - started, 10, "a departure closes the question, not the timeout")
            self.assertEqual((result.asked, result.answered, result.gone), (2, 1, 1))
            await close_all([answering, asker])

    @bounded(30)
    async def test_an_answer_the_server_would_change_is_not_sent(self):
        async with Daemon() as daemon:
            responder, asker = await connect_all(daemon, 2)
            responder.respond("svc.cr", lambda q: "ends in CR\r")
            await until_async(lambda: channel_count(asker, "svc.cr"), 1)
            with self.assertLogs("fanout", "WARNING") as logs:
                result = await asker.ask("svc.cr", "?", timeout=0.2)
            self.assertEqual((result.asked, result.answered), (1, 0))
            self.assertTrue(any("no CR at its end" in line for line in logs.output), logs.output)
            await close_all([responder, asker])

    @bounded(30)
    async def test_respond_with_a_group_asks_one_member_and_never_the_asker(self):
        async with Daemon() as daemon:
            pool = await connect_all(daemon, 2)
            plain, asker = await connect_all(daemon, 2)
            for index, client in enumerate(pool):
                client.respond("svc.job", lambda q, index=index: f"member {index}", group="pool")
            plain.respond("svc.job", lambda q: "plain")
            # The asker is itself a member: it is left out, and the group's other members are asked instead.
            asker.respond("svc.job", lambda q: "asker", group="pool")
            await until_async(lambda: channel_count(asker, "svc.job"), 4)
            members = set()
            for _ in range(12):
                result = await asker.ask("svc.job", "run", timeout=5)
                self.assertEqual((result.asked, result.answered), (2, 2))
                payloads = sorted(p for _, p in result.answers)
                self.assertEqual(payloads[1], b"plain")
                self.assertNotEqual(payloads[0], b"asker")
                members.add(payloads[0])
            self.assertEqual(members, {b"member 0", b"member 1"}, "the group spreads its questions")
            await close_all(pool + [plain, asker])


async def channel_count(client: fanout.Client, subject: str) -> int:
    """Subscribers of a subject as CHANNELS counts them (group members included)."""
    words = (await client.request(f"CHANNELS {subject}")).split()[1:]
    return sum(int(word.rpartition("=")[2]) for word in words if word.rpartition("=")[0] == subject)


class AnyBytesTests(unittest.IsolatedAsyncioTestCase):
    PAYLOADS = [
        b"a\nb\x00c\n",                    # LF and NUL: BPUB, pushed as BMSG
        b"\n",
        b"\xff\xfe\x00\x80 not utf-8",     # a line carries it: PUB, pushed as MSG
        b"ends in CR\r",                   # a line cannot carry it: BPUB, pushed as MSG with its CR
        b"",
        bytes(range(256)) * 400,           # LF inside and over max_line: BPUB, BMSG
        b"x" * 70000,                      # over max_line without LF: BPUB, BMSG
        b"\r\n",
    ]

    @bounded(30)
    async def test_any_bytes_round_trip_exactly(self):
        async with Daemon() as daemon:
            subscriber, publisher = await connect_all(daemon, 2)
            sub = await subscriber.subscribe("bin.*")
            for payload in self.PAYLOADS:
                self.assertEqual(await publisher.publish("bin.a", payload), 1)
            for seq, payload in enumerate(self.PAYLOADS, 1):
                message = await sub.next(5)
                self.assertEqual((message.subject, message.seq), ("bin.a", seq))
                self.assertEqual(message.payload, payload, f"payload {seq}")
            await close_all([subscriber, publisher])

    @bounded(30)
    async def test_a_payload_of_max_line_bytes_on_a_long_subject_arrives(self):
        # A line can carry the payload, so fanoutd pushes it as MSG: a line longer than max_line by its header.
        async with Daemon() as daemon:
            subscriber, publisher = await connect_all(daemon, 2)
            subject = "s" * 200 + ".long"
            sub = await subscriber.subscribe(subject)
            payload = b"y" * 65536
            self.assertEqual(await publisher.publish(subject, payload), 1)
            self.assertEqual((await sub.next(5)).payload, payload)
            await close_all([subscriber, publisher])

    def test_the_longest_msg_line_is_taken_in_any_split(self):
        # What fanoutd pushes for a max_line payload on a 255-byte subject, fed as the socket may hand it over.
        line = b"MSG " + b"s" * 255 + b" 18446744073709551615 " + b"y" * DEFAULT_MAX_LINE + b"\n"
        for split in (1, DEFAULT_MAX_LINE, DEFAULT_MAX_LINE + 200, len(line) - 1):
            framer = Framer(DEFAULT_MAX_LINE + PUSH_HEADER_ROOM, 1 << 20)
            self.assertEqual(framer.feed(line[:split]) + framer.feed(line[split:]), [line[:-1]])

    @bounded(30)
    async def test_binary_messages_replay_as_they_were_pushed(self):
        async with Daemon(HISTORY_CONFIG) as daemon:
            client = await fanout.connect(daemon.address)
            for payload in self.PAYLOADS[:4]:
                self.assertEqual(await client.publish("orders.bin", payload), 0)
            messages = await client.last("orders.bin", 4)
            self.assertEqual([m.payload for m in messages], self.PAYLOADS[:4])
            self.assertEqual([m.seq for m in messages], [1, 2, 3, 4])
            await client.close()

    @bounded(30)
    async def test_a_payload_over_max_payload_is_refused_and_the_connection_stays_usable(self):
        async with Daemon(env={"FANOUTD_MAX_PAYLOAD": "1000"}) as daemon:
            client = await fanout.connect(daemon.address)
            with self.assertRaises(fanout.TooLong):
                await client.publish("bin.big", b"\n" * 1001)
            self.assertEqual(await client.publish("bin.big", b"\n" * 1000), 0)
            await client.close()


if __name__ == "__main__":
    unittest.main()
