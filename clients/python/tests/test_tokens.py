"""Application tokens (JWT) in the client, against a scripted server that sends the pushes of PROTOCOL.md
(AUTH): the token function called on connect and on every reconnect, a refresh ahead of `exp` and on the
`-ERR auth-expired` push, a failed refresh surfaced and retried, the `-ERR denied revoked:` notice ending the
subscriptions it names, and replies still matched to their commands when a push comes between them."""
import asyncio
import base64
import json
import time
import unittest

import fanout
from fanout.tokens import claims, refresh_in

from .support import FakeServer, bounded


def jwt(sub: str, lifetime: float, serial: int = 0) -> str:
    """An unsigned-looking JWT with the claims the client reads (the client never verifies a signature)."""
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    now = time.time()
    return ".".join([part({"alg": "HS256", "typ": "JWT"}),
                     part({"sub": sub, "iat": now, "exp": now + lifetime, "n": serial}), "c2ln"])


class Tokens:
    """A token function that counts its calls and may be told to fail."""

    def __init__(self, lifetime: float = 3600) -> None:
        self.lifetime = lifetime
        self.calls = 0
        self.failing = 0
        self.issued: "asyncio.Queue[str]" = asyncio.Queue()

    async def __call__(self) -> str:
        self.calls += 1
        if self.failing:
            self.failing -= 1
            raise RuntimeError("backend down")
        token = jwt("alice", self.lifetime, self.calls)
        self.issued.put_nowait(token)
        return token


class RefreshDelayTests(unittest.TestCase):
    def test_the_refresh_comes_a_tenth_of_the_lifetime_before_exp_within_its_bounds(self):
        now = 1_000_000.0

        def token(iat: float, exp: float) -> str:
            body = base64.urlsafe_b64encode(json.dumps({"iat": iat, "exp": exp}).encode()).decode().rstrip("=")
            return f"e30.{body}.x"
        self.assertEqual(refresh_in(token(now, now + 3600), now), 3600 - 60)  # capped at a minute
        self.assertEqual(refresh_in(token(now, now + 300), now), 300 - 30)  # a tenth
        self.assertEqual(refresh_in(token(now, now + 20), now), 20 - 5)  # at least 5 s
        self.assertEqual(refresh_in(token(now, now + 3), now), 1.5)  # never before half of it
        self.assertEqual(refresh_in(token(now - 100, now - 1), now), 0)  # already due
        self.assertIsNone(refresh_in("static-token", now))
        self.assertIsNone(refresh_in("a.b.c", now))
        self.assertEqual(claims(token(1, 2)), {"iat": 1, "exp": 2})


