#!/usr/bin/env python3
"""Protocol 1.2's shapes against their peers, measured in one run: groups, request/reply, gathering and large
payloads.

    Benchmarks/scripts/shapes.py [--runs 5] [--only group,ask,gather,large] [--fanoutd PATH] [--fanout PATH]

Starts fanoutd, nats-server and redis-server fresh on 127.0.0.1, each pinned to core 0, and runs the load
generator (`fanout bench`) pinned to core 1. Each run benches every row of a scenario once, in an order that
swaps from run to run, so that the rows of a ratio are measured seconds apart; the table gives the median of
each figure over the runs. Beside each rate: the server's CPU time (user + system, from /proc/PID/stat just
before and after the bench) per unit of work, and the generator's CPU time over its wall time (`gen %`): the
generator polls, so over 90% means a rate is partly the generator's, and the CPU column is the one to read.
`other %` is the time cores 0 and 1 spent on anything but the server and the generator during the bench (from
/proc/stat), in percent of one core: another process on core 0 takes the server's core whenever the server
sleeps, which adds milliseconds to the latency of one-at-a-time questions and inflates the CPU column, so a row
above 10% is flagged and its figures are not the server's alone.

fanoutd runs with its defaults, except for the large payloads flat out: there a second fanoutd has
max_pending_bytes at 256 MiB, and a third also send_buffer_bytes 0 (the kernel's own send buffer sizing, as
Redis and NATS have). fanoutd answers a publish once it is queued, so a window of 10 bounds what the publisher
has in flight, not what the subscribers have still to read; the generator's one core reads 10 bytes for every
byte it publishes and falls behind, and with the default 8 MiB (or 32 MiB, Redis's own pub/sub limit) its
subscribers were dropped as slow consumers within a few thousand messages. Redis, which writes to subscribers
in the same loop pass that reads the publish, did not pass its limit in these runs. (backpressure_bytes would
pace the publisher instead; at 4 MiB it cut fanoutd's rate to a quarter.)
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PORTS = {"fanout": 17611, "fanout-large": 17612, "fanout-autotuned": 17613, "nats": 14611, "redis": 16611}
# fanoutd instances besides the default one: their settings, as FANOUTD_* variables.
FANOUTD_VARIANTS = {
    "fanout": {},
    "fanout-large": {"FANOUTD_MAX_PENDING_BYTES": str(256 << 20)},
    "fanout-autotuned": {"FANOUTD_MAX_PENDING_BYTES": str(256 << 20), "FANOUTD_SEND_BUFFER_BYTES": "0"},
}

# Each scenario: rows of (label, server, bench arguments, unit), then the ratios to print (label, row a, row b,
# figure): figure(a) / figure(b). The unit is what the server's CPU time is divided by.
SCENARIOS = {
    "group": {
        "title": "Group delivery: 1 publisher, 1 subject, 100-byte payloads, window 100",
        "rows": [
            ("fanout, 1 plain subscriber", "fanout", "--subscribers 1 --messages 1000000", "delivered"),
            ("fanout, group of 10 (QSUB)", "fanout", "--subscribers 10 --group workers --messages 1000000", "delivered"),
            ("nats, 1 plain subscriber", "nats", "--subscribers 1 --messages 1000000", "delivered"),
            ("nats, queue group of 10", "nats", "--subscribers 10 --group workers --messages 1000000", "delivered"),
        ],
        "ratios": [
            ("fanout group / fanout plain", 1, 0, "rate"),
            ("nats group / nats plain", 3, 2, "rate"),
            ("fanout group / nats group", 1, 3, "rate"),
            ("cpu: nats group / fanout group", 3, 1, "cpu"),
        ],
    },
    "ask": {
        "title": "Request/reply: 1 asker, 1 responder, max-answers 1 (NATS: request to its first reply on _INBOX)",
        "rows": [
            ("fanout ASK, window 1", "fanout", "--ask --subscribers 1 --max-answers 1 --window 1 --messages 20000", "published"),
            ("nats request, window 1", "nats", "--ask --subscribers 1 --max-answers 1 --window 1 --messages 20000", "published"),
            ("fanout ASK, window 100", "fanout", "--ask --subscribers 1 --max-answers 1 --window 100 --messages 300000", "published"),
            ("nats request, window 100", "nats", "--ask --subscribers 1 --max-answers 1 --window 100 --messages 300000", "published"),
        ],
        "ratios": [
            ("questions/s fanout / nats, window 1", 0, 1, "rate"),
            ("p50 nats / fanout, window 1", 1, 0, "p50"),
            ("p99 nats / fanout, window 1", 1, 0, "p99"),
            ("questions/s fanout / nats, window 100", 2, 3, "rate"),
            ("cpu per question nats / fanout, window 100", 3, 2, "cpu"),
        ],
    },
    "gather": {
        "title": "Gathering: 1 asker, 100 responders, max-answers 0 (DONE after the 100th answer); no peer",
        "rows": [
            ("fanout ASK to 100, window 1", "fanout", "--ask --subscribers 100 --window 1 --messages 3000", "delivered"),
            ("fanout ASK to 100, window 10", "fanout", "--ask --subscribers 100 --window 10 --messages 5000", "delivered"),
        ],
        "ratios": [],
    },
    "large": {
        "title": "Large payloads: 1 publisher, 10 subscribers, 65536-byte payloads (with an LF: BMSG), window 10, "
                 "flat out, then paced at 3000 publishes/s",
        "rows": [
            ("fanout BPUB 64 KiB", "fanout-large", "--bpub --payload 65536 --subscribers 10 --window 10 --messages 3000", "bytes"),
            ("redis PUBLISH 64 KiB", "redis", "--bpub --payload 65536 --subscribers 10 --window 10 --messages 3000", "bytes"),
            ("fanout BPUB 64 KiB, send buffer 0", "fanout-autotuned", "--bpub --payload 65536 --subscribers 10 --window 10 --messages 3000", "bytes"),
            ("fanout BPUB 64 KiB, 3000/s", "fanout", "--bpub --payload 65536 --subscribers 10 --window 10 --messages 6000 --rate 3000", "bytes"),
            ("redis PUBLISH 64 KiB, 3000/s", "redis", "--bpub --payload 65536 --subscribers 10 --window 10 --messages 6000 --rate 3000", "bytes"),
        ],
        "ratios": [
            ("bytes/s fanout / redis", 0, 1, "rate"),
            ("cpu per byte redis / fanout", 1, 0, "cpu"),
            ("bytes/s fanout (send buffer 0) / redis", 2, 1, "rate"),
            ("cpu per byte redis / fanout (send buffer 0)", 1, 2, "cpu"),
            ("cpu per byte redis / fanout, paced", 4, 3, "cpu"),
            ("p99 redis / fanout, paced", 4, 3, "p99"),
        ],
    },
}


def busy_ticks(cores=(0, 1)):
    """Ticks cores 0 and 1 spent busy (everything but idle and iowait), from /proc/stat."""
    busy = 0
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if fields[0] in {f"cpu{core}" for core in cores}:
                values = [int(v) for v in fields[1:]]
                busy += sum(values[:8]) - values[3] - values[4]
    return busy


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_port(port, process, name):
    for _ in range(200):
        if process.poll() is not None:
            sys.exit(f"{name} exited at start")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"{name} does not listen on {port}")


def start_servers(args, wanted, logs):
    servers = {}
    commands = {
        **{name: [args.fanoutd, "--listen", f"127.0.0.1:{PORTS[name]}", "--log-level", "warning"]
           for name in FANOUTD_VARIANTS},
        "nats": ["nats-server", "-a", "127.0.0.1", "-p", str(PORTS["nats"])],
        "redis": ["redis-server", "--port", str(PORTS["redis"]), "--bind", "127.0.0.1", "--save", "",
                  "--appendonly", "no", "--daemonize", "no"],
    }
    for name in wanted:
        environment = dict(os.environ, **FANOUTD_VARIANTS.get(name, {}))
        log = open(os.path.join(logs, name + ".log"), "w")
        process = subprocess.Popen(["taskset", "-c", "0"] + commands[name], stdout=log, stderr=subprocess.STDOUT,
                                   env=environment)
        servers[name] = process
        wait_port(PORTS[name], process, name)
    return servers


def bench(args, server, process, arguments):
    """One `fanout bench`: its JSON result, the server's CPU seconds, and the busy seconds of cores 0 and 1."""
    protocol = "fanout" if server in FANOUTD_VARIANTS else server
    command = ["taskset", "-c", "1", args.fanout, "bench", "--server", f"127.0.0.1:{PORTS[server]}",
               "--protocol", protocol, "--payload", "100", "--json"] + arguments.split()
    before, busy_before = cpu_ticks(process.pid), busy_ticks()
    child = subprocess.run(command, capture_output=True)
    after, busy_after = cpu_ticks(process.pid), busy_ticks()
    if child.returncode != 0:
        sys.exit(f"fanout bench failed against {server} ({' '.join(command)}):\n{child.stderr.decode()}")
    return (json.loads(child.stdout)["results"][0], (after - before) / CLOCK_TICKS,
            (busy_after - busy_before) / CLOCK_TICKS)


