"""Each -ERR code arrives as its own exception carrying the server's text."""
import asyncio
import unittest

import fanout

from .support import AUTH_CONFIG, SENSORS_TOKEN, Daemon, FakeServer, bounded


class ErrorTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_bad_subject_syntax_and_too_long(self):
        async with Daemon(env={"FANOUTD_MAX_LINE": "1024"}) as daemon:
            client = await fanout.connect(daemon.address)
            with self.assertRaises(fanout.BadSubject) as bad:
                await client.publish("news.*", "x")
            self.assertIn("wildcards", bad.exception.text)
            # Refused by the client itself before sending (the server would say syntax).
            with self.assertRaises(ValueError):
                await client.last("orders", -1)
            with self.assertRaises(fanout.Syntax):
                await client.request("LAST orders -1")
            # The client assumes the default max_line (65536), so this goes as a PUB line the server refuses.
            with self.assertRaises(fanout.TooLong):
                await client.publish("big", b"x" * 2000)
            # The connection stays usable after each.
            self.assertEqual(await client.publish("small", "ok"), 0)
            await client.close()

    @bounded(20)
    async def test_limit(self):
        async with Daemon(env={"FANOUTD_MAX_SUBSCRIPTIONS": "2"}) as daemon:
            client = await fanout.connect(daemon.address)
            with self.assertRaises(fanout.Limit):
                await client.subscribe("a", "b", "c")
            sub = await client.subscribe("a", "b")
            self.assertEqual(sub.patterns, ("a", "b"))
            await client.close()

    @bounded(20)
    async def test_auth_required_denied_and_a_bad_token(self):
        async with Daemon(AUTH_CONFIG) as daemon:
            anonymous = await fanout.connect(daemon.address)
            self.assertTrue(anonymous.greeting.auth_required)
            with self.assertRaises(fanout.AuthRequired):
                await anonymous.publish("sensors.kitchen", "21.5")
            sensors = await fanout.connect(daemon.address, token=SENSORS_TOKEN)
            self.assertEqual(await sensors.publish("sensors.kitchen", "21.5"), 0)
            with self.assertRaises(fanout.Denied):
                await sensors.publish("news.uk", "not mine")
            with self.assertRaises(fanout.Denied):
                await fanout.connect(daemon.address, token="wrong")
            await anonymous.close()
            await sensors.close()

    @bounded(20)
    async def test_unavailable_and_unknown_codes_carry_the_server_text(self):
        async def script(conn):
            await conn.line()
            conn.send("-ERR unavailable shard 2 is down; outcome unknown")
            await conn.line()
            conn.send("-ERR brand-new a code from a later server")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, reconnect=False)
            with self.assertRaises(fanout.Unavailable) as unavailable:
                await client.publish("x", "1")
            self.assertEqual(unavailable.exception.text, "shard 2 is down; outcome unknown")
            with self.assertRaises(fanout.ServerError) as other:
                await client.publish("x", "2")
            self.assertEqual((other.exception.code, other.exception.text), ("brand-new", "a code from a later server"))
            await client.close()

    @bounded(20)
    async def test_publishes_in_flight_when_the_connection_drops_fail_and_are_not_sent_again(self):
        first = asyncio.get_running_loop().create_future()

        async def script(conn):
            if len(server.connections) == 1:
                # Take both PUBs, answer neither, and drop the connection.
                await conn.line()
                await conn.line()
                first.set_result(None)
                conn.writer.transport.abort()
                return
            await conn.line()
            conn.send("+OK 0")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, reconnect=fanout.Backoff(0.01, 0.05))
            results = await asyncio.gather(client.publish("x", "1"), client.publish("x", "2"), return_exceptions=True)
            self.assertTrue(all(isinstance(r, fanout.ConnectionLost) for r in results), results)
            self.assertIn("not sent again", str(results[0]))
            self.assertEqual(await client.publish("x", "3"), 0)
            lines = [l for c in server.connections for l in c.received]
            self.assertEqual(lines, [b"PUB x 1\n", b"PUB x 2\n", b"PUB x 3\n"])
            await client.close()


if __name__ == "__main__":
    unittest.main()
