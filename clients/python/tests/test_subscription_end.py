"""A subscription left by `break`, or by the end of an `async with` block, ends; an abandoned one never stalls
the client's other commands."""
import asyncio
import gc
import unittest

import fanout

from .support import Daemon, bounded, until

BURST = 5000


async def subscriptions(client: fanout.Client) -> int:
    return int((await client.info())["subscriptions"])


class SubscriptionEndTests(unittest.IsolatedAsyncioTestCase):
    @bounded(60)
    async def test_break_out_of_async_for_unsubscribes_and_later_traffic_stalls_nothing(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            publisher = await fanout.connect(daemon.address)
            sub = await client.subscribe("news.*")
            await publisher.publish("news.uk", "first")
            async for message in sub:
                self.assertEqual(message.text, "first")
                break
            gc.collect()  # where the interpreter does not free the loop's iterator at once
            # Far more than any queue would hold (the first may still reach the client, until its UNSUB is
            # in): the client's commands still go through at once.
            receivers = await asyncio.gather(*(publisher.publish("news.uk", "x" * 100) for _ in range(BURST)))
            self.assertLessEqual(set(receivers), {0, 1})
            self.assertEqual(await asyncio.wait_for(client.publish("news.fr", "y"), 5), 0)
            self.assertEqual(await asyncio.wait_for(client.ping(), 5), "PONG")
            # And the subscription is gone, here and on the server.
            await until(lambda: not sub.active)
            observer = await fanout.connect(daemon.address)
            await until_async(lambda: subscriptions(observer), 0)
            self.assertEqual(await publisher.publish("news.uk", "after"), 0)
            self.assertEqual([m async for m in sub], [])
            for c in (client, publisher, observer):
                await c.close()

    @bounded(30)
    async def test_an_exception_in_the_loop_body_unsubscribes_too(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            sub = await client.subscribe("jobs")
            await client.publish("jobs", "boom")
            with self.assertRaises(KeyError):
                async for _ in sub:
                    raise KeyError("handler failed")
            gc.collect()
            await until_async(lambda: subscriptions(client), 0)
            self.assertFalse(sub.active)
            await client.close()

    @bounded(30)
    async def test_async_with_subscribe_unsubscribes_at_the_end_of_the_block(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            async with client.subscribe("orders.*", "alerts") as sub:
                self.assertEqual(await subscriptions(client), 2)
                self.assertEqual(await client.publish("orders.eu", "o1"), 1)
                self.assertEqual((await sub.next(5)).text, "o1")
            self.assertEqual(await subscriptions(client), 0)
            self.assertFalse(sub.active)
            self.assertEqual(await client.publish("orders.eu", "o2"), 0)
            await client.close()

    @bounded(30)
    async def test_next_keeps_the_subscription_and_times_out_with_the_builtin_timeout_error(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            sub = await client.subscribe("ticks")
            with self.assertRaises(TimeoutError):
                await sub.next(0.05)
            await client.publish("ticks", "1")
            self.assertEqual((await sub.next(5)).text, "1")
            self.assertTrue(sub.active)
            self.assertEqual(await subscriptions(client), 1)
            await client.close()


async def until_async(value, wanted, timeout: float = 10.0) -> None:
    """Waits for an awaited value to become `wanted` (a server counter no push announces)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (await value()) != wanted:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never became {wanted}")
        await asyncio.sleep(0.01)


if __name__ == "__main__":
    unittest.main()
