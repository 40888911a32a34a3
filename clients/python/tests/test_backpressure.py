"""A consumer that does not keep up stops the client reading its socket; nothing piles up in the client."""
import asyncio
import unittest

import fanout

from .support import Daemon, FakeServer, bounded, raw_command, until

MESSAGES = 6000
PAYLOAD = b"p" * 1000


class BackpressureTests(unittest.IsolatedAsyncioTestCase):
    @bounded(60)
    async def test_a_consumer_that_does_not_keep_up_drops_what_overflows_and_holds_up_nothing_else(self):
        async with Daemon() as daemon:
            events = []
            subscriber = await fanout.connect(daemon.address, max_pending=100, on_event=events.append)
            publisher = await fanout.connect(daemon.address)
            slow = await subscriber.subscribe("slow")
            other = await subscriber.subscribe("other")
            receivers = await asyncio.gather(*(publisher.publish("slow", PAYLOAD) for _ in range(MESSAGES)))
            self.assertEqual(set(receivers), {1})
            # Nobody takes from `slow`: the client still reads, so replies and the other subscription go on.
            self.assertEqual(await asyncio.wait_for(subscriber.ping("through"), 5), "PONG through")
            self.assertEqual(await asyncio.wait_for(subscriber.publish("other", "fine"), 5), 1)
            self.assertEqual((await other.next(5)).text, "fine")
            await until(lambda: slow.pending + slow.dropped == MESSAGES)
            self.assertEqual((slow.pending, slow.dropped), (100, MESSAGES - 100))
            overflows = [e for e in events if e.kind == "overflow"]
            self.assertEqual(len(overflows), 1)
            self.assertIn("slow", overflows[0].detail)
            # What was kept is the oldest, in order.
            self.assertEqual([(await slow.next(5)).seq for _ in range(100)], list(range(1, 101)))
            # Once taken, the queue takes messages again.
            await publisher.publish("slow", "again")
            self.assertEqual((await slow.next(5)).seq, MESSAGES + 1)
            await subscriber.close()
            await publisher.close()


if __name__ == "__main__":
    unittest.main()


class PublishBurstTests(unittest.IsolatedAsyncioTestCase):
    @bounded(60)
    async def test_a_burst_of_publishes_never_awaited_on_the_way_holds_bounded_output(self):
        finished = asyncio.get_running_loop().create_future()

        async def script(conn):
            # A server that reads nothing: the kernel's buffers fill, then the client's transport.
            await finished

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, reconnect=False)
            # Twenty megabytes published without yielding once: past the transport's high-water mark the
            # publishes wait, unwritten, for their await instead of writing.
            replies = [client.publish("burst", PAYLOAD) for _ in range(20000)]
            buffered = client._wire.transport.get_write_buffer_size()
            high_water = client._wire.transport.get_write_buffer_limits()[1]
            self.assertLessEqual(buffered, high_water + 256 * 1024 + len(PAYLOAD) + 64)
            self.assertFalse(client._wire.writable.is_set())
            waiting = sum(1 for reply in replies if asyncio.iscoroutine(reply))
            self.assertGreater(waiting, 10000)
            await client.close()
            outcomes = await asyncio.gather(*replies, return_exceptions=True)
            self.assertTrue(all(isinstance(outcome, fanout.Closed) for outcome in outcomes))
            finished.set_result(None)
