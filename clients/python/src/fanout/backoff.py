"""Exponential backoff with jitter for reconnecting, as the `fanout` CLI does it."""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Attempt n waits about `initial * 2**(n-1)` seconds, capped at `maximum`, scaled by a random factor in
    `1 - jitter ... 1 + jitter` so that many clients cut off together do not come back together."""

    initial: float = 0.1
    maximum: float = 5.0
    jitter: float = 0.5

    def delay(self, attempt: int, draw: float = -1.0) -> float:
        if draw < 0:
            draw = random.random()
        base = min(self.initial * (2.0 ** min(max(attempt - 1, 0), 30)), self.maximum)
        return base * (1 - self.jitter + 2 * self.jitter * draw)
