"""Where to connect: `host:port`, `[v6-host]:port`, a bare host (port 7411), or `unix:/path`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DEFAULT_PORT = 7411


@dataclass(frozen=True)
class Address:
    host: str
    port: int
    # Set for `unix:/path`; then host and port mean nothing.
    path: Optional[str] = None

    @staticmethod
    def parse(text: str) -> "Address":
        if text.startswith("unix:"):
            return Address("", 0, text[len("unix:"):])
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            return Address(host, int(rest[1:]) if rest.startswith(":") else DEFAULT_PORT)
        host, colon, port = text.rpartition(":")
        if not colon:
            return Address(text, DEFAULT_PORT)
        return Address(host, int(port))

    def __str__(self) -> str:
        if self.path is not None:
            return f"unix:{self.path}"
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
