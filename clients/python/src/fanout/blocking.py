"""The same client for code without an event loop: each method blocks until its result is there. The asyncio
client runs on an event loop in a thread of its own; responders' plain functions run in a worker thread so
that a slow handler does not hold up the connection."""
from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import Future
from types import TracebackType
from typing import (Any, Awaitable, Callable, Coroutine, Iterable, Iterator, List, Optional, Tuple, Type, TypeVar,
                    Union)

from . import client as aio
from .messages import AskResult, Event, Info, Message, Question
from .presence import PresenceEvent, PresenceSubscription as AsyncPresenceSubscription, Who
from .protocol import Payload
from .backoff import Backoff
from .questions import Handler
from .questions import Responder as AsyncResponder
from .subscription import Subscription as AsyncSubscription
from .tokens import TokenSource

T = TypeVar("T")
# A responder's function: it gets the question and returns the answer. A plain function runs in a worker
# thread; a coroutine function runs on the client's loop.
BlockingHandler = Callable[[Question], Union[bytes, str, Awaitable[Union[bytes, str]]]]


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fanout", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def call(self, function: Callable[[], T]) -> T:
        """Runs a plain function on the loop's thread (the asyncio client is not thread-safe) and returns
        its result or raises its exception."""
        async def run() -> T:
            return function()
        return self.run(run())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class Subscription:
    """Iterate with `for msg in sub`: leaving the loop (`break`, an exception) ends the subscription, as in
    the asyncio client; `with client.subscribe(...) as sub:` ends it with the block. `next(timeout)` takes
    one message and keeps the subscription. See the asyncio Subscription for the queue's bound."""

    def __init__(self, runner: _LoopThread, inner: AsyncSubscription) -> None:
        self._runner = runner
        self._inner = inner
        self.patterns = inner.patterns

    @property
    def dropped(self) -> int:
        """Messages dropped because the queue was full."""
        return self._inner.dropped

    @property
    def pending(self) -> int:
        """Messages queued and not yet taken."""
        return self._inner.pending

    @property
    def active(self) -> bool:
        """Whether the subscription still receives."""
        return self._inner.active

    def __iter__(self) -> Iterator[Message]:
        try:
            while True:
                try:
                    yield self._runner.run(self._inner._next())
                except StopAsyncIteration:
                    return
        finally:
            # Without waiting: this may run when the generator is collected, even at the interpreter's exit.
            if not self._runner.loop.is_closed():
                self._runner.loop.call_soon_threadsafe(self._inner._left)

    def __next__(self) -> Message:
        try:
            return self._runner.run(self._inner._next())
        except StopAsyncIteration:
            raise StopIteration from None

    def next(self, timeout: Optional[float] = None) -> Message:
        """The next message, waiting at most `timeout` seconds (then the built-in TimeoutError)."""
        try:
            return self._runner.run(self._inner.next(timeout))
        except StopAsyncIteration:
            raise StopIteration from None

    def unsubscribe(self) -> None:
        """Drops the subscription; the iteration ends once the queued messages are taken."""
        self._runner.run(self._inner.unsubscribe())

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self._runner.run(self._inner.__aexit__(kind, error, traceback))


class PresenceSubscription:
    """The joins and leaves of a subject: `for event in presence`, as a Subscription (leaving the loop ends
    it; `with client.presence(...) as presence:` ends it with the block); see the asyncio PresenceSubscription."""

    def __init__(self, runner: _LoopThread, inner: AsyncPresenceSubscription) -> None:
        self._runner = runner
        self._inner = inner
        self.subscription = Subscription(runner, inner.subscription)

    @property
    def malformed(self) -> int:
        """Messages skipped as neither a join nor a leave."""
        return self._inner.malformed

    @property
    def active(self) -> bool:
        return self._inner.active

    def __iter__(self) -> Iterator[PresenceEvent]:
        try:
            while True:
                try:
                    yield self._runner.run(self._inner._next())
                except StopAsyncIteration:
                    return
        finally:
            if not self._runner.loop.is_closed():
                self._runner.loop.call_soon_threadsafe(self._inner.subscription._left)

    def next(self, timeout: Optional[float] = None) -> PresenceEvent:
        """The next join or leave, waiting at most `timeout` seconds (then the built-in TimeoutError)."""
        try:
            return self._runner.run(self._inner.next(timeout))
        except StopAsyncIteration:
            raise StopIteration from None

    def unsubscribe(self) -> None:
        self.subscription.unsubscribe()

    def __enter__(self) -> "PresenceSubscription":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.subscription.__exit__(kind, error, traceback)


