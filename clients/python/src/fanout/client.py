"""The asyncio client: one connection at a time to a Fanout server, reconnected with backoff, whose
subscriptions resume after a reconnect with no duplicate and with exact counts of what was missed."""
from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from typing import Any, Awaitable, Callable, Deque, Dict, Iterable, List, Optional, Set, Tuple, Union

from .address import Address
from .backoff import Backoff
from .errors import (CLOSING_CODES, CannotConnect, Closed, ConnectionLost, FanoutError, Kicked, ProtocolViolation,
                     ServerError, server_error)
from .messages import AskResult, Event, Info, Message, new_message
from .presence import PresenceSubscribing, Who, kick_line, parse_who, presence_subject, who_line
from .protocol import (DEFAULT_MAX_LINE, PUSH_HEADER_ROOM, Frame, Greeting, Payload, Reset, ResumeReply, as_bytes,
                       check_count, check_group, check_line, check_subject, check_word, fields, is_wildcard, matches,
                       publish_command)
from .publishing import PublishRun
from .questions import Handler, Questions, Responder
from .resume import DUPLICATE, GAP, RESTARTED, ResumeReport, ResumeState
from .subscription import Subscribing, Subscription
from .tokens import Refresher, TokenError, TokenSource
from .wire import Wire

log = logging.getLogger("fanout")

# What a reply is turned into: the text after "+OK " as is, its first word as an int (PUB, SUB, ...), or
# whatever a function makes of the text.
_TEXT = str
_INT = int
# The reader of a PublishRun: one entry in `_pending` for a whole run of publishes, the run in the place of
# the future.
_RUN = object()

ROUTES_KEPT = 4096
# Seconds without a greeting after which the client sends PING to see whether a server of another protocol
# is listening.
PROBE_AFTER = 0.25
# Concrete subjects already checked for publishing, so that a publish to a known subject costs one set lookup;
# cleared when it holds this many.
CHECKED_KEPT = 4096


