"""One connection's transport: an asyncio.Protocol that frames the server's bytes and hands frames to its
client, and tells it when writing must wait and when the connection is gone."""
from __future__ import annotations

import asyncio
from typing import Callable, List, Optional

from .protocol import Frame, Framer


# Bytes gathered in one loop pass before they are handed to the transport without waiting for the pass to end.
FLUSH_AT = 256 * 1024


class Wire(asyncio.Protocol):
    """Frames go to `on_frames` in arrival order, a list for each read (so that a run of replies can be taken in
    one loop); `on_lost` is called once, with the reason. `on_frames` stops at a frame that loses the wire."""

    def __init__(self, on_frames: Callable[["Wire", List[Frame]], None], on_lost: Callable[["Wire", str], None],
                 max_line: int, max_payload: int) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.framer = Framer(max_line, max_payload)
        self._on_frames = on_frames
        self._on_lost = on_lost
        self._lost = False
        # Set while the transport's write buffer is under its high-water mark.
        self.writable = asyncio.Event()
        self.writable.set()
        self.reading_paused = False
        # Bound: FLUSH_AT bytes; beyond it the transport's buffer takes them, and once that is over its
        # high-water mark `writable` is clear and publishes wait for it.
        self._outgoing: List[bytes] = []
        self._outgoing_bytes = 0
        # Whether anything was sent since the client's keepalive last looked, and the loop time it last was.
        self.sent = False
        self.sent_at = asyncio.get_running_loop().time()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.framer.feed(data)
        except ValueError as error:
            self.abort(f"protocol violation: {error}")
            return
        if frames and not self._lost:
            self._on_frames(self, frames)

    def eof_received(self) -> Optional[bool]:
        return False

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.writable.set()
        self._report_lost(str(exc) if exc else "closed by the server")

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def write(self, data: bytes) -> None:
        """Queues `data` for the end of this loop pass: commands written in one pass (a burst of pipelined
        publishes) go out in one send instead of one system call each. Past `FLUSH_AT` bytes they go at once,
        so that the transport's high-water mark (`writable`) stops a burst that never yields."""
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.append(data)
        self._outgoing_bytes += len(data)
        if self._outgoing_bytes >= FLUSH_AT:
            self._flush()

    def _flush(self) -> None:
        if not self._outgoing:
            return
        outgoing, self._outgoing, self._outgoing_bytes = self._outgoing, [], 0
        self.sent = True
        self.sent_at = asyncio.get_running_loop().time()
        if self.transport is not None and not self._lost:
            self.transport.write(b"".join(outgoing))

    def pause_reading(self) -> None:
        if self.transport is not None and not self.reading_paused and not self._lost:
            self.reading_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and self.reading_paused and not self._lost:
            self.reading_paused = False
            self.transport.resume_reading()

    def abort(self, reason: str) -> None:
        self._report_lost(reason)
        if self.transport is not None:
            self.transport.abort()

    def _report_lost(self, reason: str) -> None:
        if not self._lost:
            self._lost = True
            self._on_lost(self, reason)
