"""The same client for code without an event loop: each method blocks until its result is there. The asyncio
client runs on an event loop in a thread of its own; responders' plain functions run in a worker thread so
that a slow handler does not hold up the connection."""
from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import Future
from typing import Any, Callable, Coroutine, Dict, Iterator, List, Optional, Union

from . import client as aio
from .messages import AskResult, Message, Question
from .protocol import Payload


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fanout", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine, timeout: Optional[float] = None) -> Any:
        future: Future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class Subscription:
    """Iterate with `for msg in sub`; `next(timeout)` waits at most that long."""

    def __init__(self, runner: _LoopThread, inner: Any) -> None:
        self._runner = runner
        self._inner = inner
        self.patterns = inner.patterns

    def __iter__(self) -> Iterator[Message]:
        return self

    def __next__(self) -> Message:
        try:
            return self._runner.run(self._inner.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def next(self, timeout: Optional[float] = None) -> Message:
        return self._runner.run(self._inner.next(timeout))

    def unsubscribe(self) -> None:
        self._runner.run(self._inner.unsubscribe())


class Client:
    def __init__(self, runner: _LoopThread, inner: aio.Client) -> None:
        self._runner = runner
        self._inner = inner

    def subscribe(self, *patterns: str, group: Optional[str] = None) -> Subscription:
        return Subscription(self._runner, self._runner.run(self._inner.subscribe(*patterns, group=group)))

    def publish(self, subject: str, payload: Payload) -> int:
        # The asyncio client's publish writes when called, so it is called on the loop's thread.
        async def run() -> int:
            return await self._inner.publish(subject, payload)
        return self._runner.run(run())

    def publish_many(self, items: List[tuple]) -> List[int]:
        """Publishes (subject, payload) pairs pipelined, and returns their receivers counts in order; see the
        asyncio client's publish_many for failures."""
        async def run() -> List[int]:
            return await self._inner.publish_many(items)
        return self._runner.run(run())

    def last(self, subject: str, count: int = 1) -> List[Message]:
        return self._runner.run(self._inner.last(subject, count))

    def ask(self, subject: str, payload: Payload, timeout: float = 0.5, max_answers: int = 0) -> AskResult:
        return self._runner.run(self._inner.ask(subject, payload, timeout, max_answers))

    def respond(self, subject: str, handler: Callable[[Question], Union[bytes, str]],
                group: Optional[str] = None) -> Any:
        if inspect.iscoroutinefunction(handler):
            wrapped = handler
        else:
            async def wrapped(question: Question) -> Union[bytes, str]:
                return await asyncio.get_running_loop().run_in_executor(None, handler, question)

        async def register() -> Any:
            return self._inner.respond(subject, wrapped, group)
        return self._runner.run(register())

    def info(self) -> Dict[str, Union[int, str]]:
        return self._runner.run(self._inner.info())

    def request(self, line: str) -> str:
        return self._runner.run(self._inner.request(line))

    def ping(self, text: str = "") -> str:
        return self._runner.run(self._inner.ping(text))

    def close(self) -> None:
        try:
            self._runner.run(self._inner.close(), timeout=5)
        finally:
            self._runner.stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(address: str = "127.0.0.1:7411", token: Optional[str] = None, tls: Any = None, **options: Any) -> Client:
    """As `fanout.connect`, blocking."""
    runner = _LoopThread()
    try:
        inner = runner.run(aio.connect(address, token, tls, **options))
    except BaseException:
        runner.stop()
        raise
    return Client(runner, inner)
