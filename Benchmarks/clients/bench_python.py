#!/usr/bin/env python3
"""Python clients compared in one run: this package (fanout, asyncio) on fanoutd, redis-py (asyncio) on
redis-server, and nats-py on nats-server.

- publish: one client publishes MESSAGES messages pipelined, WINDOW at a time, each window awaited whole
  (fanout: concurrent `publish` awaits, each its own future with its receivers count; fanout-many: one
  `publish_many` per window, each message's receivers count in one list; fanout-nowait: `publish_nowait` calls
  then `flush`, which checks every reply and sums the receivers; redis-py: a non-transactional pipeline, each
  message's count in one list; nats-py: `publish` calls then `flush`, a PING round trip, since a NATS publish
  has no reply).
- receive: one client subscribes and counts MESSAGES messages, from the first to the last, that a raw socket
  publisher in another process (raw_publishers.py) sends as fast as the server takes them.

Every figure is the median of RUNS runs, the three clients taking turns within each run. CPU is user plus
system time, of this process for the client (time.process_time) and of the server from /proc/<pid>/stat,
given per message in microseconds; "client core" is the client's CPU time over the elapsed time, near 100%
when the client's own core is what limits the rate.

    python3 Benchmarks/clients/bench_python.py [--messages 100000] [--runs 5] [--payload 16]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterable, Awaitable, Callable, Dict, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "clients" / "python" / "src"))
sys.path.insert(0, str(HERE))

import fanout  # noqa: E402
from servers import Server  # noqa: E402

# redis-py and nats-py are imported where they are used, so that the fanout cases (and the test that runs
# one of them, clients/python/tests/test_benchmark.py) need neither.

SUBJECT_PUB = "bench.pub"
SUBJECT_RECV = "bench.recv"
WINDOW = 1000

# Seconds without a new message after which a receive run is given up as incomplete (the server dropped the
# subscriber, or the client dropped messages): the run is reported, not hung on.
IDLE = 5.0

# messages/s, client CPU µs per message, server CPU µs per message, client CPU over elapsed time, messages
# received, and what went wrong ("" when every message came)
Result = Tuple[float, float, float, float, int, str]


class Receiving:
    """A receive run's count, its timing and what ended it early, shared between the loop and its watchdog."""

    def __init__(self) -> None:
        self.received = 0
        self.start = 0.0
        self.last = 0.0
        self.problem = ""

    async def count(self, messages: AsyncIterable[Any], count: int) -> None:
        """Counts `messages` until there are `count`, timing the first and the end."""
        try:
            async for _ in messages:
                self.received += 1
                if self.received == 1:
                    self.start = time.perf_counter()
                if self.received == count:
                    break
        finally:
            self.last = time.perf_counter()


async def watched(count: int, state: Receiving, loop: Awaitable[None]) -> float:
    """Runs a receive loop until it has `count` messages, it fails, or no message came for IDLE seconds;
    returns the seconds from the first message to the end of the loop (for an incomplete run, a rate that
    only says how far it got)."""
    task = asyncio.ensure_future(loop)
    seen = -1
    while not task.done():
        done, _ = await asyncio.wait([task], timeout=IDLE)
        if done:
            break
        if state.received == seen:
            task.cancel()
            state.problem = state.problem or f"no message for {IDLE:.0f} s"
            break
        seen = state.received
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as error:  # the connection dropped: the run is reported with what it got
        state.problem = state.problem or f"{type(error).__name__}: {error}"
    if state.received < count and not state.problem:
        state.problem = "ended early"
    return (state.last - state.start) if state.received > 1 else float("nan")


async def receive_from(peer: str, server: Server, count: int, size: int, state: Receiving,
                       messages: AsyncIterable[Any]) -> Tuple[float, int, str]:
    """The timed part of a receive case: a publisher process sends `count` messages, `messages` counts them."""
    publisher = start_publisher(peer, server, count, size)
    elapsed = await watched(count, state, state.count(messages, count))
    publisher.kill()
    publisher.wait()
    return elapsed, state.received, state.problem


