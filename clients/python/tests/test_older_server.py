"""Against a server without history (no epoch in its greeting, before 1.1): subscriptions come back with SUB
after a reconnect, and a jump in a subject's seqs is reported as a gap."""
import unittest

import fanout

from .support import FakeServer, bounded
from .test_resume import Recorder


class OlderServerTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_resubscribes_everything_and_reports_gaps(self):
        async def script(conn):
            if len(server.connections) == 1:
                self.assertEqual(await conn.line(), "SUB news.* orders")
                conn.send("+OK 2")
                conn.send("MSG news.uk 1 first")
                conn.send("MSG orders 7 joined mid-stream")
                await conn.line()  # the test's PING: both messages are in
                conn.writer.transport.abort()
                return
            self.assertEqual(await conn.line(), "SUB news.* orders")
            conn.send("+OK 2")
            conn.send("MSG news.uk 4 after the outage")
            conn.send("MSG orders 8 next")
            await conn.closed()

        async with FakeServer(script, epoch="") as server:
            events = Recorder()
            client = await fanout.connect(server.address, reconnect=fanout.Backoff(0.01, 0.05), on_event=events)
            self.assertIsNone(client.greeting.epoch)
            sub = await client.subscribe("news.*", "orders")
            self.assertEqual([(await sub.next(5)).seq for _ in range(2)], [1, 7])
            with self.assertRaises(fanout.ConnectionLost):
                await client.ping()
            self.assertEqual([(m.subject, m.seq) for m in [await sub.next(5), await sub.next(5)]],
                             [("news.uk", 4), ("orders", 8)])
            self.assertEqual([e.detail for e in events.of("gap")], ["gap on news.uk: expected seq 2, got 4"])
            await client.close()


if __name__ == "__main__":
    unittest.main()
