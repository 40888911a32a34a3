"""Reconnect and resume through a proxy the test cuts: exact recovered and missed counts, no duplicate."""
import asyncio
import logging
import unittest

import fanout

from .support import HISTORY_CONFIG, CuttingProxy, Daemon, bounded

FAST = fanout.Backoff(initial=0.02, maximum=0.1)


class Recorder:
    """Collects the client's events and lets a test await one of a kind."""

    def __init__(self) -> None:
        self.events = []
        self._changed = asyncio.Event()

    def __call__(self, event: fanout.Event) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: str):
        return [e for e in self.events if e.kind == kind]

    async def wait_for(self, kind: str, count: int = 1, timeout: float = 10) -> list:
        async def wait():
            while len(self.of(kind)) < count:
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(wait(), timeout)
        return self.of(kind)


class ResumeTests(unittest.IsolatedAsyncioTestCase):
    @bounded(30)
    async def test_a_cut_connection_resumes_with_exact_counts_and_no_duplicate(self):
        async with Daemon(HISTORY_CONFIG) as daemon, CuttingProxy(daemon.port) as proxy:
            events = Recorder()
            subscriber = await fanout.connect(proxy.address, reconnect=FAST, on_event=events)
            publisher = await fanout.connect(daemon.address)
            sub = await subscriber.subscribe("orders.eu")
            for i in range(1, 3):
                await publisher.publish("orders.eu", f"o{i}")
            self.assertEqual([(await sub.next(5)).seq for _ in range(2)], [1, 2])

            proxy.cut(holding=True)
            await events.wait_for("disconnected")
            # Seven while away; history keeps five (seqs 5 to 9), so 3 and 4 are gone for good.
            for i in range(3, 10):
                await publisher.publish("orders.eu", f"o{i}")
            with self.assertLogs("fanout", logging.INFO) as logs:
                proxy.release()
                [resumed] = await events.wait_for("resumed")
            self.assertEqual((resumed.report.subject, resumed.report.recovered, resumed.report.missed),
                             ("orders.eu", 5, 2))
            self.assertIn("INFO:fanout:fanout: recovered 5 messages on orders.eu", logs.output)
            self.assertIn("WARNING:fanout:fanout: missed 2 messages on orders.eu (history too short)", logs.output)
            await publisher.publish("orders.eu", "o10")
            received = [(await sub.next(5)).seq for _ in range(6)]
            self.assertEqual(received, [5, 6, 7, 8, 9, 10])
            self.assertEqual(sub.pending, 0)
            await subscriber.close()
            await publisher.close()

    @bounded(30)
    async def test_subjects_met_through_a_wildcard_resume_and_gaps_are_counted(self):
        async with Daemon(HISTORY_CONFIG) as daemon, CuttingProxy(daemon.port) as proxy:
            events = Recorder()
            subscriber = await fanout.connect(proxy.address, reconnect=FAST, on_event=events)
            publisher = await fanout.connect(daemon.address)
            sub = await subscriber.subscribe("feeds.*", "news.*")
            await publisher.publish("feeds.a", "a1")
            await publisher.publish("news.uk", "n1")
            self.assertEqual([(m.subject, m.seq) for m in [await sub.next(5), await sub.next(5)]],
                             [("feeds.a", 1), ("news.uk", 1)])
            proxy.cut(holding=True)
            await events.wait_for("disconnected")
            await publisher.publish("feeds.a", "a2")
            await publisher.publish("feeds.a", "a3")
            # news keeps no history: both are missed, and said so.
            await publisher.publish("news.uk", "n2")
            await publisher.publish("news.uk", "n3")
            proxy.release()
            reports = {e.report.subject: (e.report.recovered, e.report.missed)
                       for e in await events.wait_for("resumed", 2)}
            self.assertEqual(reports, {"feeds.a": (2, 0), "news.uk": (0, 2)})
            # The wildcard itself is back: a subject first seen now arrives.
            await publisher.publish("news.fr", "f1")
            received = [(m.subject, m.seq) for m in [await sub.next(5) for _ in range(3)]]
            self.assertEqual(received, [("feeds.a", 2), ("feeds.a", 3), ("news.fr", 1)])
            await subscriber.close()
            await publisher.close()

    @bounded(30)
    async def test_a_restarted_server_is_reported_as_unknown_losses(self):
        async with Daemon(HISTORY_CONFIG) as first:
            port = first.port
            events = Recorder()
            async with CuttingProxy(port) as proxy:
                subscriber = await fanout.connect(proxy.address, reconnect=FAST, on_event=events)
                sub = await subscriber.subscribe("orders.us")
                publisher = await fanout.connect(first.address)
                await publisher.publish("orders.us", "before")
                self.assertEqual((await sub.next(5)).seq, 1)
                await publisher.close()
                proxy.cut(holding=True)
                async with Daemon(HISTORY_CONFIG) as second:
                    proxy.target_port = second.port
                    publisher = await fanout.connect(second.address)
                    await publisher.publish("orders.us", "after restart")
                    proxy.release()
                    [resumed] = await events.wait_for("resumed")
                    self.assertIsNone(resumed.report.missed)
                    self.assertIn("unknown: the server's numbering restarted", resumed.detail)
                    message = await sub.next(5)
                    self.assertEqual((message.seq, message.text), (1, "after restart"))
                    await publisher.close()
                    await subscriber.close()

    @bounded(30)
    async def test_without_reconnect_the_iteration_fails_with_connection_lost(self):
        async with Daemon() as daemon, CuttingProxy(daemon.port) as proxy:
            client = await fanout.connect(proxy.address, reconnect=False)
            sub = await client.subscribe("x")
            proxy.cut()
            with self.assertRaises(fanout.ConnectionLost):
                await sub.next(5)
            with self.assertRaises(fanout.ConnectionLost):
                await client.publish("x", "y")
            await client.close()


if __name__ == "__main__":
    unittest.main()