class Responder:
    """A handler answering the questions put to a subject; `stop()` withdraws it and returns once the server
    has dropped the subscription."""

    def __init__(self, runner: _LoopThread, inner: AsyncResponder) -> None:
        self._runner = runner
        self._inner = inner
        self.subject = inner.subject
        self.group = inner.group

    def stop(self) -> None:
        self._runner.run(self._inner.stop())

    def __enter__(self) -> "Responder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Client:
    """The asyncio Client's methods, blocking. Safe to call from several threads: each call runs on the
    client's own loop thread."""

    def __init__(self, runner: _LoopThread, inner: aio.Client) -> None:
        self._runner = runner
        self._inner = inner

    def subscribe(self, *patterns: str, group: Optional[str] = None) -> Subscription:
        """Subscribes to subjects and patterns, or as a member of `group`; see the asyncio client."""
        async def run() -> AsyncSubscription:
            return await self._inner.subscribe(*patterns, group=group)
        return Subscription(self._runner, self._runner.run(run()))

    def publish(self, subject: str, payload: Payload) -> int:
        """Publishes and returns the receivers count once the server has answered."""
        # The asyncio client's publish writes when called, so it is called on the loop's thread.
        async def run() -> int:
            return await self._inner.publish(subject, payload)
        return self._runner.run(run())

    def publish_many(self, items: Iterable[Tuple[str, Payload]]) -> List[int]:
        """Publishes (subject, payload) pairs pipelined, and returns their receivers counts in order; see the
        asyncio client's publish_many for failures."""
        pairs = list(items)

        async def run() -> List[int]:
            return await self._inner.publish_many(pairs)
        return self._runner.run(run())

    def publish_nowait(self, subject: str, payload: Payload) -> None:
        """Publishes without waiting for the reply; `flush()` checks the replies and sums the receivers. Raises
        BadSubject, or ConnectionLost when there is no connection, at once."""
        self._runner.call(lambda: self._inner.publish_nowait(subject, payload))

    def flush(self) -> int:
        """Waits for the replies to every earlier command; returns the receivers of the `publish_nowait` calls
        since the last flush, or raises the first of their failures."""
        return self._runner.run(self._inner.flush())

    def last(self, subject: str, count: int = 1) -> List[Message]:
        """The newest `count` retained messages of a concrete subject, oldest first."""
        return self._runner.run(self._inner.last(subject, count))

    def ask(self, subject: str, payload: Payload, timeout: float = 0.5, max_answers: int = 0) -> AskResult:
        """Puts a question to the receivers of `subject` and returns what came back within `timeout` s."""
        return self._runner.run(self._inner.ask(subject, payload, timeout, max_answers))

    def respond(self, subject: str, handler: BlockingHandler, group: Optional[str] = None) -> Responder:
        """Answers the questions put to `subject` with `handler(question)`; returns once subscribed."""
        if inspect.iscoroutinefunction(handler):
            wrapped: Handler = handler
        else:
            async def wrapped(question: Question) -> Union[bytes, str]:
                answer = await asyncio.get_running_loop().run_in_executor(None, handler, question)
                return await answer if inspect.isawaitable(answer) else answer

        async def register() -> AsyncResponder:
            responder = self._inner.respond(subject, wrapped, group)
            await responder.ready
            return responder
        return Responder(self._runner, self._runner.run(register()))

    def who(self, subject: str, limit: Optional[int] = None) -> Who:
        """The members of a subject the server keeps presence for; see the asyncio client."""
        return self._runner.run(self._inner.who(subject, limit))

    def kick(self, client: Union[str, int], reason: Optional[str] = None) -> int:
        """Closes a connection (or `user=<user>`: all of a user's); returns how many were closed."""
        return self._runner.run(self._inner.kick(client, reason))

    def presence(self, subject: str) -> PresenceSubscription:
        """The joins and leaves of a subject or pattern, as PresenceEvents; see the asyncio client."""
        async def run() -> AsyncPresenceSubscription:
            return await self._inner.presence(subject)
        return PresenceSubscription(self._runner, self._runner.run(run()))

    def info(self) -> Info:
        """The server's INFO; see `Info` for typed fields."""
        return self._runner.run(self._inner.info())

    def request(self, line: str) -> str:
        """Sends one command line and returns its reply after `+OK `."""
        return self._runner.run(self._inner.request(line))

    def ping(self, text: str = "") -> str:
        """PING: returns `PONG` and the text."""
        return self._runner.run(self._inner.ping(text))

    def close(self) -> None:
        """Closes the connection and stops the client's thread."""
        try:
            self._runner.run(self._inner.close(), timeout=5)
        finally:
            self._runner.stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(address: str = "127.0.0.1:7411", token: Optional[TokenSource] = None, tls: Any = None, *,
            reconnect: Union[bool, Backoff] = True, timeout: float = 5.0, max_pending: int = 65536,
            max_pending_bytes: int = 64 << 20, keepalive: float = 20.0,
            on_event: Optional[Callable[[Event], Any]] = None, **options: Any) -> Client:
    """As `fanout.connect`, blocking. `on_event`, and a token function, are called on the client's thread."""
    runner = _LoopThread()
    try:
        inner = runner.run(aio.connect(address, token, tls, reconnect=reconnect, timeout=timeout,
                                       max_pending=max_pending, max_pending_bytes=max_pending_bytes,
                                       keepalive=keepalive, on_event=on_event, **options))
    except BaseException:
        runner.stop()
        raise
    return Client(runner, inner)
