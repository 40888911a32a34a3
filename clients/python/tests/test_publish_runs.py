"""Publishes without a future each, against a real fanoutd: publish_nowait with flush, and publish_many. Their
replies are still read and checked: the receivers add up, failures and lost connections are reported."""
import asyncio
import unittest

import fanout
import fanout.blocking

from .support import AUTH_CONFIG, SENSORS_TOKEN, CuttingProxy, Daemon, bounded


class PublishNowaitTests(unittest.IsolatedAsyncioTestCase):
    @bounded(30)
    async def test_flush_sums_the_receivers_and_the_messages_arrive_in_order(self):
        async with Daemon() as daemon:
            subscriber = await fanout.connect(daemon.address)
            publisher = await fanout.connect(daemon.address)
            sub = await subscriber.subscribe("runs.a")
            for i in range(3000):
                publisher.publish_nowait("runs.a" if i % 3 else "runs.nobody", str(i))
            publisher.publish_nowait("runs.a", b"two\nlines")  # BPUB in a run
            self.assertEqual(await publisher.flush(), 2001)
            self.assertEqual(await publisher.flush(), 0)
            texts = [(await sub.next(5)).text for _ in range(2001)]
            self.assertEqual(texts, [str(i) for i in range(3000) if i % 3] + ["two\nlines"])
            await subscriber.close()
            await publisher.close()

    @bounded(30)
    async def test_runs_interleave_with_awaited_commands_and_pushes(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            sub = await client.subscribe("mix.>")
            for _ in range(10):
                client.publish_nowait("mix.a", "x")
            # Its reply comes after the run's ten, and must land on its own future.
            self.assertEqual(await client.publish("mix.b", "y"), 1)
            many = client.publish_many([("mix.c", "z"), ("other", "w")])
            for _ in range(5):
                client.publish_nowait("mix.d", "v")
            self.assertEqual(await client.ping("here"), "PONG here")
            self.assertEqual(await many, [1, 0])
            self.assertEqual(await client.flush(), 15)
            self.assertEqual([(await sub.next(5)).subject for _ in range(17)],
                             ["mix.a"] * 10 + ["mix.b", "mix.c"] + ["mix.d"] * 5)
            await client.close()

    @bounded(30)
    async def test_flush_raises_the_first_failure_and_counts_the_others(self):
        async with Daemon(AUTH_CONFIG) as daemon:
            client = await fanout.connect(daemon.address, token=SENSORS_TOKEN)
            client.publish_nowait("sensors.a", "ok")
            for _ in range(3):
                client.publish_nowait("kitchen.a", "not mine")
            client.publish_nowait("sensors.b", "ok")
            with self.assertRaises(fanout.Denied) as denied:
                await client.flush()
            self.assertIn("(and 2 more publishes failed)", str(denied.exception))
            # Reported once: the next flush starts afresh.
            client.publish_nowait("sensors.a", "ok")
            self.assertEqual(await client.flush(), 0)
            with self.assertRaises(fanout.Denied) as failed:
                await client.publish_many([("sensors.a", "ok"), ("kitchen.a", "no"), ("kitchen.b", "no")])
            self.assertIn("(and 1 more of 3 publishes failed)", str(failed.exception))
            results = failed.exception.results
            self.assertEqual(results[0], 0)
            self.assertIsInstance(results[1], fanout.Denied)
            self.assertIsInstance(results[2], fanout.Denied)
            self.assertEqual(await client.publish_many([]), [])
            await client.close()

    @bounded(30)
    async def test_a_lost_connection_is_reported_by_flush_not_silently_dropped(self):
        async with Daemon() as daemon, CuttingProxy(daemon.port) as proxy:
            client = await fanout.connect(proxy.address, reconnect=False)
            for _ in range(5):
                client.publish_nowait("lost.a", "x")
            # Cut before the written run can be answered: the commands are still in this loop pass's batch.
            proxy.cut()
            with self.assertRaisesRegex(fanout.ConnectionLost, "replies of 5 publishes"):
                await client.flush()
            with self.assertRaises(fanout.ConnectionLost):
                client.publish_nowait("lost.a", "x")
            await client.close()
            with self.assertRaises(fanout.Closed):
                client.publish_nowait("lost.a", "x")

    @bounded(30)
    async def test_the_blocking_client_publishes_many(self):
        async with Daemon() as daemon:
            address = daemon.address

            def use() -> list:
                with fanout.blocking.connect(address) as client:
                    return client.publish_many([("b.a", "1"), ("b.b", b"\x00\n")])
            self.assertEqual(await asyncio.get_running_loop().run_in_executor(None, use), [0, 0])


if __name__ == "__main__":
    unittest.main()
