"""The wire format, without I/O: subjects, command encoding, and parsing of server lines (PROTOCOL.md)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from .errors import BadSubject

Payload = Union[bytes, bytearray, memoryview, str]

# What this client assumes the server's max_line is when choosing between PUB and BPUB; a payload that would
# make a longer PUB line goes as BPUB.
DEFAULT_MAX_LINE = 65536

# What a push line may hold beyond a payload of max_line bytes, which the server pushes as MSG (PROTOCOL.md, Any
# bytes): `MSG `, a subject of up to 255 bytes, a seq of up to 20 digits and two spaces are 281 bytes; the rest
# is room for an ANSWER's id and responder.
PUSH_HEADER_ROOM = 512


MAX_SUBJECT = 255
_SUBJECT = re.compile(r"[!-~]{1,255}")
_TOKEN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_WORD = re.compile(r"[!-~]+")


def check_subject(subject: str, wildcards: bool = False) -> str:
    """Refuses, before anything is sent, what PROTOCOL.md (Subjects) refuses: not 1 to 255 bytes of printable
    ASCII, an empty token, `>` other than last; and for a concrete subject (PUB, ASK, LAST) a wildcard token.
    So that a subject taken from user input can never end the line early and add a command of its own."""
    if not isinstance(subject, str):
        raise TypeError(f"a subject is a str, not {type(subject).__name__}")
    if not _SUBJECT.fullmatch(subject):
        why = "empty subject" if not subject else (
            f"subject is {len(subject.encode())} bytes, the limit is {MAX_SUBJECT}" if len(subject) > MAX_SUBJECT
            else "only printable ASCII without spaces is allowed")
        raise BadSubject(f"{subject!r}: {why}" if subject else why)
    tokens = subject.split(".")
    for index, token in enumerate(tokens):
        if not token:
            raise BadSubject(f"{subject!r}: empty token")
        if token == ">" and index != len(tokens) - 1:
            raise BadSubject(f"{subject!r}: '>' is only allowed as the last token")
        if not wildcards and token in ("*", ">"):
            raise BadSubject(f"{subject!r}: wildcards are only allowed in SUB and UNSUB")
    return subject


def check_group(group: str) -> str:
    """A group name (QSUB): 1 to 64 bytes of `[A-Za-z0-9_.-]` (PROTOCOL.md, Groups)."""
    if not isinstance(group, str) or not _TOKEN.fullmatch(group):
        raise ValueError(f"bad group name {group!r}: 1 to 64 characters of A-Z a-z 0-9 _ . -")
    return group


def check_word(what: str, word: str) -> str:
    """One word of a command (a token for AUTH): printable ASCII, no space, no line end."""
    if not isinstance(word, str) or not _WORD.fullmatch(word):
        raise ValueError(f"bad {what} {word!r}: one word of printable ASCII, without spaces")
    return word


def check_line(what: str, text: str) -> str:
    """Text that ends a command line (PING's text, a whole `request` line): no LF and no CR, which would end
    the line early and send the rest as a command of its own."""
    if "\n" in text or "\r" in text:
        raise ValueError(f"bad {what} {text!r}: it must fit on one line (no LF, no CR)")
    return text


def check_count(what: str, value: int, least: int = 0) -> int:
    """A decimal number of a command: an int (not a bool, not a float) of at least `least`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"bad {what} {value!r}: a whole number of at least {least}")
    return value


def is_wildcard(pattern: str) -> bool:
    return any(token in ("*", ">") for token in pattern.split("."))


def matches(pattern: str, subject: str) -> bool:
    """Whether `subject` (concrete) falls under `pattern`: `*` is one token, a last `>` one or more."""
    if pattern == subject:
        return True
    wanted = pattern.split(".")
    tokens = subject.split(".")
    for index, token in enumerate(wanted):
        if token == ">" and index == len(wanted) - 1:
            return len(tokens) > index
        if index >= len(tokens) or (token != "*" and token != tokens[index]):
            return False
    return len(tokens) == len(wanted)


def as_bytes(payload: Payload) -> bytes:
    if isinstance(payload, str):
        return payload.encode()
    return bytes(payload)


def publish_command(subject: str, payload: bytes, max_line: int = DEFAULT_MAX_LINE) -> bytes:
    """`PUB` when a line can carry the payload (no LF in it, no CR at its end since the server strips a CR
    before the LF, and the line within max_line), else `BPUB <subject> <length>` and the bytes (1.2)."""
    if b"\n" not in payload and payload[-1:] != b"\r" and 5 + len(subject) + len(payload) <= max_line:
        return b"PUB %s %s\n" % (subject.encode(), payload)
    return b"BPUB %s %d\n%s\n" % (subject.encode(), len(payload), payload)