async def measure(server: Server, count: int, work: Callable) -> Result:
    """Runs `work()`, which returns the seconds its timed part took; CPU is counted over the whole call."""
    client_before, server_before, wall_before = time.process_time(), server.cpu(), time.perf_counter()
    outcome = await work()
    seconds, received, problem = outcome if isinstance(outcome, tuple) else (outcome, count + 1, "")
    done = max(received - 1, 1)
    client_cpu, server_cpu = time.process_time() - client_before, server.cpu() - server_before
    wall = time.perf_counter() - wall_before
    return done / seconds, client_cpu / done * 1e6, server_cpu / done * 1e6, client_cpu / wall, received, problem


async def measure_windows(server: Server, count: int, window: Callable[[], Awaitable[None]]) -> Result:
    """`measure` of `count // WINDOW` calls of `window`, each publishing WINDOW messages and awaiting them."""
    async def work() -> float:
        start = time.perf_counter()
        for _ in range(count // WINDOW):
            await window()
        return time.perf_counter() - start
    return await measure(server, count, work)


# Publishing

async def publish_fanout(server: Server, count: int, payload: bytes) -> Result:
    client = await fanout.connect(f"127.0.0.1:{server.port}")

    async def window() -> None:
        await asyncio.gather(*[client.publish(SUBJECT_PUB, payload) for _ in range(WINDOW)])
    try:
        return await measure_windows(server, count, window)
    finally:
        await client.close()


async def publish_fanout_many(server: Server, count: int, payload: bytes) -> Result:
    client = await fanout.connect(f"127.0.0.1:{server.port}")
    messages = [(SUBJECT_PUB, payload)] * WINDOW

    async def window() -> None:
        await client.publish_many(messages)
    try:
        return await measure_windows(server, count, window)
    finally:
        await client.close()


async def publish_fanout_nowait(server: Server, count: int, payload: bytes) -> Result:
    client = await fanout.connect(f"127.0.0.1:{server.port}")

    async def window() -> None:
        for _ in range(WINDOW):
            client.publish_nowait(SUBJECT_PUB, payload)
        await client.flush()
    try:
        return await measure_windows(server, count, window)
    finally:
        await client.close()


async def publish_redis(server: Server, count: int, payload: bytes) -> Result:
    import redis.asyncio as aioredis
    client = aioredis.Redis(host="127.0.0.1", port=server.port)
    await client.ping()

    async def window() -> None:
        pipe = client.pipeline(transaction=False)
        for _ in range(WINDOW):
            pipe.publish(SUBJECT_PUB, payload)
        await pipe.execute()
    try:
        return await measure_windows(server, count, window)
    finally:
        await client.aclose()


async def publish_nats(server: Server, count: int, payload: bytes) -> Result:
    import nats
    client = await nats.connect(f"nats://127.0.0.1:{server.port}")

    async def window() -> None:
        for _ in range(WINDOW):
            await client.publish(SUBJECT_PUB, payload)
        await client.flush()
    try:
        return await measure_windows(server, count, window)
    finally:
        await client.close()


# Receiving

def start_publisher(kind: str, server: Server, count: int, size: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HERE / "raw_publishers.py"), kind, str(server.port), SUBJECT_RECV,
                             str(size), str(count)])


async def receive_fanout(server: Server, count: int, size: int) -> Result:
    state = Receiving()

    def on_event(event: fanout.Event) -> None:
        if event.kind in ("server-closing", "overflow", "disconnected") and not state.problem:
            state.problem = f"{event.kind}: {event.detail}"
    # No reconnect: a subscriber the server drops ends the run, and the table says so.
    client = await fanout.connect(f"127.0.0.1:{server.port}", reconnect=False, on_event=on_event,
                                  max_pending=count)
    sub = await client.subscribe(SUBJECT_RECV)

    async def work() -> Tuple[float, int, str]:
        elapsed, received, problem = await receive_from("fanoutd", server, count, size, state, sub)
        if sub.dropped:
            problem += f" ({sub.dropped} dropped by the client)"
        return elapsed, received, problem
    try:
        return await measure(server, count - 1, work)
    finally:
        await client.close()


