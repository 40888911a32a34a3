"""Application tokens (JWT) as a client holds them: where a fresh one comes from, and when to ask for it.

The client never verifies a token (the server does); it reads the payload's `exp` and `iat` only to refresh
ahead of expiry, so that `AUTH <fresh>` reaches the server before it pushes `-ERR auth-expired`."""
from __future__ import annotations

import asyncio
import base64
import inspect
import json
import time
from typing import Any, Awaitable, Callable, Optional, Union

from .errors import FanoutError, ServerError
from .messages import EventKind
from .protocol import check_word

# A token function returns the token, or an awaitable of it (a coroutine function that asks the
# application's backend).
TokenFunction = Callable[[], Union[str, Awaitable[str]]]
TokenSource = Union[str, TokenFunction]

# The refresh goes this share of the token's lifetime before its expiry ...
REFRESH_SHARE = 0.1
# ... but at least this many seconds before it (a round trip to the backend and to the server) ...
REFRESH_AT_LEAST = 5.0
# ... and at most this many (a day-long token is refreshed a minute before it ends, not 2.4 hours) ...
REFRESH_AT_MOST = 60.0
# ... and never before half of its lifetime, so that a short token is still used for a while.
# Retries of a failed refresh wait 1, 2, 4 ... seconds, up to this.
RETRY_AT_MOST = 30.0
# A payload larger than this is not decoded (the server refuses tokens over 32 KiB anyway).
MAX_TOKEN = 32 * 1024


class TokenError(FanoutError):
    """The token function raised, or returned something that is not one word; `__cause__` holds what it
    raised. Raised by `connect`, and reported as a "token-failed" event on a refresh or a reconnect."""


async def fetch(source: TokenFunction) -> str:
    """Calls the token function (awaiting what it returns when that is awaitable) and checks the result."""
    try:
        token = source()
        if inspect.isawaitable(token):
            token = await token
    except Exception as error:
        raise TokenError(f"the token function failed: {error!r}") from error
    try:
        return check_word("token", token)
    except ValueError:
        raise TokenError(f"the token function returned {type(token).__name__}, not a token "
                         "(one word of printable ASCII)") from None


def claims(token: str) -> Optional[dict]:  # type: ignore[type-arg]
    """The JWT payload as a dict, unverified; None for a token that is not a JWT (a static token)."""
    parts = token.split(".")
    if len(parts) != 3 or len(token) > MAX_TOKEN:
        return None
    body = parts[1]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if isinstance(decoded, dict) else None


def refresh_in(token: str, now: float) -> Optional[float]:
    """Seconds from `now` (Unix time) until the token should be refreshed, or None when it does not expire
    (no `exp`, or not a JWT). 0 when it is already due."""
    payload = claims(token)
    if payload is None:
        return None
    expiry = payload.get("exp")
    if not isinstance(expiry, (int, float)) or isinstance(expiry, bool):
        return None
    issued = payload.get("iat")
    start = issued if isinstance(issued, (int, float)) and not isinstance(issued, bool) and issued < expiry else now
    lifetime = max(expiry - start, 0.0)
    margin = min(max(lifetime * REFRESH_SHARE, REFRESH_AT_LEAST), REFRESH_AT_MOST, lifetime / 2)
    return max(expiry - margin - now, 0.0)


def retry_delay(attempt: int) -> float:
    """Seconds before retry `attempt` (1, 2, ...) of a failed refresh."""
    return float(min(2 ** min(attempt - 1, 16), RETRY_AT_MOST))


class Refresher:
    """The tokens of a token function for one client: the current one, the timer of the next refresh (ahead
    of its `exp`), and the refresh under way. A refresh sends `AUTH <fresh>` through `send_auth` on the live
    connection; a failure (the function raised, or the server refused the token) is reported as a
    "token-failed" event and retried after 1, 2, 4 ... s while `live()`; a reconnect calls `fetch` itself.

    Bound: one timer and one refresh task per client, whatever the server pushes.
    """

    def __init__(self, function: TokenFunction, send_auth: Callable[[str], Awaitable[Any]],
                 report: Callable[[EventKind, str], None], live: Callable[[], bool]) -> None:
        self.function = function
        self.token: Optional[str] = None
        self._send_auth = send_auth
        self._report = report
        self._live = live
        self._timer: Optional[asyncio.TimerHandle] = None
        self._task: Optional[asyncio.Future[None]] = None

    async def fetch(self) -> str:
        """A fresh token for a new connection (TokenError when there is none)."""
        self.token = await fetch(self.function)
        return self.token

    def schedule(self) -> None:
        """Sets the timer of the next refresh from the current token's `exp`, if it has one."""
        self.pause()
        delay = refresh_in(self.token, time.time()) if self.token is not None else None
        if delay is not None:
            # At least a second: a token already near its exp must not turn into a loop of refreshes.
            self._timer = asyncio.get_running_loop().call_later(max(delay, 1.0), self.refresh_now)

    def refresh_now(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._refresh())

    def pause(self) -> None:
        """No refresh by the timer (the connection went; the next one schedules again)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def stop(self) -> None:
        self.pause()
        if self._task is not None:
            self._task.cancel()

    async def _refresh(self) -> None:
        attempt = 0
        while self._live():
            try:
                token = await fetch(self.function)
                await self._send_auth(token)
            except (TokenError, ServerError) as error:
                attempt += 1
                delay = retry_delay(attempt)
                self._report("token-failed", f"token refresh failed: {error}; retrying in {delay:.0f}s")
                await asyncio.sleep(delay)
                continue
            except FanoutError:
                return  # the connection went: the reconnect fetches a token of its own
            same, self.token = token == self.token, token
            self._report("token-refreshed", "sent AUTH with a fresh token")
            if not same:
                # The same token again (a function that caches it) would be due again at once: the server's
                # auth-expired push asks for the next one instead.
                self.schedule()
            return
