"""Round trips against a real fanoutd: subscribe, publish, pipelining, payloads, history, INFO."""
import asyncio
import ssl
import unittest

import fanout
import fanout.blocking

from .support import HISTORY_CONFIG, Daemon, bounded


class RoundTripTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_publish_reaches_a_wildcard_subscriber_with_its_seq(self):
        async with Daemon() as daemon:
            subscriber = await fanout.connect(daemon.address)
            publisher = await fanout.connect(daemon.address)
            sub = await subscriber.subscribe("news.*", "alerts.>")
            self.assertEqual(await publisher.publish("news.uk", b"hello"), 1)
            self.assertEqual(await publisher.publish("alerts.fire.kitchen", "smoke and more words"), 1)
            self.assertEqual(await publisher.publish("news.uk.london", "nobody"), 0)
            first, second = await sub.next(5), await sub.next(5)
            self.assertEqual((first.subject, first.seq, first.payload), ("news.uk", 1, b"hello"))
            self.assertEqual((second.subject, second.seq, second.text), ("alerts.fire.kitchen", 1, "smoke and more words"))
            await subscriber.close()
            await publisher.close()

    @bounded(30)
    async def test_concurrent_publishes_are_pipelined_and_matched_in_order(self):
        async with Daemon() as daemon:
            subscriber = await fanout.connect(daemon.address)
            publisher = await fanout.connect(daemon.address)
            sub = await subscriber.subscribe("pipe.>")
            # Half the subjects have the subscriber, half not: each reply must land on its own publish.
            receivers = await asyncio.gather(*(
                publisher.publish("pipe.a" if i % 2 == 0 else "other.a", str(i)) for i in range(2000)))
            self.assertEqual(receivers, [1 if i % 2 == 0 else 0 for i in range(2000)])
            seqs = [(await sub.next(5)).seq for _ in range(1000)]
            self.assertEqual(seqs, list(range(1, 1001)))
            await subscriber.close()
            await publisher.close()

    @bounded(20)
    async def test_large_and_binary_payloads_arrive_unchanged(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            sub = await client.subscribe("blob")
            # Every byte a PUB line can carry: all but LF, and no CR at the end.
            binary = bytes(b for b in range(256) if b != 10) * 240
            binary = binary[:60000] + b"end"
            self.assertEqual(await client.publish("blob", binary), 1)
            message = await sub.next(5)
            self.assertEqual(message.payload, binary)
            self.assertEqual(len(message.payload), 60003)
            await client.close()

    @bounded(20)
    async def test_last_gives_retained_messages_then_subscribe_goes_on_without_repeats(self):
        async with Daemon(HISTORY_CONFIG) as daemon:
            client = await fanout.connect(daemon.address)
            for i in range(1, 5):
                await client.publish("orders.eu", f"order-{i}")
            newest = await client.last("orders.eu", 2)
            self.assertEqual([(m.seq, m.text) for m in newest], [(3, "order-3"), (4, "order-4")])
            await client.publish("orders.eu", "order-5")
            sub = await client.subscribe("orders.eu")
            await client.publish("orders.eu", "order-6")
            self.assertEqual([(await sub.next(5)).seq for _ in range(2)], [5, 6])
            self.assertEqual(sub.pending, 0)
            await client.close()

    @bounded(20)
    async def test_info_is_a_dict_with_numbers(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            info = await client.info()
            self.assertEqual(info["clients"], 1)
            self.assertIsInstance(info["uptime_s"], int)
            self.assertTrue(info["epoch"])
            self.assertEqual(client.greeting.epoch, info["epoch"])
            self.assertTrue((await client.request("CLIENTS")).startswith("1 id="))
            with self.assertRaises(fanout.UnknownCommand):
                await client.request("FROB")
            await client.close()

    @bounded(20)
    async def test_unix_socket(self):
        async with Daemon(unix=True) as daemon:
            client = await fanout.connect(f"unix:{daemon.socket_path}")
            sub = await client.subscribe("local")
            self.assertEqual(await client.publish("local", "over a unix socket"), 1)
            self.assertEqual((await sub.next(5)).text, "over a unix socket")
            await client.close()

    @bounded(30)
    async def test_tls_with_the_servers_ca_and_a_refusal_without_it(self):
        async with Daemon(tls=True) as daemon:
            context = ssl.create_default_context(cafile=daemon.certificate)
            client = await fanout.connect(f"127.0.0.1:{daemon.tls_port}", tls=context)
            sub = await client.subscribe("secure")
            self.assertEqual(await client.publish("secure", "over tls"), 1)
            self.assertEqual((await sub.next(5)).text, "over tls")
            await client.close()
            with self.assertRaises(fanout.CannotConnect):
                await fanout.connect(f"127.0.0.1:{daemon.tls_port}", tls=True, reconnect=False)

    @bounded(20)
    async def test_unsubscribe_ends_the_iteration_and_the_server_subscription(self):
        async with Daemon() as daemon:
            client = await fanout.connect(daemon.address)
            sub = await client.subscribe("gone.*")
            await sub.unsubscribe()
            self.assertEqual([m async for m in sub], [])
            self.assertEqual((await client.info())["subscriptions"], 0)
            await client.close()


class BlockingTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_the_blocking_client_has_the_same_methods(self):
        async with Daemon(HISTORY_CONFIG) as daemon:
            def run():
                with fanout.blocking.connect(daemon.address) as client:
                    sub = client.subscribe("orders.*")
                    receivers = [client.publish("orders.uk", f"n{i}") for i in range(3)]
                    received = [sub.next(5).text for _ in range(3)]
                    newest = [m.seq for m in client.last("orders.uk", 2)]
                    return receivers, received, newest, client.info()["clients"]
            receivers, received, newest, clients = await asyncio.get_running_loop().run_in_executor(None, run)
            self.assertEqual(receivers, [1, 1, 1])
            self.assertEqual(received, ["n0", "n1", "n2"])
            self.assertEqual(newest, [2, 3])
            self.assertEqual(clients, 1)


if __name__ == "__main__":
    unittest.main()
