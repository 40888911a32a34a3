"""Exceptions: one class per `-ERR <code>` word of PROTOCOL.md, plus the client's own failures."""
from __future__ import annotations

from typing import Dict, Type


class FanoutError(Exception):
    """Base of every exception this package raises."""


class ServerError(FanoutError):
    """The server answered `-ERR <code> <text>`; `code` and `text` are the server's words."""

    code = ""

    def __init__(self, text: str = "", code: str = "") -> None:
        self.text = text
        if code:
            self.code = code
        super().__init__(f"{self.code} {text}".strip())


class UnknownCommand(ServerError):
    code = "unknown-command"


class Syntax(ServerError):
    code = "syntax"


class BadSubject(ServerError, ValueError):
    """A subject the server refused, or that the client refused before sending it (then nothing was sent)."""

    code = "bad-subject"


class TooLong(ServerError):
    code = "too-long"


class Limit(ServerError):
    code = "limit"


class Denied(ServerError):
    code = "denied"


class AuthRequired(ServerError):
    code = "auth-required"


class Unavailable(ServerError):
    code = "unavailable"


class SlowConsumer(ServerError):
    code = "slow-consumer"


class ShuttingDown(ServerError):
    code = "shutting-down"


class IdleTimeout(ServerError):
    code = "idle-timeout"


class Kicked(ServerError):
    """The push `-ERR kicked <reason>` (1.3): an administrator closed this connection with KICK. Final: the
    client does not reconnect, and its subscriptions and later commands end with this error."""

    code = "kicked"

    @property
    def reason(self) -> str:
        return self.text


_BY_CODE: Dict[str, Type[ServerError]] = {
    cls.code: cls
    for cls in (UnknownCommand, Syntax, BadSubject, TooLong, Limit, Denied, AuthRequired, Unavailable,
                SlowConsumer, ShuttingDown, IdleTimeout, Kicked)
}

# Codes the server sends only when it closes the connection on its own, never as a reply.
CLOSING_CODES = frozenset({"slow-consumer", "shutting-down", "idle-timeout"})


def server_error(code: str, text: str) -> ServerError:
    """The exception for `-ERR <code> <text>`; a code this client does not know still gives a ServerError."""
    cls = _BY_CODE.get(code)
    return cls(text) if cls else ServerError(text, code=code)


class CannotConnect(FanoutError, ConnectionError):
    """The server could not be reached, or refused the connection before greeting it."""


class ConnectionLost(FanoutError, ConnectionError):
    """The connection dropped before this command's reply came. The command may or may not have taken effect
    on the server (a PUB may have been delivered), so it is never sent again by the client."""


class Closed(FanoutError):
    """The client was closed by its owner."""


class ProtocolViolation(FanoutError):
    """The server sent something that is not Fanout protocol version 1."""
