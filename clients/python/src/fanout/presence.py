"""Presence (1.3): the members of a subject as `WHO` lists them, and the joins and leaves the server publishes
on `$presence.<subject>`, read into typed values; the commands WHO and KICK as lines."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from types import TracebackType
from typing import Any, AsyncIterator, Coroutine, Dict, Generator, List, Literal, Optional, Type, Union

from .errors import BadSubject, Closed
from .messages import Message
from .protocol import MAX_SUBJECT, check_count, check_subject, check_word
from .subscription import Subscription

log = logging.getLogger("fanout")

# The prefix of the subjects that carry joins and leaves; a client can subscribe to them, never publish.
PRESENCE_PREFIX = "$presence."
# The longest subject that keeps presence: its `$presence.` subject must still be a subject.
LONGEST_SUBJECT = MAX_SUBJECT - len(PRESENCE_PREFIX)
# The longest KICK reason the server takes, in bytes of UTF-8: the kicked client is sent it.
KICK_REASON_MAX = 256

PresenceKind = Literal["join", "leave"]


@dataclass(frozen=True)
class Member:
    """One member of a subject: `id=<client>,user=<user|->,since_s=<n>[,group=<g>]`. `client` is the
    connection's id as CLIENTS shows it (`<node>/<id>` on several nodes), what `kick` takes; `user` is None
    for `-` (no authenticated user; a user's space, comma, `=` or control byte arrives as `_`); `since_s`
    the whole seconds it has been a member (0 in a join; in a leave, how long it was one); `group` the queue
    group it is a member with (QSUB), or None."""

    client: str
    user: Optional[str]
    since_s: int
    group: Optional[str] = None


@dataclass(frozen=True)
class Who:
    """What `WHO` answered: `count` members in all, `members` the first of them in join order (oldest first),
    at most the limit asked for."""

    count: int
    members: List[Member]


@dataclass(frozen=True)
class PresenceEvent:
    """A join or leave published on `$presence.<subject>`. `subject` is the member's subject (without the
    prefix), `seq` the seq of the message that carried it (so gaps and RESUME work as for any subject);
    `reason` is None for a join, and for a leave one of `unsub`, `closed`, `timeout`, `slow-consumer`,
    `kicked`, `shutdown`, `node-lost`, or a later server's word, kept as its text."""

    kind: PresenceKind
    member: Member
    reason: Optional[str]
    subject: str
    seq: int


def _fields(word: str) -> Optional[Dict[str, str]]:
    """`key=value` fields separated by commas; None when a field has no `=`."""
    out: Dict[str, str] = {}
    for field in word.split(","):
        key, equals, value = field.partition("=")
        if not equals:
            return None
        out[key] = value
    return out


def _member(fields: Dict[str, str]) -> Member:
    client, user, since = fields.get("id", ""), fields.get("user", ""), fields.get("since_s", "")
    if not client or not user or not since.isdigit() or not since.isascii():
        raise ValueError("a member needs id=, user= and since_s=<digits>")
    return Member(client, None if user == "-" else user, int(since), fields.get("group") or None)


def parse_member(word: str) -> Member:
    """Reads one member word of WHO's reply or of a join or leave; fields this version does not know are
    ignored, so that a later server may add some. ValueError when id, user or since_s is missing."""
    fields = _fields(word)
    if fields is None:
        raise ValueError(f"not a member: {word[:80]!r}")
    return _member(fields)


def parse_who(text: str) -> Who:
    """WHO's reply after `+OK `: `<count> <member> ...`."""
    words = text.split()
    if not words or not words[0].isdigit():
        raise ValueError("WHO's reply starts with the count")
    return Who(int(words[0]), [parse_member(word) for word in words[1:]])


def parse_event(subject: str, seq: int, payload: bytes) -> PresenceEvent:
    """Reads a message of `$presence.<subject>`: `join <member>` or `leave <member>,reason=<r>`. ValueError
    when it is neither."""
    text = payload.decode("utf-8", "replace")
    kind, space, word = text.partition(" ")
    if not space or kind not in ("join", "leave"):
        raise ValueError(f"not a join or leave: {text[:80]!r}")
    fields = _fields(word)
    if fields is None:
        raise ValueError(f"not a join or leave: {text[:80]!r}")
    reason = fields.get("reason") or None if kind == "leave" else None
    if kind == "leave" and reason is None:
        raise ValueError(f"a leave without its reason: {text[:80]!r}")
    member_subject = subject[len(PRESENCE_PREFIX):] if subject.startswith(PRESENCE_PREFIX) else subject
    return PresenceEvent("join" if kind == "join" else "leave", _member(fields), reason, member_subject, seq)


