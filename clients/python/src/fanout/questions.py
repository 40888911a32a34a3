"""Questions (1.2): the ones this client asks, open until their DONE, and the responders answering the ones
put to it. Owned by the client; it hands over the ASK, ANSWER and DONE pushes and a lost connection."""
from __future__ import annotations

import asyncio
import inspect
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Optional, Tuple, Union

from .messages import AskResult, Question
from .protocol import Payload, as_bytes, fields, matches

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("fanout")

Handler = Callable[[Question], Union[bytes, str, Awaitable[Union[bytes, str]]]]


class Responder:
    """A handler answering the questions put to a subject; `stop()` withdraws it. `await responder.ready`
    waits until the server has taken the subscription (and raises what it refused)."""

    def __init__(self, questions: "Questions", subject: str, handler: Handler, group: Optional[str]) -> None:
        self.subject = subject
        self.handler = handler
        self.group = group
        self._questions = questions
        self.ready: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()

    @property
    def line(self) -> str:
        """The command that subscribes it: plainly, or as a member of its group."""
        return f"QSUB {self.group} {self.subject}" if self.group is not None else f"SUB {self.subject}"

    async def stop(self) -> None:
        await self._questions.stop(self)


class Questions:
    """Bound: one open question per ASK awaiting its DONE (the server allows `max_asks` per connection), and
    one responder per `respond` call."""

    def __init__(self, client: "Client") -> None:
        self._client = client
        self._open: Dict[str, Tuple[AskResult, asyncio.Future[AskResult]]] = {}
        self.responders: List[Responder] = []

    async def ask(self, subject: str, payload: Payload, timeout: float, max_answers: int) -> AskResult:
        data = as_bytes(payload)
        if b"\n" in data or data.endswith(b"\r"):
            raise ValueError("a question's payload must fit on one line")
        done: asyncio.Future[AskResult] = asyncio.get_running_loop().create_future()

        def read(text: str) -> AskResult:
            # Registered as the reply is read, so the ANSWER and DONE pushes right behind it find it.
            words = text.split()
            result = AskResult(words[0], int(words[1]))
            self._open[result.id] = (result, done)
            return result

        milliseconds = max(1, int(round(timeout * 1000)))
        await self._client._command(f"ASK {subject} {milliseconds} {max_answers} ".encode() + data + b"\n", read)
        return await done

    def answer_pushed(self, line: bytes) -> None:
        """`ANSWER <id> <responder> <payload>`."""
        parts = line.split(b" ", 3)
        entry = self._open.get(parts[1].decode())
        if entry is not None:
            entry[0].answers.append((parts[2].decode(), parts[3] if len(parts) > 3 else b""))

    def done_pushed(self, line: str) -> None:
        """`DONE <id> asked=<a> answered=<b> gone=<g>`."""
        words = line.split()
        entry = self._open.pop(words[1], None)
        if entry is None:
            return
        result, future = entry
        named = fields(words[2:])
        result.asked = int(named.get("asked", result.asked))
        result.answered = int(named.get("answered", len(result.answers)))
        result.gone = int(named.get("gone", 0))
        if not future.done():
            future.set_result(result)

    def lost(self, error: Exception) -> None:
        """The connection is gone: open questions fail (the server closed them with it)."""
        for _, future in self._open.values():
            if not future.done():
                future.set_exception(error)
        self._open.clear()

    def respond(self, subject: str, handler: Handler, group: Optional[str]) -> Responder:
        self._client._check_mode((subject,), group)
        responder = Responder(self, subject, handler, group)
        self.responders.append(responder)

        async def subscribe() -> None:
            try:
                await self._client._command(responder.line, int)
            except BaseException as error:
                if not responder.ready.done():
                    responder.ready.set_exception(error)
                    responder.ready.exception()  # retrieved here too: nobody need await it
                raise
            if not responder.ready.done():
                responder.ready.set_result(None)
        self._client._background(subscribe())
        return responder

    async def stop(self, responder: Responder) -> None:
        if responder not in self.responders:
            return
        self.responders.remove(responder)
        if responder.subject not in self._client._plain_patterns() + [r.subject for r in self.responders]:
            await self._client._unsubscribe_patterns([responder.subject])

    def question_pushed(self, line: bytes) -> None:
        """`ASK <subject> <id> <payload>`: the first responder whose subject covers it answers."""
        parts = line.split(b" ", 3)
        question = Question(parts[1].decode(), parts[2].decode(), parts[3] if len(parts) > 3 else b"")
        for responder in self.responders:
            if matches(responder.subject, question.subject):
                self._client._background(self._answer(responder, question))
                return

    async def _answer(self, responder: Responder, question: Question) -> None:
        try:
            answer = responder.handler(question)
            if inspect.isawaitable(answer):
                answer = await answer
            data = as_bytes(answer)
            if b"\n" in data or data.endswith(b"\r"):
                # The server would strip a CR before the LF: the asker would get other bytes than these.
                raise ValueError("an answer must fit on one line (no LF, no CR at its end)")
        except asyncio.CancelledError:
            raise
        except Exception:
            # No answer is sent: the asker's DONE counts this responder among the silent ones
            # (asked - answered - gone), the same as one that did not answer in time.
            log.exception("fanout: the responder for %s raised on question %s; it is not answered",
                          responder.subject, question.id)
            return
        # `+OK 0` (a late answer) is normal, and a lost connection says nothing the asker would not learn.
        self._client._send_quietly(f"ANSWER {question.id} ".encode() + data + b"\n")
