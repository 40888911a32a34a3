"""What the client hands to the application: messages, questions, answers, and connection events."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Literal, Optional, Tuple, Union

from .resume import ResumeReport


@dataclass(frozen=True)
class Message:
    """One message as delivered: its concrete subject, that subject's seq, and the payload's bytes."""

    subject: str
    seq: int
    payload: bytes

    @property
    def text(self) -> str:
        """The payload as text (invalid UTF-8 replaced)."""
        return self.payload.decode("utf-8", "replace")


_new = object.__new__


def new_message(subject: str, seq: int, payload: bytes) -> Message:
    """A Message made for delivery, without the frozen dataclass's __init__ (one object.__setattr__ per
    field): on the receive path that was the largest cost per message after the parsing itself."""
    message: Message = _new(Message)
    fields = message.__dict__
    fields["subject"] = subject
    fields["seq"] = seq
    fields["payload"] = payload
    return message


@dataclass(frozen=True)
class Question:
    """A question put to this client by `ASK` (1.2); the responder's return value is the answer."""

    subject: str
    id: str
    payload: bytes

    @property
    def text(self) -> str:
        """The payload as text (invalid UTF-8 replaced)."""
        return self.payload.decode("utf-8", "replace")


@dataclass
class AskResult:
    """What `ask` gathered: `answers` as (responder, payload) in arrival order; `asked` connections were asked,
    `gone` of them vanished before answering."""

    id: str
    asked: int
    answers: List[Tuple[str, bytes]] = field(default_factory=list)
    answered: int = 0
    gone: int = 0


EventKind = Literal["connected", "disconnected", "reconnecting", "resumed", "reset", "gap", "server-closing",
                    "revoked", "resubscribe-failed", "overflow", "auth-expired", "token-refreshed", "token-failed",
                    "kicked"]


@dataclass(frozen=True)
class Event:
    """A connection event, for `on_event`: `kind` is one of EventKind's words ("overflow": a subscription's
    queue was full and new messages are being dropped; "auth-expired": the server's push of that name;
    "token-refreshed": a fresh token was accepted by AUTH; "token-failed": the token function failed or the
    server refused its token, retried with backoff; "kicked": the push `-ERR kicked <reason>`, the reason in
    `detail`, after which the client does not reconnect). `detail` says more in words; `report` is set for
    "resumed" and "reset"."""

    kind: EventKind
    detail: str = ""
    report: Optional[ResumeReport] = None


class Info(Dict[str, Union[int, str]]):
    """The server's INFO fields (`info["clients"]`, numbers as ints), with the protocol's fields also as typed
    attributes: `info.clients` is an int, `info.version` a str. A field a later server adds is in the dict."""

    def number(self, key: str) -> int:
        """A field as an int (KeyError when absent, ValueError when not a number)."""
        value = self[key]
        if isinstance(value, int):
            return value
        raise ValueError(f"INFO {key}={value} is not a number")

    @property
    def version(self) -> str:
        return str(self["version"])

    @property
    def epoch(self) -> str:
        return str(self.get("epoch", ""))

    @property
    def uptime_s(self) -> int:
        return self.number("uptime_s")

    @property
    def clients(self) -> int:
        return self.number("clients")

    @property
    def subjects(self) -> int:
        return self.number("subjects")

    @property
    def subscriptions(self) -> int:
        return self.number("subscriptions")

    @property
    def published(self) -> int:
        return self.number("published")

    @property
    def delivered(self) -> int:
        return self.number("delivered")

    @property
    def slow_consumers(self) -> int:
        return self.number("slow_consumers")