class Client:
    """Use `fanout.connect(...)` to make one. Every method returns something to await but `respond`."""

    def __init__(self, address: Address, token: Optional[TokenSource], tls: Union[None, bool, ssl.SSLContext],
                 reconnect: Union[bool, Backoff], timeout: float, max_line: int, max_payload: int,
                 max_pending: int, on_event: Optional[Callable[[Event], Any]], max_pending_bytes: int = 64 << 20,
                 keepalive: float = 20.0) -> None:
        self.address = address
        self._static_token = token if isinstance(token, str) else None
        # With a token function: its tokens, and their refresh on the live connection.
        self._tokens = None if token is None or isinstance(token, str) else Refresher(
            token, lambda fresh: self._command(f"AUTH {fresh}", internal=True),
            lambda kind, detail: self._emit(Event(kind, detail)),
            lambda: not self._closed and self._wire is not None)
        self.timeout = timeout
        # The server's max_line as this client assumes it: longer publishes go as BPUB.
        self.max_line = max_line
        self.max_payload = max_payload
        self.max_pending = max_pending
        self.max_pending_bytes = max_pending_bytes
        self.keepalive = keepalive
        self.on_event = on_event
        self.greeting: Optional[Greeting] = None
        if tls is True:
            tls = ssl.create_default_context()
        self._tls: Optional[ssl.SSLContext] = tls or None
        self._backoff: Optional[Backoff] = Backoff() if reconnect is True else (reconnect or None)
        self._wire: Optional[Wire] = None
        self._greeted: Optional[asyncio.Future[Greeting]] = None
        # One entry per command sent and not yet answered, in sending order: (future or None, how to read it);
        # for a run of publishes (reader _RUN) the PublishRun in the place of the future, hence Any.
        # Bound: the commands the application has in flight; a publisher that awaits its publishes in batches
        # holds one batch.
        self._pending: Deque[Tuple[Any, Any]] = deque()
        self._ready = asyncio.Event()
        self._closed = False
        self._reconnecting: Optional[asyncio.Future[None]] = None
        self._resume = ResumeState()
        self._subscriptions: List[Subscription] = []
        # Which subscriptions each subject reaches; cleared whenever a subscription comes or goes, and when it
        # holds ROUTES_KEPT subjects (a wildcard can reach any number).
        # Each entry: the subscriptions, and whether any of them is plain (not in a group).
        self._routes: Dict[str, Tuple[List[Subscription], bool]] = {}
        # LAST replays being gathered: subject -> (messages still due, messages, future).
        self._collectors: Dict[str, Tuple[List[int], List[Message], asyncio.Future[List[Message]]]] = {}
        self._questions = Questions(self)
        # What the replies to publish_nowait calls said since the last flush: receivers summed, failures (the
        # first kept, the rest counted), and publishes whose connection was lost before their reply.
        self._unawaited_receivers = 0
        self._unawaited_error: Optional[ServerError] = None
        self._unawaited_failed = 0
        self._unawaited_lost = 0
        self._tasks: Set[asyncio.Future[Any]] = set()
        self._checked: Set[str] = set()
        self._keeping_alive: Optional[asyncio.TimerHandle] = None
        # Set when the server closes the connection for idleness, which the reconnect then does not warn of.
        self._quiet_close = False
        # Set by the push `-ERR kicked <reason>`: the connection's end is final, no reconnect follows, and
        # every later command raises it.
        self._kicked: Optional[Kicked] = None
        self._loop = asyncio.get_running_loop()

    # Connecting

    async def _open(self) -> None:
        """Connects, reads the greeting and authenticates; the new connection becomes the client's."""
        loop = asyncio.get_running_loop()
        greeted: asyncio.Future[Greeting] = loop.create_future()
        # Its outcome is always taken here, also when nobody awaits it any more (a timeout), so that asyncio
        # never reports an exception that was not retrieved.
        greeted.add_done_callback(lambda done: done.cancelled() or done.exception())
        if self._tokens is not None:
            # Before connecting, so that the server's auth timeout does not run while the backend answers.
            await self._tokens.fetch()
        self._greeted = greeted

        def factory() -> Wire:
            # The wire is the client's from the start: the greeting may arrive before create_connection returns.
            self._wire = Wire(self._on_frames, self._on_lost, max(self.max_line, DEFAULT_MAX_LINE) + PUSH_HEADER_ROOM,
                              self.max_payload)
            return self._wire

        try:
            if self.address.path is not None:
                _, wire = await asyncio.wait_for(loop.create_unix_connection(factory, self.address.path),
                                                 self.timeout)
            else:
                _, wire = await asyncio.wait_for(loop.create_connection(
                    factory, self.address.host, self.address.port, ssl=self._tls,
                    server_hostname=self.address.host if self._tls else None), self.timeout)
        except (OSError, asyncio.TimeoutError) as error:
            self._wire = None
            raise CannotConnect(f"cannot connect to {self.address}: {error or 'timed out'}") from None
        try:
            greeting = await self._greeting(wire, greeted)
        except asyncio.TimeoutError:
            wire.abort("no greeting")
            raise CannotConnect(f"cannot connect to {self.address}: no greeting (is it a Fanout server?)") from None
        except FanoutError as error:
            wire.abort(str(error))
            raise CannotConnect(f"cannot connect to {self.address}: {error}") from None
        self.greeting = greeting
        self._resume.connected(greeting.epoch)
        if self.token is not None:
            await self._command(f"AUTH {self.token}", internal=True)
            if self._tokens is not None:
                self._tokens.schedule()

    async def _greeting(self, wire: Wire, greeted: "asyncio.Future[Greeting]") -> Greeting:
        """A Fanout server greets at once. When nothing came after a moment the client sends PING: a server of
        another protocol that answers a line (Redis, an HTTP server) then shows itself at once, and is refused as
        not a Fanout server instead of after the whole timeout. A Fanout server that was merely slow greets,
        then answers the PING, whose reply the first entry of the pending commands takes."""
        probe = min(PROBE_AFTER, self.timeout)
        done, _ = await asyncio.wait([greeted], timeout=probe)
        if not done:
            if self._wire is wire:
                self._pending.append((None, _TEXT))
                # The empty line after it (ignored by a Fanout server) ends an HTTP request, so that an HTTP
                # server answers too.
                wire.write(b"PING\r\n\r\n")
            return await asyncio.wait_for(asyncio.shield(greeted), self.timeout - probe)
        return greeted.result()

    def _on_lost(self, wire: Wire, reason: str) -> None:
        if wire is not self._wire:
            return
        self._wire = None
        self._ready.clear()
        if self._tokens is not None:
            self._tokens.pause()  # the reconnect fetches a fresh token and schedules its refresh
        if self._greeted is not None and not self._greeted.done():
            self._greeted.set_exception(ConnectionLost(f"connection lost: {reason}"))
        error: FanoutError = Closed("client closed") if self._closed else self._kicked or ConnectionLost(
            f"connection to {self.address} lost before the reply ({reason}); the command is not sent again, "
            "and may or may not have taken effect")
        pending, self._pending = self._pending, deque()
        for future, reader in pending:
            if reader is _RUN:
                if future.future is None:
                    self._unawaited_lost += future.due
                elif not future.future.done():
                    future.future.set_exception(error)
            elif future is not None and not future.done():
                future.set_exception(error)
        for _, _, future in self._collectors.values():
            if not future.done():
                future.set_exception(error)
        self._collectors.clear()
        self._questions.lost(error)
        if self._closed or self.greeting is None:
            return
        if self._reconnecting is not None and not self._reconnecting.done():
            return  # a reconnect attempt failed half way; its loop tries again
        self._emit(Event("disconnected", reason), quiet=self._quiet_close)
        self._quiet_close = False
        if self._backoff is None or self._kicked is not None:
            if self._keeping_alive is not None:
                self._keeping_alive.cancel()
            for subscription in self._subscriptions:
                subscription._end(self._kicked or ConnectionLost(f"connection to {self.address} lost: {reason}"))
        else:
            self._reconnecting = asyncio.ensure_future(self._reconnect())

    async def _reconnect(self) -> None:
        assert self._backoff is not None
        attempt = 0
        while not self._closed:
            attempt += 1
            delay = self._backoff.delay(attempt)
            self._emit(Event("reconnecting", f"attempt {attempt} in {delay:.2f}s"))
            await asyncio.sleep(delay)
            try:
                await self._open()
                await self._restore()
            except (FanoutError, OSError) as error:
                if self._wire is not None:
                    self._wire.abort(f"reconnect failed: {error}")
                    self._wire = None
                if isinstance(error, TokenError):
                    self._emit(Event("token-failed", f"{error}; reconnect attempt {attempt}"))
                log.info("fanout: reconnect attempt %d failed: %s", attempt, error)
                continue
            self._emit(Event("connected", f"reconnected to {self.address}"))
            return

    async def _restore(self) -> None:
        """Resubscribes after a reconnect: each concrete subject with RESUME from its last delivered seq (so
        nothing is duplicated and what is gone is counted), then the wildcards, the groups and the responders."""
        plain = self._plain_patterns()
        resumes, patterns = self._resume.restore_plan(plain)
        replies = []
        for line in resumes:
            subject = line.split()[1]
            position = self._resume.position(subject) if len(line.split()) == 4 else None
            replies.append(self._send(line, self._resume_reader(subject, position, report=True), internal=True))
        if patterns:
            replies.append(self._send("SUB " + " ".join(patterns), _INT, internal=True))
        for group, group_patterns in self._group_patterns().items():
            replies.append(self._send(f"QSUB {group} " + " ".join(group_patterns), _INT, internal=True))
        for responder in self._questions.responders:
            replies.append(self._send(responder.line, _INT, internal=True))
        self._ready.set()
        for reply in replies:
            try:
                await reply
            except ServerError as error:
                self._emit(Event("resubscribe-failed", str(error)))

    # Sending

    def _send(self, line: Union[str, bytes], reader: Any, internal: bool = False) -> asyncio.Future[Any]:
        """Writes one command now and returns the future of its reply. Raises when there is no connection."""
        wire = self._wire
        if self._closed:
            raise Closed("client closed")
        if self._kicked is not None:
            raise self._kicked
        if wire is None or (not internal and not self._ready.is_set()):
            raise ConnectionLost(f"not connected to {self.address}")
        future = asyncio.get_running_loop().create_future()
        data = line if isinstance(line, bytes) else line.encode() + b"\n"
        wire.write(data)
        self._pending.append((future, reader))
        return future

    async def _connected(self) -> None:
        """Waits, up to the timeout, for a connection that is restored and ready for commands."""
        if self._closed:
            raise Closed("client closed")
        if self._kicked is not None:
            raise self._kicked
        if not self._ready.is_set():
            if self._wire is None and (self._reconnecting is None or self._reconnecting.done()):
                raise ConnectionLost(f"not connected to {self.address}")
            try:
                await asyncio.wait_for(self._ready.wait(), self.timeout)
            except asyncio.TimeoutError:
                raise ConnectionLost(f"not connected to {self.address}") from None

    async def _command(self, line: Union[str, bytes], reader: Any = _TEXT, internal: bool = False) -> Any:
        if not internal:
            await self._connected()
        future = self._send(line, reader, internal)
        await self._writable()
        return await future

    async def _writable(self) -> None:
        wire = self._wire
        if wire is not None and not wire.writable.is_set():
            await wire.writable.wait()

    # Reading

    def _on_frames(self, wire: Wire, frames: List[Frame]) -> None:
        pending = self._pending
        index, count = 0, len(frames)
        while index < count:
            if wire is not self._wire:
                return
            if pending and pending[0][1] is _RUN:
                # Replies to a run of publishes, taken in one loop while they are plain `+OK <receivers>`;
                # anything else (a push, an error, another reply form) goes the usual way.
                run: PublishRun = pending[0][0]
                end = min(count, index + run.due)
                values: List[int] = []
                try:
                    # (A BMSG frame is a tuple: never equal to b"+OK ", never given to int.)
                    while index < end and frames[index][:4] == b"+OK ":
                        values.append(int(frames[index][4:]))  # type: ignore[arg-type]
                        index += 1
                except ValueError:
                    pass
                if values:
                    if run.results is None:
                        self._unawaited_receivers += sum(values)
                    else:
                        run.results.extend(values)
                    run.due -= len(values)
                    if run.due == 0:
                        pending.popleft()
                        run.finish()
                    continue
            frame = frames[index]
            index += 1
            if pending and pending[0][1] is _INT and frame[:4] == b"+OK ":
                # The reply to a publish (or SUB, UNSUB...), straight to its future.
                try:
                    value = int(frame[4:])  # type: ignore[arg-type]
                except ValueError:
                    pass
                else:
                    future = pending.popleft()[0]
                    if future is not None and not future.done():
                        future.set_result(value)
                    continue
            self._on_frame(wire, frame)

    def _on_frame(self, wire: Wire, frame: Frame) -> None:
        if isinstance(frame, tuple):
            header, payload = frame
            _, subject, seq, _ = header.split(b" ", 3)
            self._deliver(subject.decode(), int(seq), payload)
            return
        line: bytes = frame
        greeted = self._greeted
        if greeted is not None and not greeted.done():
            # The first line must be the greeting (or the -ERR of a server that refuses the connection).
            if line.startswith(b"-ERR "):
                self._error(wire, line[5:].decode("utf-8", "replace"))
                return
            try:
                greeted.set_result(Greeting.parse(line.decode("utf-8", "replace")))
            except ValueError:
                greeted.set_exception(ProtocolViolation(f"not a Fanout server: it said {line[:80]!r}"))
                wire.abort("not a Fanout server")
            return
        if line.startswith(b"MSG "):
            parts = line.split(b" ", 3)
            self._deliver(parts[1].decode(), int(parts[2]), parts[3] if len(parts) > 3 else b"")
        elif line.startswith(b"+"):
            self._reply(line[4:] if line.startswith(b"+OK ") else line[1:], None)
        elif line.startswith(b"-ERR "):
            self._error(wire, line[5:].decode("utf-8", "replace"))
        elif line.startswith(b"ASK "):
            self._questions.question_pushed(line)
        elif line.startswith(b"ANSWER "):
            self._questions.answer_pushed(line)
        elif line.startswith(b"DONE "):
            self._questions.done_pushed(line.decode())
        elif line.startswith(b"RESET "):
            self._reset(Reset.parse(line.decode()))
        else:
            log.debug("fanout: ignored server line %r", line[:80])

    def _reply(self, text: bytes, error: Optional[ServerError]) -> None:
        if not self._pending:
            log.warning("fanout: reply with no command waiting: %r", text[:80])
            return
        future, reader = self._pending[0]
        if reader is _RUN:
            self._run_reply(future, text, error)
            return
        self._pending.popleft()
        if future is None or future.done():
            if error is not None:
                log.warning("fanout: %s", error)
            return
        if error is not None:
            future.set_exception(error)
        elif reader is int:
            future.set_result(int(text.split(b" ", 1)[0]))
        elif reader is str:
            future.set_result(text.decode("utf-8", "replace"))
        else:
            try:
                future.set_result(reader(text.decode("utf-8", "replace")))
            except Exception as failure:  # a malformed reply must not stop the reading of later ones
                future.set_exception(ProtocolViolation(f"bad reply {text[:80]!r}: {failure}"))

    def _run_reply(self, run: PublishRun, text: bytes, error: Optional[ServerError]) -> None:
        """One reply of a run of publishes, taken on its own (an error, or a reply not in the usual form)."""
        run.due -= 1
        if run.due == 0:
            self._pending.popleft()
        if error is None:
            try:
                receivers = int(text.split(b" ", 1)[0])
            except ValueError:
                error = ProtocolViolation(f"bad reply to PUB: {text[:80]!r}")  # type: ignore[assignment]
        if run.results is not None:
            run.results.append(receivers if error is None else error)
            run.failed += error is not None
        elif error is None:
            self._unawaited_receivers += receivers
        elif self._unawaited_error is None:
            self._unawaited_error = error
        else:
            self._unawaited_failed += 1
        if run.due == 0:
            run.finish()

    def _error(self, wire: Wire, text: str) -> None:
        code, _, words = text.partition(" ")
        error = server_error(code, words)
        if self._greeted is not None and not self._greeted.done():
            self._greeted.set_exception(error)
        elif code == "idle-timeout" and self._backoff is not None:
            # The keepalive was longer than the server's idle timeout, which it does not announce: the silence
            # the server just took for idle is at least that timeout, and a PING comes at the latest two
            # keepalive periods after the last command, so a third of it keeps the next connection alive. The
            # reconnect that follows is quiet: this client did nothing wrong.
            silence = self._loop.time() - wire.sent_at
            self.keepalive = max(0.1, min(self.keepalive, silence / 3))
            self._quiet_close = True
            if self._keeping_alive is not None:
                self._keeping_alive.cancel()
                self._keep_alive(look=False)
            log.info("fanout: closed by the server as idle after %.1f s; keepalive now %.2f s", silence,
                     self.keepalive)
        elif code in CLOSING_CODES:
            self._emit(Event("server-closing", str(error)))
        elif code == "auth-expired":
            # A push, never a reply (PROTOCOL.md, AUTH): `token expired; send AUTH ... within <grace>s`, then
            # `closing` if no fresh token came; the reconnect after that fetches one anyway.
            self._emit(Event("auth-expired", str(error)))
            if not words.startswith("closing") and self._tokens is not None:
                self._tokens.refresh_now()
        elif code == "kicked":
            # A push, never a reply (PROTOCOL.md, Presence): the server closes the connection after it, and
            # coming back would undo the administrator's kick.
            self._kicked = Kicked(words)
            self._emit(Event("kicked", words))
        elif code == "denied" and words.startswith("revoked"):
            self._emit(Event("revoked", str(error)))
            self._revoked(words.rpartition(" to ")[2].split(), error)
        else:
            self._reply(b"", error)

    def _deliver(self, subject: str, seq: int, payload: bytes) -> None:
        collector = self._collectors.get(subject) if self._collectors else None
        route = self._routes.get(subject)
        if route is None:
            reached = [s for s in self._subscriptions if any(matches(p, subject) for p in s.patterns)]
            route = (reached, any(s.group is None for s in reached))
            if len(self._routes) >= ROUTES_KEPT:
                self._routes.clear()
            self._routes[subject] = route
        routes, plain = route
        if collector is None and not routes:
            return
        message = new_message(subject, seq, payload)
        if collector is not None:
            due, messages, future = collector
            messages.append(message)
            due[0] -= 1
            if due[0] <= 0:
                del self._collectors[subject]
                if not future.done():
                    future.set_result(messages)
        if plain or collector is not None:
            verdict, expected = self._resume.observe(subject, seq)
            if verdict == DUPLICATE:
                return
            if verdict == GAP:
                self._emit(Event("gap", f"gap on {subject}: expected seq {expected}, got {seq}"))
            elif verdict == RESTARTED:
                self._report(ResumeReport(subject, 0, None))
        for subscription in routes:
            subscription._push(message)

    # Subscriptions

    def subscribe(self, *patterns: str, group: Optional[str] = None) -> Subscribing:
        """Subscribes to subjects and patterns (`news.*`, `alerts.>`), or with `group` as a member of that
        queue group (1.2). Concrete subjects are subscribed with RESUME, from the position `last` left if any.
        `sub = await client.subscribe(...)`, or `async with client.subscribe(...) as sub:`, which unsubscribes
        when the block ends. A bad subject raises BadSubject, a bad group name ValueError, and nothing is sent."""
        return Subscribing(self._subscribe(patterns, group))

    async def _subscribe(self, patterns: Tuple[str, ...], group: Optional[str]) -> Subscription:
        if not patterns:
            raise ValueError("subscribe needs at least one subject")
        for pattern in patterns:
            check_subject(pattern, wildcards=True)
        if group is not None:
            check_group(group)
        self._check_mode(patterns, group)
        await self._connected()
        subscription = Subscription(self, tuple(patterns), group, self.max_pending, self.max_pending_bytes)
        self._subscriptions.append(subscription)
        self._routes.clear()
        replies = []
        try:
            if group is not None:
                replies.append(self._send(f"QSUB {group} " + " ".join(patterns), _INT))
            else:
                concrete = [p for p in patterns if not is_wildcard(p)] if self._resume.can_resume else []
                for subject in concrete:
                    position = self._resume.position(subject)
                    line = f"RESUME {subject}" + (f" {position[0]} {position[1]}" if position else "")
                    replies.append(self._send(line, self._resume_reader(subject, position, report=False)))
                rest = [p for p in patterns if p not in concrete]
                if rest:
                    replies.append(self._send("SUB " + " ".join(rest), _INT))
            await self._writable()
            results = await asyncio.gather(*replies, return_exceptions=True)
        except BaseException:
            self._drop(subscription)
            raise
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            await self._unsubscribe(subscription)
            raise failures[0]
        return subscription

    def _resume_reader(self, subject: str, position: Optional[Tuple[str, int]],
                       report: bool) -> Callable[[str], ResumeReply]:
        def read(text: str) -> ResumeReply:
            reply = ResumeReply.parse(text)
            result = self._resume.answered(subject, position, reply)
            if result is not None and (report or result.missed != 0 or result.recovered):
                self._report(result)
            return reply
        return read

    def _revoked(self, patterns: List[str], error: ServerError) -> None:
        """The server dropped `patterns` from this connection (its token no longer allows them): the
        subscriptions holding any of them end with the error, and their other patterns no other subscription
        holds are unsubscribed."""
        gone = set(patterns)
        words: List[str] = []
        for subscription in [s for s in self._subscriptions if gone.intersection(s.patterns)]:
            subscription._end(error)
            words += [word for word in self._release(subscription) if word not in gone and word not in words]
        self._resume.forget(self._plain_patterns())
        if words and self._ready.is_set():
            self._send_quietly(("UNSUB " + " ".join(words) + "\n").encode())

    def _drop(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
            self._routes.clear()

    def _release(self, subscription: Subscription) -> List[str]:
        """Drops a subscription here and ends its iteration; returns what to UNSUB: its patterns no other
        subscription or responder holds, and the subjects a restore resumed only for them."""
        if subscription not in self._subscriptions:
            subscription._end(StopAsyncIteration())
            return []
        self._drop(subscription)
        subscription._end(StopAsyncIteration())
        remaining = self._plain_patterns() + [p for ps in self._group_patterns().values() for p in ps] + [
            r.subject for r in self._questions.responders]
        dropped = [p for p in subscription.patterns if p not in remaining]
        implicit = self._resume.implicit_subscriptions(dropped, remaining)
        self._resume.forget(self._plain_patterns())
        return dropped + implicit

    async def _unsubscribe(self, subscription: Subscription) -> None:
        words = self._release(subscription)
        if words and self._wire is not None and self._ready.is_set():
            await self._command("UNSUB " + " ".join(words), _INT)

    def _leave(self, subscription: Subscription) -> None:
        """An `async for` over the subscription was left: it ends, and its UNSUB goes without a wait."""
        if self._closed or subscription not in self._subscriptions:
            return
        words = self._release(subscription)
        if words and self._ready.is_set():
            self._send_quietly(("UNSUB " + " ".join(words) + "\n").encode())

    def _overflowed(self, subscription: Subscription) -> None:
        self._emit(Event("overflow", f"{' '.join(subscription.patterns)}: {subscription.pending} messages queued "
                                     f"and not taken; dropping new ones ({subscription.dropped} so far)"))

    def _check_mode(self, patterns: Tuple[str, ...], group: Optional[str]) -> None:
        """Refuses a pattern this client already holds in another mode (plainly, or in another group): the
        connection holds each pattern once, and a second SUB or QSUB of it would silently move the first
        subscription's pattern into the new mode (PROTOCOL.md, Groups)."""
        held: Dict[str, Optional[str]] = {}
        for subscription in self._subscriptions:
            for pattern in subscription.patterns:
                held[pattern] = subscription.group
        for responder in self._questions.responders:
            held[responder.subject] = responder.group
        for pattern in patterns:
            if pattern in held and held[pattern] != group:
                mode = "plainly" if held[pattern] is None else f"in group {held[pattern]}"
                raise ValueError(f"{pattern} is already subscribed {mode} on this client, and a connection holds a "
                                 "pattern in one mode only: use another client")

    def _plain_patterns(self) -> List[str]:
        seen: Dict[str, None] = {}
        for subscription in self._subscriptions:
            if subscription.group is None:
                for pattern in subscription.patterns:
                    seen[pattern] = None
        return list(seen)

    def _group_patterns(self) -> Dict[str, List[str]]:
        groups: Dict[str, Dict[str, None]] = {}
        for subscription in self._subscriptions:
            if subscription.group is not None:
                for pattern in subscription.patterns:
                    groups.setdefault(subscription.group, {})[pattern] = None
        return {group: list(patterns) for group, patterns in groups.items()}

    # Publishing and history

    def _check_publish(self, subject: str) -> str:
        """Refuses a subject PUB would not take (BadSubject, nothing sent); remembers the good ones."""
        check_subject(subject)
        if len(self._checked) >= CHECKED_KEPT:
            self._checked.clear()
        self._checked.add(subject)
        return subject

    def publish(self, subject: str, payload: Payload) -> Awaitable[int]:
        """Publishes; await the result for the receivers count. The command is written at once, so concurrent
        publishes are pipelined and their replies matched in order; awaiting them together (asyncio.gather)
        costs no task each. A payload a line cannot carry (LF, a CR at its end, over max_line) goes as BPUB
        (1.2). While the connection is down or its output is over the high-water mark, the write waits for it.
        A subject that is not concrete and valid raises BadSubject at once, and nothing is sent."""
        if subject not in self._checked:
            self._check_publish(subject)
        wire = self._wire
        if wire is None or not self._ready.is_set() or not wire.writable.is_set():
            return self._publish_later(subject, payload)
        future = self._loop.create_future()
        wire.write(publish_command(subject, payload if type(payload) is bytes else as_bytes(payload), self.max_line))
        self._pending.append((future, _INT))
        return future

    async def _publish_later(self, subject: str, payload: Payload) -> int:
        await self._connected()
        await self._writable()
        wire = self._wire
        if wire is None:
            raise ConnectionLost(f"not connected to {self.address}")
        future = self._loop.create_future()
        wire.write(publish_command(subject, as_bytes(payload), self.max_line))
        self._pending.append((future, _INT))
        receivers: int = await future
        return receivers

    def publish_nowait(self, subject: str, payload: Payload) -> None:
        """Publishes without a future of its own: the command is written at once and its reply is still read
        and checked, in bulk, by the next `flush()`, which sums the receivers and raises what failed. For high
        rates where the receivers count of each message is not needed (the way a NATS publish has no reply).
        Raises ConnectionLost when there is no connection ready; it does not wait for one, nor for the output
        to drain: publish between `flush()` calls no more than you are ready to hold in memory. A bad subject
        raises BadSubject at once, and nothing is sent."""
        if subject not in self._checked:
            self._check_publish(subject)
        wire = self._wire
        if wire is None or not self._ready.is_set():
            if self._closed:
                raise Closed("client closed")
            if self._kicked is not None:
                raise self._kicked
            raise ConnectionLost(f"not connected to {self.address}")
        wire.write(publish_command(subject, payload if type(payload) is bytes else as_bytes(payload), self.max_line))
        pending = self._pending
        if pending and pending[-1][1] is _RUN and pending[-1][0].future is None:
            pending[-1][0].due += 1
        else:
            pending.append((PublishRun(1), _RUN))

    def publish_many(self, items: Iterable[Tuple[str, Payload]]) -> Awaitable[List[int]]:
        """Publishes `(subject, payload)` pairs and resolves to each one's receivers count, in order, once all
        are answered: the confirmation of `publish` at the cost of one future for the lot. Written when called,
        like `publish` (waiting first for a connection, or for the output to drain). If any failed, raises the
        first failure (its text counting the others) after all are answered, with every outcome in its
        `results` (receivers, or the error). If any subject is bad, raises BadSubject at once and sends none."""
        wire = self._wire
        if wire is None or not self._ready.is_set() or not wire.writable.is_set():
            items = list(items)
            checked = self._checked
            for subject, _ in items:
                if subject not in checked:
                    self._check_publish(subject)
            return self._publish_many_later(items)
        return self._write_run(wire, items)

    async def _publish_many_later(self, items: List[Tuple[str, Payload]]) -> List[int]:
        await self._connected()
        await self._writable()
        wire = self._wire
        if wire is None:
            raise ConnectionLost(f"not connected to {self.address}")
        receivers: List[int] = await self._write_run(wire, items)
        return receivers

    def _write_run(self, wire: Wire, items: Iterable[Tuple[str, Payload]]) -> asyncio.Future[List[int]]:
        max_line = self.max_line
        checked = self._checked
        # Each subject is checked as its command is made; all are made before any is written, so a bad one
        # raises with nothing sent.
        commands = [publish_command(subject if subject in checked else self._check_publish(subject),
                                    payload if type(payload) is bytes else as_bytes(payload), max_line)
                    for subject, payload in items]
        future: asyncio.Future[List[int]] = self._loop.create_future()
        if not commands:
            future.set_result([])
            return future
        wire.write(b"".join(commands))
        self._pending.append((PublishRun(len(commands), future), _RUN))
        return future

    async def flush(self) -> int:
        """Waits until the server has answered every command sent before it (and the output has drained), and
        returns the receivers summed over the `publish_nowait` calls answered since the last flush. Raises the
        first of their failures (a ServerError such as Denied or TooLong, its text saying how many failed), or
        ConnectionLost when the connection dropped before some of them were answered: those may or may not
        have been delivered, and are not sent again."""
        failure: Optional[FanoutError] = None
        try:
            # Replies come in command order: once PING's has come, every earlier one has been read.
            await self._command("PING", _TEXT)
        except FanoutError as error:
            failure = error
        receivers, first, failed, lost = (self._unawaited_receivers, self._unawaited_error,
                                          self._unawaited_failed, self._unawaited_lost)
        self._unawaited_receivers, self._unawaited_error, self._unawaited_failed, self._unawaited_lost = (
            0, None, 0, 0)
        if lost:
            raise ConnectionLost(f"connection to {self.address} lost before the replies of {lost} publishes; they "
                                 "are not sent again, and may or may not have been delivered")
        if first is not None:
            raise type(first)(f"{first.text} (and {failed} more publishes failed)", first.code) if failed else first
        if failure is not None:
            raise failure
        return receivers

    async def last(self, subject: str, count: int = 1) -> List[Message]:
        """The newest `count` retained messages of a concrete subject, oldest first (1.1). A later `subscribe`
        of the subject goes on from the newest of them, with nothing repeated."""
        check_subject(subject)
        check_count("count", count)
        # LAST subscribes plainly, which would take the subject out of a group this client holds it in.
        self._check_mode((subject,), None)
        await self._connected()
        loop = asyncio.get_running_loop()
        gathered: asyncio.Future[List[Message]] = loop.create_future()

        def read(text: str) -> ResumeReply:
            reply = ResumeReply.parse(text)
            self._resume.answered(subject, None, reply)
            if reply.replayed == 0:
                gathered.set_result([])
            else:
                self._collectors[subject] = ([reply.replayed], [], gathered)
            return reply

        reply = self._send(f"LAST {subject} {count}", read)
        await reply
        messages = await gathered
        if not any(matches(p, subject) for p in self._plain_patterns()) and not any(
                matches(r.subject, subject) for r in self._questions.responders):
            await self._command(f"UNSUB {subject}", _INT)
        return messages

    # Questions (1.2)

    async def ask(self, subject: str, payload: Payload, timeout: float = 0.5, max_answers: int = 0) -> AskResult:
        """Puts a question to the receivers of `subject` and gathers their answers until every one answered
        or vanished, `max_answers` came, or `timeout` seconds passed (the server closes it). A bad subject
        raises BadSubject, a payload with LF in it ValueError, before anything is sent."""
        check_subject(subject)
        check_count("max_answers", max_answers)
        if not timeout > 0:
            raise ValueError(f"bad timeout {timeout!r}: seconds, more than 0")
        await self._connected()
        return await self._questions.ask(subject, payload, timeout, max_answers)

    def respond(self, subject: str, handler: Handler, group: Optional[str] = None) -> Responder:
        """Answers the questions put to `subject` with `handler(question)`, a function or coroutine function
        returning bytes or str. Returns at once; the subscription is made in the background."""
        check_subject(subject, wildcards=True)
        if group is not None:
            check_group(group)
        return self._questions.respond(subject, handler, group)

    def _send_quietly(self, line: bytes, reader: Any = _INT) -> None:
        """Sends a command whose reply nobody waits for, if there is a connection."""
        if self._wire is not None and not self._closed:
            reply = self._send(line, reader, internal=True)
            reply.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _unsubscribe_patterns(self, patterns: List[str]) -> None:
        if self._wire is not None and self._ready.is_set():
            await self._command("UNSUB " + " ".join(patterns), _INT)

    @property
    def token(self) -> Optional[str]:
        """The token last sent with AUTH (from a token function, the last one it gave)."""
        return self._tokens.token if self._tokens is not None else self._static_token

    def _keep_alive(self, look: bool = True) -> None:
        """Every `keepalive` seconds: a PING if nothing was sent since the last look. The server closes a
        connection it has heard nothing from for `idle_timeout`, or `idle_unsubscribed_timeout` (60 s by
        default) when it holds no subscription, which a client that only publishes now and then is."""
        if self._closed or not self.keepalive > 0:
            return
        wire = self._wire
        if look and wire is not None and self._ready.is_set():
            if not wire.sent and not self._pending:
                self._send_quietly(b"PING\n", _TEXT)
            wire.sent = False
        self._keeping_alive = self._loop.call_later(self.keepalive, self._keep_alive)

    # Presence (1.3)

    async def who(self, subject: str, limit: Optional[int] = None) -> Who:
        """The members of a concrete subject the server keeps presence for, in join order: `count` in all,
        `members` at most `limit` of them (the server's default 100 when None, at most 1000). Raises Syntax
        when the server keeps no presence for the subject, Denied without subscribe rights on it."""
        line = who_line(subject, limit)
        who: Who = await self._command(line, parse_who)
        return who

    async def kick(self, client: Union[str, int], reason: Optional[str] = None) -> int:
        """Closes a connection (`7`, or `node1/7` as WHO and CLIENTS show it) or, with `user=<user>`, all of a
        user's connections; each is told `-ERR kicked <reason>` and its leaves say `reason=kicked`. Returns how
        many were closed (0 when none matched). Needs an administrator's token when the server has auth on
        (else Denied)."""
        closed: int = await self._command(kick_line(client, reason), _INT)
        return closed

    def presence(self, subject: str) -> PresenceSubscribing:
        """The joins and leaves of `subject` (a pattern such as `chat.>` watches every subject it matches) as
        typed PresenceEvents, from now on: `async for event in await client.presence("chat.room1")`, or
        `async with client.presence(...) as events:`. A subscription of `$presence.<subject>` underneath,
        resumed after a reconnect like any other. A bad subject raises BadSubject, and nothing is sent."""
        return PresenceSubscribing(self._subscribe((presence_subject(subject),), None))

    # Server state and the end

    async def info(self) -> Info:
        """The server's INFO as a dict, numbers as ints, with typed attributes (`info.clients`)."""
        text = await self._command("INFO")
        return Info({key: int(value) if value.isdigit() else value for key, value in fields(text.split()).items()})

    async def request(self, line: str) -> str:
        """Sends one command line (CHANNELS, CLIENTS, ...) and returns its reply after `+OK `, or raises the
        server's error. For verbs this client has no method for; not for SUB, PUB and the like, whose state
        the client keeps itself. A line with LF or CR in it raises ValueError and is not sent."""
        check_line("command line", line)
        if not line.strip():
            raise ValueError("an empty command line gets no reply")
        reply: str = await self._command(line)
        return reply

    async def ping(self, text: str = "") -> str:
        check_line("PING text", text)
        """PING, with an optional text: returns `PONG` and the text."""
        pong: str = await self._command(f"PING {text}".rstrip())
        return pong

    async def close(self) -> None:
        """Closes the connection; subscriptions end, and commands still waiting fail with Closed."""
        if self._closed:
            return
        self._closed = True
        if self._keeping_alive is not None:
            self._keeping_alive.cancel()
        if self._tokens is not None:
            self._tokens.stop()
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        for task in list(self._tasks):
            task.cancel()
        wire = self._wire
        if wire is not None:
            wire.abort("closed by the client")
        self._wire = None
        for subscription in self._subscriptions:
            subscription._end(Closed("client closed"))

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # Reports

    def _reset(self, push: Reset) -> None:
        self._report(self._resume.reset(push))

    def _report(self, report: ResumeReport) -> None:
        for line in report.lines():
            (log.warning if line.startswith("missed") else log.info)("fanout: %s", line)
        self._emit(Event("reset" if report.reason == "reset" else "resumed", "; ".join(report.lines()), report))

    def _emit(self, event: Event, quiet: bool = False) -> None:
        if not quiet and event.kind in ("disconnected", "gap", "server-closing", "revoked", "resubscribe-failed",
                                        "overflow", "auth-expired", "token-failed", "kicked"):
            log.warning("fanout: %s: %s", event.kind, event.detail)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:
                log.exception("fanout: on_event raised")

    def _background(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)

        def finished(done: asyncio.Future[Any]) -> None:
            self._tasks.discard(done)
            if not done.cancelled() and done.exception() is not None:
                log.warning("fanout: %s", done.exception())
        task.add_done_callback(finished)


async def connect(address: str = "127.0.0.1:7411", token: Optional[TokenSource] = None,
                  tls: Union[None, bool, ssl.SSLContext] = None, *, reconnect: Union[bool, Backoff] = True,
                  timeout: float = 5.0, max_line: int = DEFAULT_MAX_LINE, max_payload: int = 1 << 20,
                  max_pending: int = 65536, max_pending_bytes: int = 64 << 20, keepalive: float = 20.0,
                  on_event: Optional[Callable[[Event], Any]] = None) -> Client:
    """Connects to a Fanout server: `"host:port"`, `"[::1]:port"` or `"unix:/path"`. `tls`: True for the
    system's CAs, or an `ssl.SSLContext`. `reconnect`: False, True, or a `Backoff`. `max_pending` and
    `max_pending_bytes`: what a subscription queues for a consumer that has not taken it; past either, new
    messages are dropped and counted (`Subscription.dropped`, an "overflow" event). `keepalive`: seconds
    without any command after which the client sends PING, so that the server's idle timeouts never close a
    connection that only publishes now and then (0: never). `on_event(event)` hears of reconnects, resumes,
    gaps and overflows, which are also logged to the `fanout` logger. A token that is not one word raises
    ValueError. Raises CannotConnect when there is no Fanout server at the address.

    `token` is a static token or JWT, or a function returning one (or an awaitable of one, such as a coroutine
    that asks the application's backend): called before connecting, on every reconnect, ahead of the token's
    `exp` (read from the JWT, not verified) and when the server pushes `-ERR auth-expired`; the fresh token
    goes as `AUTH` on the live connection, which keeps its subscriptions. A failed refresh is retried with
    backoff and reported as a "token-failed" event; a failure before the first connection raises TokenError."""
    if isinstance(token, str):
        check_word("token", token)
    elif token is not None and not callable(token):
        raise TypeError(f"token is a str or a function returning one, not {type(token).__name__}")
    client = Client(Address.parse(address), token, tls, reconnect, timeout, max_line, max_payload, max_pending,
                    on_event, max_pending_bytes, keepalive)
    try:
        await client._open()
    except BaseException:
        await client.close()
        raise
    client._ready.set()
    client._keep_alive(look=False)
    return client
