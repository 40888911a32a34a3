"""Every word a method puts on a command line is checked before anything is sent: a subject from user input
can never end the line early and smuggle in a command of its own, or leave the replies off by one."""
import unittest

import fanout

from .support import Daemon, bounded

# Each refused for its own reason of PROTOCOL.md's subject grammar.
BAD_SUBJECTS = ["", "bad subject", "a\nPUB b", "a\rb", "a\tb", "a..b", ".a", "a.", "a.>.b", "é", "x" * 256,
                "news\n"]
BAD_CONCRETE = BAD_SUBJECTS + ["news.*", "news.>", "*", ">"]
BAD_GROUPS = ["", "a b", "g\nPUB x y", "g!", "x" * 65]


class ValidationTests(unittest.IsolatedAsyncioTestCase):
    @bounded(30)
    async def test_no_public_method_sends_a_bad_word_and_the_replies_stay_in_step(self):
        async with Daemon() as daemon:
            watcher = await fanout.connect(daemon.address)
            everything = await watcher.subscribe(">")
            client = await fanout.connect(daemon.address)
            for subject in BAD_CONCRETE:
                with self.subTest(subject=subject):
                    with self.assertRaises(fanout.BadSubject):
                        await client.publish(subject, "x")
                    with self.assertRaises(fanout.BadSubject):
                        client.publish_nowait(subject, "x")
                    with self.assertRaises(fanout.BadSubject):
                        await client.publish_many([("good", "x"), (subject, "x")])
                    with self.assertRaises(fanout.BadSubject):
                        await client.last(subject)
                    with self.assertRaises(fanout.BadSubject):
                        await client.ask(subject, "x")
            for pattern in BAD_SUBJECTS:
                with self.subTest(pattern=pattern):
                    with self.assertRaises(fanout.BadSubject):
                        await client.subscribe("good", pattern)
                    with self.assertRaises(fanout.BadSubject):
                        client.respond(pattern, lambda q: "a")
            for group in BAD_GROUPS:
                with self.subTest(group=group):
                    with self.assertRaises(ValueError):
                        await client.subscribe("jobs", group=group)
                    with self.assertRaises(ValueError):
                        client.respond("jobs", lambda q: "a", group=group)
            for line in ["CHANNELS\nPUB b x", "PING\r", "   "]:
                with self.assertRaises(ValueError):
                    await client.request(line)
            with self.assertRaises(ValueError):
                await client.ping("a\nPUB b x")
            for count in [-1, 1.5, True]:
                with self.assertRaises(ValueError):
                    await client.last("orders", count)
                with self.assertRaises(ValueError):
                    await client.ask("orders", "x", max_answers=count)
            with self.assertRaises(ValueError):
                await client.ask("orders", "x", timeout=0)
            with self.assertRaises(ValueError):
                await fanout.connect(daemon.address, token="secret\nPUB b x")
            # Wildcards are fine where a pattern is taken, and a literal `a*b` token is no wildcard.
            sub = await client.subscribe("news.*", "alerts.>", "a*b.c")
            self.assertEqual(await client.publish("a*b.c", "literal"), 2)
            # Nothing of the above was sent: nothing published, nobody else subscribed, replies in step.
            self.assertEqual((await client.ping("still")), "PONG still")
            self.assertEqual((await client.request("CHANNELS")).split()[0], "4")
            info = await client.info()
            self.assertEqual(info["published"], 1)
            message = await everything.next(5)
            self.assertEqual((message.subject, message.text), ("a*b.c", "literal"))
            self.assertEqual(everything.pending, 0)
            await sub.unsubscribe()
            await client.close()
            await watcher.close()


if __name__ == "__main__":
    unittest.main()