def figures(result, server_seconds, gen_share, other_share, unit, payload):
    # Rate: deliveries/s, questions/s (published) or bytes/s; CPU: server ns per delivery, question, answer or
    # byte.
    if unit == "bytes":
        count = result["delivered"] * payload
        rate = result["delivered_per_s"] * payload
    elif unit == "published":
        count, rate = result["published"], result["published_per_s"]
    else:
        count = result["delivered"]
        rate = result["delivered_per_s"] if unit == "delivered" else result["published_per_s"]
    latency = result["latency_us"]
    return {
        "rate": rate, "cpu": server_seconds * 1e9 / count if count else 0.0,
        "p50": latency["p50"], "p99": latency["p99"], "gen": gen_share, "other": other_share,
        "questions_per_s": result["published_per_s"], "lost": result["lost"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="group,ask,gather,large")
    parser.add_argument("--fanoutd", default=os.path.join(ROOT, ".build/release/fanoutd"))
    parser.add_argument("--fanout", default=os.path.join(ROOT, ".build/release/fanout"))
    parser.add_argument("--raw", help="write every run's figures to this JSON file")
    args = parser.parse_args()
    chosen = args.only.split(",")
    needed = {row[1] for name in chosen for row in SCENARIOS[name]["rows"]}
    for tool in needed - set(FANOUTD_VARIANTS):
        if shutil.which(f"{tool}-server") is None:
            sys.exit(f"{tool}-server is not installed")
    logs = tempfile.mkdtemp(prefix="shapes-")
    servers = start_servers(args, sorted(needed), logs)
    raw = {}
    try:
        for name in chosen:
            scenario = SCENARIOS[name]
            rows = scenario["rows"]
            runs = [[] for _ in rows]
            for run in range(args.runs):
                order = list(range(len(rows)))
                if run % 2:
                    order.reverse()
                for index in order:
                    label, server, arguments, unit = rows[index]
                    before = os.times()
                    started = time.monotonic()
                    result, seconds, busy = bench(args, server, servers[server], arguments)
                    wall = time.monotonic() - started
                    after = os.times()
                    generator = (after.children_user + after.children_system
                                 - before.children_user - before.children_system)
                    other = max(0.0, busy - seconds - generator) / wall
                    payload = 65536 if "--payload 65536" in arguments else 100
                    runs[index].append(figures(result, seconds, generator / wall, other, unit, payload))
            report(name, scenario, runs)
            raw[name] = {rows[i][0]: runs[i] for i in range(len(rows))}
    finally:
        for process in servers.values():
            process.terminate()
            process.wait()
        shutil.rmtree(logs, ignore_errors=True)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(raw, f, indent=1)


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def report(name, scenario, runs):
    rows = scenario["rows"]
    unit_name = {"delivered": "delivery", "published": "question", "bytes": "byte"}
    print(f"\n{scenario['title']} ({len(runs[0])} runs, medians)")
    print(f"{'row':34} {'rate':>14} {'unit':>13} {'p50 us':>9} {'p99 us':>9} {'ns/unit':>10} {'gen %':>6} "
          f"{'other %':>7} {'lost':>5}")
    contended = []
    for index, (label, server, arguments, unit) in enumerate(rows):
        r = runs[index]
        rate_unit = {"delivered": "deliveries/s", "published": "questions/s", "bytes": "bytes/s"}[unit]
        cpu_unit = unit_name[unit] if not (name == "gather") else "answer"
        print(f"{label:34} {median(r, 'rate'):14.0f} {rate_unit:>13} {median(r, 'p50'):9.1f} {median(r, 'p99'):9.1f} "
              f"{median(r, 'cpu'):10.3f} {100 * median(r, 'gen'):6.0f} {100 * median(r, 'other'):7.0f} "
              f"{max(x['lost'] for x in r):5d}   (ns per {cpu_unit})")
        if median(r, "other") > 0.10:
            contended.append(label)
        if name == "gather":
            print(f"{'':34} {median(r, 'questions_per_s'):14.0f} {'questions/s':>13}")
    for label, a, b, figure in scenario["ratios"]:
        values = [runs[a][i][figure] / runs[b][i][figure] for i in range(len(runs[a])) if runs[b][i][figure]]
        per_run = " ".join(f"{v:.2f}" for v in values)
        print(f"  {label:48} {statistics.median(values):6.2f}x   runs: {per_run}")
    for label in contended:
        print(f"  warning: {label}: other work took over 10% of the cores, so its latency and CPU are not the server's alone")


if __name__ == "__main__":
    main()
