"""Presence (1.3) against a real fanoutd that keeps presence for chat.>: what the scripted server of
test_presence cannot show, that the daemon and the client agree on WHO and on the joins and leaves, with their
seqs, as plain members, group members and members that unsubscribe or close."""
import unittest

import fanout

from .support import Daemon, bounded

PRESENCE_CONFIG = 'presence: ["chat.>"]\n'


class PresenceTests(unittest.IsolatedAsyncioTestCase):
    @bounded(30)
    async def test_joins_and_leaves_come_with_their_seqs_and_who_counts_the_members(self):
        async with Daemon(PRESENCE_CONFIG) as daemon:
            watcher = await fanout.connect(daemon.address)
            events = await watcher.presence("chat.room1")
            self.assertEqual(await watcher.who("chat.room1"), fanout.Who(0, []))

            first = await fanout.connect(daemon.address)
            sub = await first.subscribe("chat.room1")
            join = await events.next(5)
            self.assertEqual((join.kind, join.subject, join.seq, join.reason), ("join", "chat.room1", 1, None))
            self.assertEqual((join.member.user, join.member.since_s, join.member.group), (None, 0, None))
            who = await watcher.who("chat.room1")
            self.assertEqual((who.count, [m.client for m in who.members]), (1, [join.member.client]))

            second = await fanout.connect(daemon.address)
            await second.subscribe("chat.room1", group="pool")
            grouped = await events.next(5)
            self.assertEqual((grouped.kind, grouped.seq, grouped.member.group), ("join", 2, "pool"))
            # Oldest first, the limit listing fewer than the count.
            who = await watcher.who("chat.room1", limit=1)
            self.assertEqual((who.count, [m.client for m in who.members]), (2, [join.member.client]))

            await sub.unsubscribe()
            left = await events.next(5)
            self.assertEqual((left.kind, left.seq, left.reason, left.member.client),
                             ("leave", 3, "unsub", join.member.client))
            await second.close()
            closed = await events.next(5)
            self.assertEqual((closed.kind, closed.seq, closed.reason, closed.member.client, closed.member.group),
                             ("leave", 4, "closed", grouped.member.client, "pool"))
            self.assertEqual(await watcher.who("chat.room1"), fanout.Who(0, []))
            for client in (watcher, first):
                await client.close()

    @bounded(30)
    async def test_a_wildcard_watches_every_room_and_who_of_a_subject_not_kept_raises_syntax(self):
        async with Daemon(PRESENCE_CONFIG) as daemon:
            watcher = await fanout.connect(daemon.address)
            events = await watcher.presence("chat.>")
            member = await fanout.connect(daemon.address)
            await member.subscribe("chat.a")
            await member.subscribe("chat.b")
            seen = [await events.next(5), await events.next(5)]
            self.assertEqual([(e.subject, e.seq, e.kind) for e in seen], [("chat.a", 1, "join"), ("chat.b", 1, "join")])
            with self.assertRaises(fanout.Syntax):
                await watcher.who("news.uk")
            for client in (watcher, member):
                await client.close()


if __name__ == "__main__":
    unittest.main()
