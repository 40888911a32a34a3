#!/usr/bin/env python3
"""How much acknowledged traffic a kill -9 takes from history on disk under history_fsync everysec (or no).

Usage: python3 Benchmarks/scripts/everysec_loss.py [--build DIR] [--rounds N] [--fsync everysec]

Each round starts fanoutd on a new directory keeping everything of `loss.>`, publishes 100-byte messages to
`loss.a` from one connection with a window of 100 unacknowledged PUBs for 0.5-1.5 s (chosen at random), kills
the server with SIGKILL while it publishes, starts it again on the directory and asks RESUME where `loss.a`
stands. Lost = the last acknowledged seq minus the last recovered one; it is also given in milliseconds of
the round's own publish rate. Prints one line per round and the median and maximum.
"""
import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--build", default=os.path.join(ROOT, ".build/release"))
parser.add_argument("--rounds", type=int, default=10)
parser.add_argument("--fsync", default="everysec")
options = parser.parse_args()


def launch(directory, config):
    process = subprocess.Popen([f"{options.build}/fanoutd", "--config", config, "--listen", "127.0.0.1:0"],
                               env={"FANOUTD_HISTORY_DIR": directory, "FANOUTD_HISTORY_FSYNC": options.fsync,
                                    "PATH": os.environ.get("PATH", "")},
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in process.stderr:
        if "listening on " in line:
            port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            return process, port
    raise SystemExit("fanoutd did not start")


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port))
    reader = sock.makefile("rb")
    reader.readline()
    return sock, reader


def round_once(work):
    directory = tempfile.mkdtemp(dir=work)
    config = f"{directory}.yaml"
    with open(config, "w") as out:
        out.write('history:\n  - subjects: "loss.>"\n    max_messages: 10000000\nhistory_max_bytes: 4294967296\n')
    process, port = launch(f"{directory}/h", config)
    sock, reader = connect(port)
    payload = b"p" * 100
    acknowledged = 0
    window = 100
    started = time.monotonic()
    deadline = started + random.uniform(0.5, 1.5)
    sock.sendall(b"".join(b"PUB loss.a " + payload + b"\n" for _ in range(window)))
    while time.monotonic() < deadline:
        sock.sendall(b"".join(b"PUB loss.a " + payload + b"\n" for _ in range(10)))
        for _ in range(10):
            if reader.readline().startswith(b"+OK"):
                acknowledged += 1
    process.send_signal(signal.SIGKILL)
    elapsed = time.monotonic() - started
    process.wait()
    sock.close()
    process, port = launch(f"{directory}/h", config)
    sock, reader = connect(port)
    sock.sendall(b"RESUME loss.a\n")
    reply = reader.readline().decode()
    recovered = int(reply.split("seq=")[1].split()[0])
    sock.close()
    process.send_signal(signal.SIGTERM)
    process.wait()
    rate = acknowledged / elapsed
    lost = max(0, acknowledged - recovered)
    return lost, lost / rate * 1000, rate


def main():
    losses = []
    with tempfile.TemporaryDirectory() as work:
        for index in range(options.rounds):
            lost, milliseconds, rate = round_once(work)
            losses.append(milliseconds)
            print(f"round {index + 1}: {lost} acknowledged messages lost, {milliseconds:.1f} ms at {rate:,.0f}/s")
    print(f"{options.fsync}: median {statistics.median(losses):.1f} ms, max {max(losses):.1f} ms of traffic")


main()