def presence_subject(subject: str) -> str:
    """`$presence.<subject>` for a subject or pattern (`chat.>` watches every room); BadSubject for what
    cannot be one, before anything is sent."""
    check_subject(subject, wildcards=True)
    if subject.startswith(PRESENCE_PREFIX):
        raise BadSubject(f"{subject!r}: name the subject itself, not its $presence. subject")
    if len(subject) > LONGEST_SUBJECT:
        raise BadSubject(f"{subject!r}: a subject that keeps presence is at most {LONGEST_SUBJECT} bytes")
    return PRESENCE_PREFIX + subject


def who_line(subject: str, limit: Optional[int]) -> str:
    check_subject(subject)
    if limit is None:
        return f"WHO {subject}"
    return f"WHO {subject} {check_count('limit', limit)}"


def kick_line(target: Union[str, int], reason: Optional[str]) -> str:
    """`KICK <client> [<reason>]`: the client as CLIENTS or WHO shows it (`7`, `node1/7`), or `user=<user>`
    for all of a user's connections; the reason printable, at most KICK_REASON_MAX bytes."""
    word = check_word("client", str(target) if isinstance(target, int) else target)
    if reason is None or not reason.strip():
        return f"KICK {word}"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in reason) or len(reason.encode()) > KICK_REASON_MAX:
        raise ValueError(f"bad KICK reason {reason!r}: at most {KICK_REASON_MAX} bytes, without control characters")
    return f"KICK {word} {reason.strip()}"


class PresenceSubscription:
    """The joins and leaves of a subject (or of every subject a pattern matches), as PresenceEvents: iterate
    with `async for event in presence`, or take one with `await presence.next(timeout)`. It is a plain
    subscription of `$presence.<subject>` underneath (`subscription`): a concrete subject resumes after a
    reconnect from the last seq seen, with what was missed reported as a "resumed" event (or "reset"), after
    which a member list should be read again with `who`. A message that is not a join or leave is skipped,
    counted in `malformed` and logged. Leaving the loop ends it, as for a Subscription."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.malformed = 0

    @property
    def dropped(self) -> int:
        return self.subscription.dropped

    @property
    def pending(self) -> int:
        return self.subscription.pending

    @property
    def active(self) -> bool:
        return self.subscription.active

    def _event(self, message: Message) -> Optional[PresenceEvent]:
        try:
            return parse_event(message.subject, message.seq, message.payload)
        except ValueError as error:
            self.malformed += 1
            log.warning("fanout: skipped %s seq %d: %s", message.subject, message.seq, error)
            return None

    async def _next(self) -> PresenceEvent:
        while True:
            event = self._event(await self.subscription._next())
            if event is not None:
                return event

    def __aiter__(self) -> AsyncIterator[PresenceEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[PresenceEvent]:
        try:
            while True:
                try:
                    event = await self._next()
                except StopAsyncIteration:
                    return
                yield event
        finally:
            self.subscription._left()

    async def next(self, timeout: Optional[float] = None) -> PresenceEvent:
        """The next join or leave, waiting at most `timeout` seconds in all (then TimeoutError)."""
        try:
            return await asyncio.wait_for(self._next(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no join or leave in {timeout} s") from None

    async def unsubscribe(self) -> None:
        await self.subscription.unsubscribe()

    async def __aenter__(self) -> "PresenceSubscription":
        return self

    async def __aexit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        await self.subscription.__aexit__(kind, error, traceback)


class PresenceSubscribing:
    """What `Client.presence` returns: await it for the PresenceSubscription, or use it as `async with`,
    which unsubscribes when the block ends."""

    def __init__(self, making: Coroutine[Any, Any, Subscription]) -> None:
        self._making = making
        self._presence: Optional[PresenceSubscription] = None

    async def _make(self) -> PresenceSubscription:
        return PresenceSubscription(await self._making)

    def __await__(self) -> Generator[Any, None, PresenceSubscription]:
        return self._make().__await__()

    async def __aenter__(self) -> PresenceSubscription:
        self._presence = await self._make()
        return self._presence

    async def __aexit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        if self._presence is not None:
            try:
                await self._presence.__aexit__(kind, error, traceback)
            except Closed:
                pass
