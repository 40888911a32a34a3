"""A subscription: the patterns it holds, and the queue between the connection and `async for`."""
from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Deque, Optional, Tuple

from .errors import Closed
from .messages import Message

if TYPE_CHECKING:
    from .client import Client


class Subscription:
    """Iterate with `async for msg in sub`. The queue holds at most `max_pending` messages plus what one read
    from the socket brings: once it is full the client stops reading the socket until the consumer has taken
    half, so a slow consumer slows the server's sending to this connection (the server's own limits then
    apply) instead of growing memory here. Replies queued behind those messages wait too: do not await a
    command on the same client from inside a full subscription's loop; use a second client for that.
    Leaving the loop does not unsubscribe (Python gives an iterator no word of it): call `unsubscribe()`, or a
    subscription nobody reads fills up and stops the client reading."""

    def __init__(self, client: "Client", patterns: Tuple[str, ...], group: Optional[str], max_pending: int) -> None:
        self.patterns = patterns
        self.group = group
        self._client = client
        self._queue: Deque[Message] = deque()
        self._max = max_pending
        self._waiter: Optional[asyncio.Future] = None
        self._ended: Optional[BaseException] = None
        self.full = False

    def _push(self, message: Message) -> None:
        self._queue.append(message)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        if not self.full and len(self._queue) >= self._max:
            self.full = True
            self._client._subscription_full(self)

    def _end(self, error: BaseException) -> None:
        """No more messages: the client was closed, the subscription dropped, or the connection lost for good."""
        if self._ended is None:
            self._ended = error
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Message:
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
        message = self._queue.popleft()
        if self.full and len(self._queue) <= self._max // 2:
            self.full = False
            self._client._subscription_drained(self)
        return message

    async def next(self, timeout: Optional[float] = None) -> Message:
        """The next message, waiting at most `timeout` seconds (asyncio.TimeoutError after)."""
        return await asyncio.wait_for(self.__anext__(), timeout)

    async def unsubscribe(self) -> None:
        """Drops this subscription's patterns (those no other subscription holds) and ends its iteration once
        the queued messages are taken."""
        await self._client._unsubscribe(self)