def fields(words: List[str]) -> Dict[str, str]:
    """`key=value` words as a dict; words without `=` are skipped (later versions may add fields)."""
    out: Dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if equals:
            out[key] = value
    return out


@dataclass(frozen=True)
class Greeting:
    """`+HELLO fanout/1 <server-name> <auth> [key=value ...]`."""

    server_name: str
    auth_required: bool
    # None for a server without history and resume (before 1.1).
    epoch: Optional[str]

    @staticmethod
    def parse(line: str) -> "Greeting":
        words = line.split()
        if len(words) < 3 or words[0] != "+HELLO" or not words[1].startswith("fanout/1"):
            raise ValueError(line)
        extra = fields(words[3:])
        return Greeting(words[2], extra.get("auth") == "required", extra.get("epoch") or None)


@dataclass(frozen=True)
class ResumeReply:
    """The reply to `RESUME` and `LAST` after `+OK `: `<n> epoch=<e> seq=<s> replayed=<k> missed=<m|unknown>`."""

    subscriptions: int
    epoch: str
    seq: int
    replayed: int
    # None for `unknown`.
    missed: Optional[int]

    @staticmethod
    def parse(text: str) -> "ResumeReply":
        words = text.split()
        named = fields(words[1:])
        missed = named["missed"]
        return ResumeReply(int(words[0]), named["epoch"], int(named["seq"]), int(named["replayed"]),
                           None if missed == "unknown" else int(missed))


@dataclass(frozen=True)
class Reset:
    """The push `RESET <subject> epoch=<e> seq=<s> missed=<m|unknown>` (several nodes)."""

    subject: str
    epoch: str
    seq: int
    missed: Optional[int]

    @staticmethod
    def parse(line: str) -> "Reset":
        words = line.split()
        named = fields(words[2:])
        missed = named["missed"]
        return Reset(words[1], named["epoch"], int(named["seq"]), None if missed == "unknown" else int(missed))


# A line without its LF, or a BMSG header with its payload.
Frame = Union[bytes, Tuple[bytes, bytes]]


class Framer:
    """Splits the server's byte stream into lines, and a `BMSG <subject> <seq> <length>` header with the
    `<length>` bytes after it into one frame. Pure: fed chunks as they come, in any split.

    Bound: holds at most one unfinished line (refused past `max_line`) or one BMSG payload (refused past
    `max_payload`) beyond the chunk being fed.
    """

    def __init__(self, max_line: int, max_payload: int) -> None:
        self.max_line = max_line
        self.max_payload = max_payload
        self._buffer = bytearray()
        # While a BMSG payload is being read: its header and the bytes still due (payload and LF).
        self._header: Optional[bytes] = None
        self._due = 0

    def feed(self, data: bytes) -> List[Frame]:
        """Frames completed by `data`: each a line (bytes, without its LF), or a (header, payload) tuple."""
        if self._header is None and b"BMSG " not in data and (not self._buffer or b"BMSG " not in self._buffer + data):
            return self._lines(data)
        buffer = self._buffer
        buffer += data
        frames: List[Frame] = []
        start = 0
        while True:
            if self._header is not None:
                if len(buffer) - start < self._due:
                    break
                end = start + self._due - 1
                payload = bytes(buffer[start:end])
                if buffer[end:end + 1] != b"\n":
                    raise ValueError("a BMSG payload is not followed by LF")
                frames.append((self._header, payload))
                self._header = None
                start = end + 1
                continue
            newline = buffer.find(b"\n", start)
            if newline < 0:
                if len(buffer) - start > self.max_line + 1:
                    raise ValueError(f"a server line is longer than {self.max_line} bytes")
                break
            # No CR is stripped: the server ends its lines in LF alone, and a CR before it is payload.
            line = bytes(buffer[start:newline])
            start = newline + 1
            if line.startswith(b"BMSG "):
                length = int(line.rsplit(b" ", 1)[1])
                if length > self.max_payload:
                    raise ValueError(f"a BMSG of {length} bytes is over max_payload ({self.max_payload})")
                self._header = line
                self._due = length + 1
                continue
            frames.append(line)
        del buffer[:start]
        return frames

    def _lines(self, data: bytes) -> List[Frame]:
        """`feed` for a chunk without any BMSG header in it: split in one call instead of a search per line."""
        if self._buffer:
            data = bytes(self._buffer) + data
        lines: List[Frame] = data.split(b"\n")  # type: ignore[assignment]
        rest = lines.pop()
        if len(rest) > self.max_line + 1:
            raise ValueError(f"a server line is longer than {self.max_line} bytes")
        self._buffer = bytearray(rest)  # type: ignore[arg-type]
        return lines
