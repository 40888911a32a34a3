"""Runs of publishes whose replies share one entry of the client's pending replies, so that a burst of
publishes costs no future each and its replies are taken in one loop."""
from __future__ import annotations

import asyncio
from typing import List, Optional, Union, cast

from .errors import ServerError


class PublishRun:
    """The replies still due to publishes written back to back: the `publish_nowait` calls between two flushes
    (`results` None: the client sums their receivers and keeps their failures for `flush`), or one
    `publish_many` call (`results`: each publish's receivers, or its error, in order; `future` gets the list).

    Bound: `results` holds one entry per publish of its `publish_many` call.
    """

    __slots__ = ("due", "results", "future", "failed")

    def __init__(self, due: int, future: "Optional[asyncio.Future[List[int]]]" = None) -> None:
        self.due = due
        self.future = future
        self.results: Optional[List[Union[int, ServerError]]] = [] if future is not None else None
        self.failed = 0

    def finish(self) -> None:
        """All replies are in: the publish_many future gets the receivers, or the first failure."""
        future = self.future
        if future is None or future.done():
            return
        assert self.results is not None
        if not self.failed:
            future.set_result(cast(List[int], self.results))  # no failure: every entry is an int
            return
        first = next(r for r in self.results if isinstance(r, ServerError))
        more = f" (and {self.failed - 1} more of {len(self.results)} publishes failed)" if self.failed > 1 else ""
        error = type(first)(first.text + more, first.code)
        error.results = self.results  # type: ignore[attr-defined]
        future.set_exception(error)
