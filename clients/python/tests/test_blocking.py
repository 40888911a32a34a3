"""The blocking client: responders that stop, publish_nowait with flush, loops that end their subscription,
typed INFO, and the built-in TimeoutError."""
import asyncio
import gc
import threading
import unittest
import warnings

import fanout
import fanout.blocking

from .support import Daemon, bounded


def subscriptions(client: fanout.blocking.Client) -> int:
    return int(client.info()["subscriptions"])


class BlockingTests(unittest.IsolatedAsyncioTestCase):
    async def blocking(self, function):
        return await asyncio.get_running_loop().run_in_executor(None, function)

    @bounded(30)
    async def test_a_stopped_responder_answers_no_more(self):
        async with Daemon() as daemon:
            def run():
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # "coroutine ... was never awaited" fails the test
                    with fanout.blocking.connect(daemon.address) as server, \
                            fanout.blocking.connect(daemon.address) as asker:
                        responder = server.respond("time", lambda q: "noon " + threading.current_thread().name)
                        first = asker.ask("time", "now?", timeout=2)
                        stopped = responder.stop()
                        second = asker.ask("time", "now?", timeout=0.3)
                        gc.collect()
                        return first, stopped, second, subscriptions(server)
            first, stopped, second, left = await self.blocking(run)
            self.assertEqual((first.asked, len(first.answers)), (1, 1))
            self.assertTrue(first.answers[0][1].startswith(b"noon "))
            self.assertIsNone(stopped)
            self.assertEqual((second.asked, second.answers), (0, []))
            self.assertEqual(left, 0)

    @bounded(30)
    async def test_publish_nowait_and_flush(self):
        async with Daemon() as daemon:
            def run():
                with fanout.blocking.connect(daemon.address) as client:
                    sub = client.subscribe("metrics")
                    for i in range(500):
                        client.publish_nowait("metrics", str(i))
                    receivers = client.flush()
                    texts = [sub.next(5).text for _ in range(500)]
                    with self.assertRaises(fanout.BadSubject):
                        client.publish_nowait("bad subject", "x")
                    return receivers, texts
            receivers, texts = await self.blocking(run)
            self.assertEqual(receivers, 500)
            self.assertEqual(texts, [str(i) for i in range(500)])

    @bounded(30)
    async def test_leaving_a_for_loop_ends_the_subscription_and_next_times_out_with_timeout_error(self):
        async with Daemon() as daemon:
            def run():
                with fanout.blocking.connect(daemon.address) as client:
                    sub = client.subscribe("news.*")
                    with self.assertRaises(TimeoutError):
                        sub.next(0.05)
                    client.publish("news.uk", "one")
                    for message in sub:
                        self.assertEqual(message.text, "one")
                        break
                    gc.collect()
                    for _ in range(500):
                        if subscriptions(client) == 0:
                            break
                    with client.subscribe("orders") as orders:
                        inside = subscriptions(client)
                        client.publish("orders", "o")
                        self.assertEqual(orders.next(5).text, "o")
                    return sub.active, inside, subscriptions(client), client.info()["clients"]
            active, inside, after, clients = await self.blocking(run)
            self.assertFalse(active)
            self.assertEqual((inside, after, clients), (1, 0, 1))


if __name__ == "__main__":
    unittest.main()
