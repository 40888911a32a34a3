"""What the tests run against: a real fanoutd on a loopback port the kernel picks, a proxy the test can cut,
and a scripted fake server for the exact lines of the 1.2 verbs and for pushes fanoutd cannot be made to send
on demand (RESET)."""
from __future__ import annotations

import asyncio
import functools
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import Awaitable, Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parents[3]

# History for the resume tests: orders keep 5 messages, feeds keep 100, news keep none.
HISTORY_CONFIG = """
history:
  - subjects: "orders.>"
    max_messages: 5
  - subjects: "feeds.>"
    max_messages: 100
"""

# The user of the error tests: may publish only to sensors.> (its token hashed by `fanoutd --hash-token`).
AUTH_CONFIG = """
users:
  sensors:
    token_hash: "sha256$cd52f5e7bcf1b2d265d016db5bc6e951$b90552b89e3564c3b944cbe7645234227c6158afd425b4a399ef73ba1145c7b0"
    publish: ["sensors.>"]
"""
SENSORS_TOKEN = "sensor-secret-token"


def fanoutd_binary() -> str:
    """$FANOUTD, else the repository's debug build, else its release build."""
    explicit = os.environ.get("FANOUTD")
    if explicit:
        return explicit
    for flavour in ("debug", "release"):
        candidate = REPO / ".build" / flavour / "fanoutd"
        if candidate.exists():
            return str(candidate)
    raise unittest.SkipTest("no fanoutd: build it with `swift build` or set FANOUTD")


def bounded(seconds: float) -> Callable:
    """Fails an async test that runs longer than `seconds`, instead of letting it hang."""
    def wrap(test: Callable[..., Awaitable]) -> Callable[..., Awaitable]:
        @functools.wraps(test)
        async def run(*args, **kwargs):
            return await asyncio.wait_for(test(*args, **kwargs), seconds)
        return run
    return wrap


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Waits for a condition no event announces (a queue's length, a server counter)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


class Daemon:
    """`fanoutd --listen 127.0.0.1:0` with an optional config text and FANOUTD_* settings."""

    def __init__(self, config: str = "", env: Optional[Dict[str, str]] = None, unix: bool = False,
                 tls: bool = False) -> None:
        self.config = config
        self.env = env or {}
        self.unix = unix
        self.tls = tls
        # With tls: a self-signed certificate for 127.0.0.1, which clients trust as their CA.
        self.certificate = ""
        self.tls_port = 0
        self.port = 0
        self.http_port = 0
        self.socket_path = ""
        self.process: Optional[asyncio.subprocess.Process] = None
        self.log: List[str] = []
        self._directory = tempfile.TemporaryDirectory()
        self._drain: Optional[asyncio.Task] = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> "Daemon":
        arguments = ["--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"]
        if self.unix:
            self.socket_path = os.path.join(self._directory.name, "fanoutd.sock")
            arguments += ["--listen", f"unix:{self.socket_path}"]
        config = self.config
        if self.tls:
            self.certificate = os.path.join(self._directory.name, "cert.pem")
            key = os.path.join(self._directory.name, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
                            self.certificate, "-days", "2", "-subj", "/CN=localhost", "-addext",
                            "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
            config += f'\ntls_listen: ["127.0.0.1:0"]\ntls_cert: "{self.certificate}"\ntls_key: "{key}"\n'
        if config:
            path = os.path.join(self._directory.name, "fanoutd.yaml")
            Path(path).write_text(config)
            arguments += ["--config", path]
        env = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
        env.update(self.env)
        self.process = await asyncio.create_subprocess_exec(
            fanoutd_binary(), *arguments, env=env, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        assert self.process.stderr is not None
        while not self.port or not self.http_port or (self.tls and not self.tls_port):
            line = (await asyncio.wait_for(self.process.stderr.readline(), 20)).decode()
            if not line:
                raise RuntimeError("fanoutd exited:\n" + "".join(self.log))
            self.log.append(line)
            listening = re.search(r"listening on 127\.0\.0\.1:(\d+)( \(tls\))?", line)
            if listening and listening.group(2):
                self.tls_port = int(listening.group(1))
            elif listening:
                self.port = int(listening.group(1))
            http = re.search(r"serving HTTP on http://127\.0\.0\.1:(\d+)", line)
            if http:
                self.http_port = int(http.group(1))
        self._drain = asyncio.ensure_future(self._read_log())
        return self

    async def _read_log(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        while True:
            line = await self.process.stderr.readline()
            if not line:
                return
            self.log.append(line.decode())

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        if self._drain is not None:
            await asyncio.wait_for(self._drain, 5)
        self._directory.cleanup()


class CuttingProxy:
    """Forwards 127.0.0.1:<port> to a target port. `cut()` drops every open connection; while `holding`, new
    connections are closed at once, so a client cannot come back until `release()`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.holding = False
        self.accepted = 0
        self._connected = asyncio.Event()
        self._writers: List[asyncio.StreamWriter] = []
        self._server: Optional[asyncio.AbstractServer] = None

    async def __aenter__(self) -> "CuttingProxy":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.holding:
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.accepted += 1
        self._writers += [writer, upstream_writer]
        self._connected.set()

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while True:
                    data = await source.read(65536)
                    if not data:
                        break
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()
        await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer))

    def cut(self, holding: bool = True) -> None:
        self.holding = holding
        self._connected.clear()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    def release(self) -> None:
        self.holding = False

    async def reconnected(self, timeout: float = 10) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def __aexit__(self, *exc: object) -> None:
        self.cut()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


class FakeServer:
    """A scripted server on a loopback port: `script(conn)` runs for each connection, after the greeting (with
    `epoch` when one is given, as a 1.1 server greets)."""

    def __init__(self, script: Callable[["FakeConnection"], Awaitable[None]], epoch: str = "E1") -> None:
        self.script = script
        self.epoch = epoch
        self.port = 0
        self.connections: List[FakeConnection] = []
        self._server: Optional[asyncio.AbstractServer] = None
        self._tasks: List[asyncio.Task] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> "FakeServer":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = FakeConnection(reader, writer)
        self.connections.append(connection)
        self._tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        connection.send("+HELLO fanout/1 fake auth=none" + (f" epoch={self.epoch}" if self.epoch else ""))
        try:
            await self.script(connection)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        # Each script then meets the end of its connection and returns.
        for connection in self.connections:
            connection.writer.transport.abort()
        outcomes = await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), 10)
        await self._server.wait_closed()
        # A script's own check that failed fails the test, even when the client side went on regardless.
        for outcome in outcomes:
            if isinstance(outcome, AssertionError):
                raise outcome


class FakeConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.received: List[bytes] = []

    def send(self, line: str) -> None:
        self.writer.write(line.encode() + b"\n")

    def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)

    async def line(self) -> str:
        data = await asyncio.wait_for(self.reader.readuntil(b"\n"), 10)
        self.received.append(data)
        return data[:-1].decode()

    async def exactly(self, count: int) -> bytes:
        return await asyncio.wait_for(self.reader.readexactly(count), 10)

    async def closed(self) -> None:
        """Waits for the client to close its side."""
        while await self.reader.read(65536):
            pass


async def raw_command(port: int, line: str) -> str:
    """Sends one command on a fresh connection of its own and returns the reply line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await asyncio.wait_for(reader.readline(), 10)
        writer.write(line.encode() + b"\n")
        return (await asyncio.wait_for(reader.readline(), 10)).decode().rstrip("\n")
    finally:
        writer.close()
