"""Connecting to something that is not fanoutd fails at once and cleanly; a client that only publishes is
kept alive through the server's idle timeout; a responder that raises says why, with its traceback."""
import asyncio
import gc
import logging
import sys
import time
import unittest
from asyncio.subprocess import PIPE

import fanout

from .support import Daemon, bounded
from .test_resume import Recorder


class Collect(logging.Handler):
    """The fanout logger's warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


PROGRAM = """
import asyncio, gc, fanout

async def main():
    try:
        await fanout.connect("127.0.0.1:%d", timeout=0.6, reconnect=False)
    except fanout.CannotConnect as error:
        print(type(error).__name__, error)
    gc.collect()

asyncio.run(main())
"""


class NotFanout:
    """A server of another protocol: it greets nobody, and answers each line as Redis answers PING."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.port = 0
        self._server = None
        self._writers = []

    async def __aenter__(self) -> "NotFanout":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer) -> None:
        self._writers.append(writer)
        while True:
            line = await reader.readline()
            if not line:
                return
            if self.answer:
                writer.write(b"+PONG\r\n")

    async def __aexit__(self, *exc) -> None:
        for writer in self._writers:
            writer.transport.abort()
        self._server.close()
        await self._server.wait_closed()


class ConnectionCareTests(unittest.IsolatedAsyncioTestCase):
    def catch_unhandled(self) -> None:
        self.unhandled = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: self.unhandled.append(context))

    @bounded(20)
    async def test_a_server_that_answers_another_protocol_is_refused_at_once(self):
        self.catch_unhandled()
        async with NotFanout(answer=True) as server:
            started = time.monotonic()
            with self.assertRaises(fanout.CannotConnect) as refused:
                await fanout.connect(f"127.0.0.1:{server.port}", timeout=5, reconnect=False)
            self.assertLess(time.monotonic() - started, 2.0)
            self.assertIn("not a Fanout server", str(refused.exception))
        gc.collect()
        await asyncio.sleep(0)
        self.assertEqual(self.unhandled, [])

    @bounded(20)
    async def test_a_silent_server_fails_after_the_timeout_with_nothing_left_unretrieved(self):
        # As a user's program meets it: a script of its own, whose stderr must hold no stray asyncio report.
        async with NotFanout(answer=False) as server:
            program = PROGRAM % server.port
            process = await asyncio.create_subprocess_exec(sys.executable, "-c", program,
                                                           stdout=PIPE, stderr=PIPE)
            out, err = await process.communicate()
        self.assertIn("CannotConnect", out.decode())
        self.assertIn("no greeting", out.decode())
        self.assertEqual(err.decode(), "")

    @bounded(20)
    async def test_the_http_port_of_fanoutd_is_refused_at_once(self):
        async with Daemon() as daemon:
            started = time.monotonic()
            with self.assertRaises(fanout.CannotConnect) as refused:
                await fanout.connect(f"127.0.0.1:{daemon.http_port}", timeout=5, reconnect=False)
            self.assertLess(time.monotonic() - started, 2.0)
            self.assertIn("HTTP", str(refused.exception))

    @bounded(30)
    async def test_a_client_that_only_publishes_outlives_the_idle_unsubscribed_timeout(self):
        async with Daemon(env={"FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT": "1"}) as daemon:
            events = []
            publisher = await fanout.connect(daemon.address, keepalive=0.3, on_event=events.append)
            before = (await publisher.request("CLIENTS")).split()[1].split(",")[0]
            # Three of the server's idle timeouts without a command from the application.
            await asyncio.sleep(3)
            self.assertEqual([e.kind for e in events], [])
            self.assertEqual(await publisher.publish("metrics", "1"), 0)
            after = (await publisher.request("CLIENTS")).split()[1].split(",")[0]
            self.assertEqual(before, after)
            await publisher.close()

    @bounded(30)
    async def test_a_keepalive_longer_than_the_servers_idle_timeout_adapts_after_one_quiet_reconnect(self):
        async with Daemon(env={"FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT": "1"}) as daemon:
            events = Recorder()
            warnings = Collect()
            logging.getLogger("fanout").addHandler(warnings)
            try:
                # The default keepalive (20 s) is longer than this server's 1 s.
                publisher = await fanout.connect(daemon.address, reconnect=fanout.Backoff(0.01, 0.05),
                                                 on_event=events)
                await events.wait_for("connected")
                self.assertLess(publisher.keepalive, 1.0)
                await asyncio.sleep(3)
                self.assertEqual([e.kind for e in events.events], ["disconnected", "reconnecting", "connected"])
                self.assertEqual(await publisher.publish("metrics", "1"), 0)
                self.assertEqual(warnings.records, [])
                await publisher.close()
            finally:
                logging.getLogger("fanout").removeHandler(warnings)

    @bounded(30)
    async def test_a_responder_that_raises_is_logged_with_its_traceback_and_the_asker_is_told_by_done(self):
        async with Daemon() as daemon:
            responder = await fanout.connect(daemon.address)
            asker = await fanout.connect(daemon.address)

            def handler(question):
                raise RuntimeError("boom")
            answering = responder.respond("time", handler)
            await answering.ready
            with self.assertLogs("fanout", logging.ERROR) as logs:
                result = await asker.ask("time", "now?", timeout=0.5)
            self.assertEqual((result.asked, result.answered, result.answers), (1, 0, []))
            text = "\n".join(logs.output)
            self.assertIn("the responder for time raised", text)
            self.assertIn("Traceback", text)
            self.assertIn("RuntimeError: boom", text)
            await responder.close()
            await asker.close()


if __name__ == "__main__":
    unittest.main()