async def receive_redis(server: Server, count: int, size: int) -> Result:
    import redis.asyncio as aioredis
    state = Receiving()
    client = aioredis.Redis(host="127.0.0.1", port=server.port)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(SUBJECT_RECV)
    await pubsub.get_message(timeout=1.0)  # the subscribe confirmation

    messages = (message async for message in pubsub.listen() if message["type"] == "message")

    async def work() -> Tuple[float, int, str]:
        return await receive_from("redis", server, count, size, state, messages)
    try:
        return await measure(server, count - 1, work)
    finally:
        await pubsub.aclose()
        await client.aclose()


async def receive_nats(server: Server, count: int, size: int) -> Result:
    import nats
    state = Receiving()

    async def on_error(error: Exception) -> None:
        state.problem = state.problem or f"{type(error).__name__}: {error}"
    client = await nats.connect(f"nats://127.0.0.1:{server.port}", pending_size=256 * 1024 * 1024,
                                error_cb=on_error, allow_reconnect=False)
    sub = await client.subscribe(SUBJECT_RECV, pending_msgs_limit=count * 2, pending_bytes_limit=256 * 1024 * 1024)
    await client.flush()

    async def work() -> Tuple[float, int, str]:
        return await receive_from("nats", server, count, size, state, sub.messages)
    try:
        return await measure(server, count - 1, work)
    finally:
        await client.close()


CASES: Dict[str, Dict[str, Callable]] = {
    "publish": {"fanout": publish_fanout, "fanout-many": publish_fanout_many, "fanout-nowait": publish_fanout_nowait,
                "redis-py": publish_redis, "nats-py": publish_nats},
    "receive": {"fanout": receive_fanout, "redis-py": receive_redis, "nats-py": receive_nats},
}
SERVER_OF = {"fanout": "fanoutd", "fanout-many": "fanoutd", "fanout-nowait": "fanoutd", "redis-py": "redis",
             "nats-py": "nats"}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--payload", type=int, default=16, help="payload bytes")
    options = parser.parse_args()
    servers = {name: Server(name) for name in ("fanoutd", "redis", "nats")}
    results: Dict[Tuple[str, str], List[Result]] = {}
    problems: List[str] = []
    try:
        for run in range(options.runs):
            for case, clients in CASES.items():
                for client, function in clients.items():
                    argument = b"x" * options.payload if case == "publish" else options.payload
                    try:
                        result = await asyncio.wait_for(
                            function(servers[SERVER_OF[client]], options.messages, argument), 300)
                    except Exception as error:  # reported in the table, never a hang or a lost table
                        result = (float("nan"),) * 4 + (0, f"{type(error).__name__}: {error}")
                    results.setdefault((case, client), []).append(result)
                    if result[5]:
                        problems.append(f"run {run + 1}, {case} {client}: received {result[4]:,} of "
                                        f"{options.messages:,}: {result[5]}")
                    if not servers[SERVER_OF[client]].alive():
                        servers[SERVER_OF[client]] = Server(SERVER_OF[client])
            print(f"run {run + 1} of {options.runs} done", file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    print(f"Python {sys.version.split()[0]}, {options.messages} messages of {options.payload} bytes, "
          f"median of {options.runs} runs; CPU in µs per message")
    print(f"| {'case':8} | {'client':13} | {'messages/s':>11} | {'client CPU':>10} | {'server CPU':>10} | "
          f"client core | range of messages/s | complete runs |")
    print(f"|{'-' * 10}|{'-' * 15}|{'-' * 13}|{'-' * 12}|{'-' * 12}|{'-' * 13}|{'-' * 21}|{'-' * 15}|")
    for (case, client), runs in results.items():
        # Medians over the complete runs; a case with none shows the incomplete ones, marked in the last column.
        complete = [r for r in runs if not r[5]]
        shown = complete or runs
        rate = statistics.median(r[0] for r in shown)
        low, high = min(r[0] for r in shown), max(r[0] for r in shown)
        print(f"| {case:8} | {client:13} | {rate:11,.0f} | {statistics.median(r[1] for r in shown):10.2f} | "
              f"{statistics.median(r[2] for r in shown):10.2f} | {statistics.median(r[3] for r in shown):10.0%} | "
              f"{low:,.0f}–{high:,.0f} | {len(complete)} of {len(runs)} |")
    for problem in problems:
        print(f"incomplete: {problem}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    asyncio.run(main())
