"""A subscription: the patterns it holds, and the queue between the connection and `async for`."""
from __future__ import annotations

import asyncio
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any, AsyncIterator, Coroutine, Deque, Generator, Optional, Tuple, Type

from .errors import Closed
from .messages import Message

if TYPE_CHECKING:
    from .client import Client


class Subscription:
    """Iterate with `async for msg in sub`, or take one message with `await sub.next(timeout)`.

    Leaving an `async for` loop (`break`, `return`, an exception) ends the subscription: the client drops it,
    with the messages it still queued, and unsubscribes. `async with client.subscribe(...) as sub:` ends it when the
    block ends. To take messages in several loops one after another, use `next()`.

    A slow or forgotten subscription never holds up the connection: the client always reads the socket, so
    replies and the other subscriptions go on. The queue holds at most `max_pending` messages and
    `max_pending_bytes` bytes of payload; a message that finds it full is dropped and counted in `dropped`,
    and the first drop of each overflow (until the queue is half empty again) is reported as an "overflow"
    event and a warning on the `fanout` logger. Raise `max_pending` where a consumer must be allowed to fall
    further behind; the server's own slow-consumer limit still applies to what the client has not yet read.
    """

    def __init__(self, client: "Client", patterns: Tuple[str, ...], group: Optional[str], max_pending: int,
                 max_pending_bytes: int) -> None:
        self.patterns = patterns
        self.group = group
        # Messages dropped because the queue was full, since the subscription was made.
        self.dropped = 0
        self._client = client
        # Bound: max_pending messages and max_pending_bytes of payload (one message past it when it is larger).
        self._queue: Deque[Message] = deque()
        self._bytes = 0
        self._max = max_pending
        self._max_bytes = max_pending_bytes
        self._overflowing = False
        self._waiter: Optional[asyncio.Future[None]] = None
        self._ended: Optional[BaseException] = None

    def _push(self, message: Message) -> None:
        if len(self._queue) >= self._max or self._bytes >= self._max_bytes:
            self.dropped += 1
            if not self._overflowing:
                self._overflowing = True
                self._client._overflowed(self)
            return
        self._queue.append(message)
        self._bytes += len(message.payload)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end(self, error: BaseException) -> None:
        """No more messages: the client was closed, the subscription dropped, or the connection lost for good."""
        if self._ended is None:
            self._ended = error
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    @property
    def pending(self) -> int:
        """Messages queued and not yet taken."""
        return len(self._queue)

    @property
    def active(self) -> bool:
        """Whether the subscription still receives: not unsubscribed, left, or ended with its client."""
        return self._ended is None

    def _taken(self, message: Message) -> Message:
        self._bytes -= len(message.payload)
        if self._overflowing and len(self._queue) <= self._max // 2:
            self._overflowing = False
        return message

    async def _next(self) -> Message:
        while not self._queue:
            if self._ended is not None:
                if isinstance(self._ended, (Closed, StopAsyncIteration)):
                    raise StopAsyncIteration
                raise self._ended
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._taken(self._queue.popleft())

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        # An async generator, so that Python tells it when the loop is left: a `break` drops the generator,
        # and asyncio closes it, which runs the `finally`.
        queue = self._queue
        try:
            while True:
                if queue:
                    # _taken, inlined: this is the receive path's loop.
                    message = queue.popleft()
                    self._bytes -= len(message.payload)
                    if self._overflowing and len(queue) <= self._max // 2:
                        self._overflowing = False
                    yield message
                    continue
                try:
                    message = await self._next()
                except StopAsyncIteration:
                    return
                yield message
        finally:
            self._left()

    def _left(self) -> None:
        """A loop over the subscription was left: it ends, and what it still queued is let go, since nobody
        will take it (a loop left while messages were on their way would otherwise keep them)."""
        self._client._leave(self)
        self._queue.clear()
        self._bytes = 0

    async def next(self, timeout: Optional[float] = None) -> Message:
        """The next message, waiting at most `timeout` seconds (then TimeoutError). StopAsyncIteration once
        the subscription has ended and its queue is empty."""
        try:
            return await asyncio.wait_for(self._next(), timeout)
        except asyncio.TimeoutError:
            # Before Python 3.11 asyncio's TimeoutError is not the built-in one.
            raise TimeoutError(f"no message in {timeout} s") from None

    async def unsubscribe(self) -> None:
        """Drops this subscription's patterns (those no other subscription holds) and ends its iteration once
        the queued messages are taken."""
        await self._client._unsubscribe(self)

    async def __aenter__(self) -> "Subscription":
        return self

    async def __aexit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        if self._ended is None:
            try:
                await self.unsubscribe()
            except (Closed, ConnectionError):
                pass


class Subscribing:
    """What `Client.subscribe` returns: await it for the Subscription, or use it as `async with`, which
    unsubscribes when the block ends."""

    def __init__(self, making: Coroutine[Any, Any, Subscription]) -> None:
        self._making = making
        self._subscription: Optional[Subscription] = None

    def __await__(self) -> Generator[Any, None, Subscription]:
        return self._making.__await__()

    async def __aenter__(self) -> Subscription:
        self._subscription = await self._making
        return self._subscription

    async def __aexit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        if self._subscription is not None:
            await self._subscription.__aexit__(kind, error, traceback)
