"""A consumer that does not keep up stops the client reading its socket; nothing piles up in the client."""
import asyncio
import unittest

import fanout

from .support import Daemon, FakeServer, bounded, raw_command, until

MESSAGES = 6000
PAYLOAD = b"p" * 1000


class BackpressureTests(unittest.IsolatedAsyncioTestCase):
    @bounded(60)
    async def test_a_slow_consumer_holds_a_bounded_queue_and_loses_nothing(self):
        settings = {"FANOUTD_SEND_BUFFER_BYTES": "4096", "FANOUTD_MAX_PENDING_BYTES": "67108864"}
        async with Daemon(env=settings) as daemon:
            subscriber = await fanout.connect(daemon.address, max_pending=10)
            publisher = await fanout.connect(daemon.address)
            sub = await subscriber.subscribe("slow")
            receivers = await asyncio.gather(*(publisher.publish("slow", PAYLOAD) for _ in range(MESSAGES)))
            self.assertEqual(set(receivers), {1})
            await until(lambda: sub.pending >= 10)
            # The client has stopped reading: what it holds is the bound plus at most one read (256 KiB).
            self.assertTrue(subscriber._wire.reading_paused)
            self.assertLessEqual(sub.pending, 10 + 256 * 1024 // len(PAYLOAD) + 1)
            # And the rest waits on the server, which the client's socket is pushing back on.
            clients = await raw_command(daemon.port, "CLIENTS")
            pending = [int(f.split("=")[1]) for word in clients.split() for f in word.split(",")
                       if f.startswith("pending=")]
            self.assertGreater(max(pending), 0)
            seqs = [(await sub.next(10)).seq for _ in range(MESSAGES)]
            self.assertEqual(seqs, list(range(1, MESSAGES + 1)))
            self.assertFalse(subscriber._wire.reading_paused)
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
