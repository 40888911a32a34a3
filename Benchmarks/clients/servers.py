"""The three servers the client benchmarks compare on, each started on a free loopback port, with its CPU
time read from /proc so that a figure can be quoted with what it cost."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fanoutd_binary() -> str:
    explicit = os.environ.get("FANOUTD")
    if explicit:
        return explicit
    for flavour in ("release", "debug"):
        candidate = REPO / ".build" / flavour / "fanoutd"
        if candidate.exists():
            return str(candidate)
    raise SystemExit("no fanoutd: build it with `swift build -c release` or set FANOUTD")


class Server:
    """One server process; `name` is fanoutd, redis or nats."""

    def __init__(self, name: str, cpu: Optional[int] = None) -> None:
        self.name = name
        self.port = free_port()
        self._directory = tempfile.TemporaryDirectory()
        command: List[str]
        if name == "fanoutd":
            command = [fanoutd_binary(), "--listen", f"127.0.0.1:{self.port}", "--log-level", "warning"]
        elif name == "redis":
            command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                       "no", "--dir", self._directory.name]
        elif name == "nats":
            command = ["nats-server", "-a", "127.0.0.1", "-p", str(self.port)]
        else:
            raise ValueError(name)
        if cpu is not None:
            command = ["taskset", "-c", str(cpu)] + command
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise SystemExit(f"{name} did not start")
                time.sleep(0.05)

    @property
    def pid(self) -> int:
        """The server's own pid (taskset execs it, so the pid is the same)."""
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._directory.cleanup()