class TokenTests(unittest.IsolatedAsyncioTestCase):
    @bounded(20)
    async def test_the_token_function_is_called_before_connecting_and_on_every_reconnect(self):
        tokens = Tokens()
        seen = []

        async def script(conn):
            seen.append(await conn.line())
            conn.send("+OK")
            if len(seen) == 1:
                conn.writer.transport.abort()  # the first connection drops once authenticated
                return
            await conn.closed()

        async with FakeServer(script) as server:
            events: "asyncio.Queue[fanout.Event]" = asyncio.Queue()
            client = await fanout.connect(server.address, token=tokens, reconnect=fanout.Backoff(0.01, 0.05),
                                          on_event=events.put_nowait)
            while (await asyncio.wait_for(events.get(), 10)).kind != "connected":
                pass
            self.assertEqual(tokens.calls, 2)
            first, second = tokens.issued.get_nowait(), tokens.issued.get_nowait()
            self.assertEqual(seen, [f"AUTH {first}", f"AUTH {second}"])
            self.assertEqual(client.token, second)
            await client.close()

    @bounded(20)
    async def test_a_short_token_is_refreshed_ahead_of_exp_on_the_live_connection(self):
        tokens = Tokens(lifetime=2)
        refreshed = asyncio.get_running_loop().create_future()

        async def script(conn):
            await conn.line()
            conn.send("+OK")
            self.assertEqual(await conn.line(), "SUB chat.>")
            conn.send("+OK 1")
            started = time.monotonic()
            line = await conn.line()
            refreshed.set_result((line, time.monotonic() - started))
            conn.send("+OK")
            conn.send("MSG chat.room 1 still here")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, token=tokens)
            sub = await client.subscribe("chat.>")
            line, after = await refreshed
            await tokens.issued.get()
            # 2 s token: refreshed at half its lifetime, before it expires, on the same connection.
            self.assertEqual(line, f"AUTH {await tokens.issued.get()}")
            self.assertLess(after, 1.9)
            self.assertEqual((await sub.next(5)).text, "still here")
            self.assertEqual(len(server.connections), 1)
            await client.close()

    @bounded(20)
    async def test_a_function_that_gives_the_same_token_again_does_not_refresh_in_a_loop(self):
        token = jwt("alice", 2)
        lines: "asyncio.Queue[str]" = asyncio.Queue()

        async def script(conn):
            while True:
                lines.put_nowait(await conn.line())
                conn.send("+OK")

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, token=lambda: token)
            await asyncio.sleep(2.5)  # past the token's exp: the refresh timer had all its chances
            received = [lines.get_nowait() for _ in range(lines.qsize())]
            # The AUTH of the connect and the one refresh before exp; the same token is not due again at once.
            self.assertEqual(received, [f"AUTH {token}"] * 2)
            await client.close()

    @bounded(20)
    async def test_the_auth_expired_push_fetches_a_fresh_token_and_a_reply_still_finds_its_command(self):
        tokens = Tokens()
        events: "asyncio.Queue[fanout.Event]" = asyncio.Queue()

        async def script(conn):
            await conn.line()
            conn.send("+OK")
            self.assertEqual(await conn.line(), "PUB a.b one")
            # The push comes between the command and its reply: it must not be taken for the reply.
            conn.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s")
            conn.send("+OK 3")
            self.assertTrue((await conn.line()).startswith("AUTH "))
            conn.send("+OK")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, token=tokens, on_event=events.put_nowait)
            self.assertEqual(await client.publish("a.b", "one"), 3)
            kinds = []
            while "token-refreshed" not in kinds:
                kinds.append((await asyncio.wait_for(events.get(), 10)).kind)
            self.assertEqual(kinds, ["auth-expired", "token-refreshed"])
            self.assertEqual(tokens.calls, 2)
            await client.close()

    @bounded(20)
    async def test_a_failed_refresh_is_reported_and_retried(self):
        tokens = Tokens()
        events: "asyncio.Queue[fanout.Event]" = asyncio.Queue()

        async def script(conn):
            await conn.line()
            conn.send("+OK")
            conn.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s")
            line = await conn.line()
            conn.send("-ERR denied token is for another user")
            self.assertTrue(line.startswith("AUTH "))
            self.assertTrue((await conn.line()).startswith("AUTH "))
            conn.send("+OK")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, token=tokens, on_event=events.put_nowait)
            tokens.failing = 1
            details = []
            while True:
                event = await asyncio.wait_for(events.get(), 15)
                if event.kind == "token-refreshed":
                    break
                if event.kind == "token-failed":
                    details.append(event.detail)
            # The function raised once (retried after 1 s), then the server refused its token (after 2 s).
            self.assertEqual(len(details), 2)
            self.assertIn("backend down", details[0])
            self.assertIn("another user", details[1])
            self.assertEqual(tokens.calls, 4)  # connect, the failure, the refused token, the good one
            await client.close()

    @bounded(20)
    async def test_a_token_function_that_fails_before_the_first_connection_raises(self):
        async def script(conn):
            await conn.closed()

        async def broken() -> str:
            raise RuntimeError("no session")

        async with FakeServer(script) as server:
            with self.assertRaises(fanout.TokenError) as caught:
                await fanout.connect(server.address, token=broken, reconnect=False)
            self.assertIsInstance(caught.exception.__cause__, RuntimeError)
            with self.assertRaises(fanout.TokenError):
                await fanout.connect(server.address, token=lambda: "two words", reconnect=False)

    @bounded(20)
    async def test_the_revoked_notice_ends_the_subscriptions_it_names(self):
        async def script(conn):
            await conn.line()
            conn.send("+OK")
            self.assertEqual(await conn.line(), "SUB chat.> other.*")
            conn.send("+OK 2")
            self.assertEqual(await conn.line(), "SUB news.*")
            conn.send("+OK 3")
            self.assertEqual(await conn.line(), "PING")
            conn.send("-ERR denied revoked: no longer allowed to subscribe to chat.>")
            conn.send("+PONG")
            # The revoked subscription's other pattern is given up too; news.* stays.
            self.assertEqual(await conn.line(), "UNSUB other.*")
            conn.send("+OK 1")
            conn.send("MSG news.today 1 kept")
            await conn.closed()

        async with FakeServer(script) as server:
            client = await fanout.connect(server.address, token=lambda: jwt("alice", 3600))
            revoked = await client.subscribe("chat.>", "other.*")
            kept = await client.subscribe("news.*")
            self.assertEqual(await client.ping(), "PONG")
            with self.assertRaises(fanout.Denied) as caught:
                await revoked.next(5)
            self.assertIn("chat.>", str(caught.exception))
            self.assertFalse(revoked.active)
            self.assertEqual((await kept.next(5)).text, "kept")
            await client.close()


if __name__ == "__main__":
    unittest.main()
