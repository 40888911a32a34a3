"""What the client hands to the application: messages, questions, answers, and connection events."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple


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


@dataclass(frozen=True)
class Question:
    """A question put to this client by `ASK` (1.2); the responder's return value is the answer."""

    subject: str
    id: str
    payload: bytes

    @property
    def text(self) -> str:
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


@dataclass(frozen=True)
class Event:
    """A connection event, for `on_event`: kind is one of
    "connected", "disconnected", "reconnecting", "resumed", "reset", "gap", "server-closing", "revoked",
    "resubscribe-failed". `detail` says more in words; `report` is set for "resumed" and "reset"."""

    kind: str
    detail: str = ""
    report: Optional[object] = None
