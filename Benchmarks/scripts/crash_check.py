#!/usr/bin/env python3
"""Crash-and-damage check of history on disk: rounds of load, a fault, a restart and a check of the promise.

Usage: python3 Benchmarks/scripts/crash_check.py [--fanoutd PATH] [--rounds N] [--max-seconds S] [--seed N]
                                                 [--first-round R] [--kinds K,K,...] [--verbose] [--keep]

Each round gets a fresh history directory and a real `fanoutd --config FILE --listen 127.0.0.1:0`. A
publisher sends PUBs with unique payloads to cc.a, cc.b, cc.c (history rules) and cp.x (none), a window at a
time, and records each `+OK`; a subscriber that RESUMEd every subject records every (subject, epoch, seq,
payload) it is sent. At a random moment the round applies its fault, then starts the server again on the same
directory and checks, with `RESUME <subject> <old epoch> 0` and new PUBs:
  - the server starts and answers PING, every time (a full disk or a damaged file never stops it);
  - no (subject, epoch, seq) is ever seen with two payloads, across all rounds (one map for the whole run);
  - under the old epoch, the numbering never goes back below a seq already delivered (the next PUB would
    reuse it), and replayed + missed = seq (what is not replayed is counted as missed, not silently gone);
  - every PUB acknowledged under `always` that the rules still retain is replayed with its exact payload,
    whatever the epoch; under `everysec`, so is every PUB acknowledged before a clean stop once a freed disk's
    writer had drained with room left (if no write failed since);
  - nothing is moved to damaged/ unless the round damaged a file.

Kinds (all by default; a kind the machine cannot run is skipped with a message):
  kill     `always`, kill -9 under load, twice
  enospc   a 3 MiB tmpfs filled by a filler file under load (root and mount needed), a few pages left or
           none: kill -9 while full and restart after freeing it; or free, more load, clean stop (`everysec`,
           with or without a burst past half the writer's queue while full, or `always`); or a restart while
           the disk is still full
  flip     `always`, a clean stop, then load and kill -9, then one byte flipped in a record that has whole
           records after it (in the last segment) or anywhere in an earlier segment; one round in three sets
           such a record's length past the file's end instead
  zero     the same with a 4 KiB block zeroed
  truncate the same with an earlier segment (never the last: there a cut is a torn write) cut at a byte that is
           not a record boundary
  reload   `always`, SIGHUP with the history rules removed, narrowed or restored under load, then kill -9
  seam     the writer's fault seam (FANOUTD_HISTORY_FAULTS: writes or syncs failing with ENOSPC or EIO, a
           write torn at a byte), when the binary has it; else skipped with a message

One line per failing round, with the command that runs it alone; then `N passed, M failed` alone on a line.
Exit status 1 on any violation, 2 when no round could run.
"""
import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SUBJECTS = ["cc.a", "cc.b", "cc.c", "cp.x"]
ALL_KINDS = ["kill", "enospc", "flip", "zero", "truncate", "reload", "seam"]
# Rule sets, as (pattern, max_messages); the first match wins. cp.x is never covered.
FULL = [("cc.>", 100000)]
RULE_SETS = {"full": FULL, "removed": [], "narrowed": [("cc.a", 100000), ("cc.>", 20)], "one": [("cc.b", 100000)]}
TMPFS_BYTES = 3 << 20
TIMEOUT = 30


def default_fanoutd():
    for build in ("release", "debug"):
        path = os.path.join(ROOT, ".build", build, "fanoutd")
        if os.path.exists(path):
            return path
    return os.path.join(ROOT, ".build", "release", "fanoutd")


class Violation(Exception):
    pass


# CRC-32C (Castagnoli), as the segments' records use: the check picks damage sites between whole records.
CRC_TABLE = []
for _byte in range(256):
    _crc = _byte
    for _ in range(8):
        _crc = (_crc >> 1) ^ 0x82F63B78 if _crc & 1 else _crc >> 1
    CRC_TABLE.append(_crc)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    table = CRC_TABLE
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def segment_records(path):
    """The file's bytes and the (offset, length) of each whole record from its start, as the reader finds them:
    u32 body length, u32 CRC-32C of the segment id and the body, body (kind 1, seq, serial, time, subject...)."""
    with open(path, "rb") as file:
        data = file.read()
    seed = crc32c(int(os.path.basename(path)[:16], 16).to_bytes(4, "little"))
    records, offset = [], 0
    while offset + 8 + 27 <= len(data):
        length = int.from_bytes(data[offset:offset + 4], "little")
        stored = int.from_bytes(data[offset + 4:offset + 8], "little")
        if length < 27 or offset + 8 + length > len(data) or data[offset + 8] != 1:
            break
        if crc32c(data[offset + 8:offset + 8 + length], seed) != stored:
            break
        records.append((offset, 8 + length))
        offset += 8 + length
    return data, records


class Daemon:
    """One fanoutd process; its stderr is kept, and `port` is read from its "listening on" line."""

    def __init__(self, binary, config, log_path, registry, faults=None):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("FANOUTD_")}
        if faults:
            environment["FANOUTD_HISTORY_FAULTS"] = faults
        self.lines = []
        self.changed = threading.Condition()
        self.log = open(log_path, "a")
        self.log.write(f"--- start {' faults=' + faults if faults else ''}\n")
        self.process = subprocess.Popen([binary, "--config", config, "--listen", "127.0.0.1:0"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=environment)
        registry.append(self)  # stopped at the end of the run, whatever happens from here
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.port = None
        line = self.wait_line("listening on ", 0)
        if line is None:
            # Its output ended (it is exiting: a few seconds for that) or the time passed.
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.finish()
                raise Violation(f"fanoutd did not listen within {TIMEOUT} s")
            code = self.finish()
            raise Violation(f"fanoutd did not start: exit {code}: {' | '.join(l for l in self.lines[-4:] if l)}")
        self.port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])

    def _read(self):
        for raw in self.process.stderr:
            text = raw.decode(errors="replace").rstrip("\n")
            self.log.write(text + "\n")
            with self.changed:
                self.lines.append(text)
                self.changed.notify_all()
        with self.changed:
            self.lines.append(None)
            self.changed.notify_all()

    def wait_line(self, text, skip, timeout=TIMEOUT):
        """The (skip+1)th line holding `text`, or None if the output ends or the time passes first."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = [line for line in self.lines if line is not None and text in line]
                if len(found) > skip:
                    return found[skip]
                if None in self.lines or not self.changed.wait(max(0, deadline - time.monotonic())):
                    return None

    def count(self, text):
        with self.changed:
            return sum(1 for line in self.lines if line is not None and text in line)

    def kill9(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.finish()

    def term(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.finish()
        if code != 0:
            raise Violation(f"SIGTERM: exit {code}: {' | '.join(l for l in self.lines[-3:] if l)}")

    def reload(self):
        before = self.count("configuration reloaded")
        self.process.send_signal(signal.SIGHUP)
        if self.wait_line("configuration reloaded", before) is None:
            raise Violation("SIGHUP: no 'configuration reloaded' line")

    def finish(self):
        try:
            code = self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.reader.join(TIMEOUT)
        self.log.close()
        return code


class Connection:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.file = self.sock.makefile("rb")
        greeting = self.readline()
        if not greeting.startswith("+HELLO "):
            raise Violation(f"bad greeting: {greeting!r}")

    def readline(self):
        line = self.file.readline()
        if not line:
            raise EOFError
        return line.decode(errors="replace").rstrip("\r\n")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def fields(reply):
    return dict(part.split("=", 1) for part in reply.split() if "=" in part)


class Subscriber(threading.Thread):
    """RESUMEs every subject (learning its epoch), then records every MSG until the connection ends."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.connection = Connection(port)
        self.connection.sock.sendall("".join(f"RESUME {s}\n" for s in SUBJECTS).encode())
        self.epochs = {}
        for subject in SUBJECTS:
            reply = self.connection.readline()
            if not reply.startswith("+OK "):
                raise Violation(f"RESUME {subject}: {reply}")
            self.epochs[subject] = fields(reply)["epoch"]
        self.seen = []
        self.start()

    def run(self):
        self.connection.sock.settimeout(None)
        try:
            while True:
                parts = self.connection.readline().split(" ", 3)
                if parts[0] == "MSG":
                    self.seen.append((parts[1], self.epochs[parts[1]], int(parts[2]), parts[3]))
        except (EOFError, OSError, ValueError):
            pass

    def stop(self):
        try:
            self.connection.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.join(TIMEOUT)
        self.connection.close()


class Publisher(threading.Thread):
    """Sends PUBs a window at a time and records each one acknowledged (with the time its window was sent)."""

    def __init__(self, port, rng, tag, window, pad, rate=None):
        super().__init__(daemon=True)
        self.pad, self.rate = pad, rate
        self.connection = Connection(port)
        self.rng = random.Random(rng.random())
        self.tag, self.window = tag, window
        self.acked, self.refused, self.unanswered = [], [], []
        self.sent_bytes = 0
        self.halt = threading.Event()
        self.start()

    def run(self):
        number = 0
        try:
            while not self.halt.is_set():
                batch = []
                for _ in range(self.window):
                    number += 1
                    subject = self.rng.choice(SUBJECTS)
                    payload = (f"{self.tag}.{number}." + "%x" % self.rng.getrandbits(64)
                               + "p" * self.rng.randrange(self.pad))
                    batch.append((subject, payload))
                sent = time.monotonic()
                if self.rate:
                    # Paced, so that the history stays small next to a 3 MiB disk whatever history_fsync is.
                    self.halt.wait(sum(len(p) for _, p in batch) / self.rate)
                lines = "".join(f"PUB {s} {p}\n" for s, p in batch).encode()
                self.sent_bytes += len(lines)
                self.connection.sock.sendall(lines)
                for index, (subject, payload) in enumerate(batch):
                    try:
                        reply = self.connection.readline()
                    except (EOFError, OSError):
                        self.unanswered = batch[index:]
                        raise
                    if reply.startswith("+OK"):
                        self.acked.append((subject, payload, sent))
                    else:
                        self.refused.append((subject, payload, reply))
        except (EOFError, OSError):
            pass

    def stop(self):
        self.halt.set()
        self.join(TIMEOUT)
        if self.is_alive():
            self.connection.sock.shutdown(socket.SHUT_RDWR)
            self.join(TIMEOUT)
        self.connection.close()


def coverage(rules, subject):
    """max_messages of the first rule whose pattern matches `subject`, or None (no history)."""
    for pattern, keep in rules:
        if pattern == subject or (pattern.endswith(".>") and subject.startswith(pattern[:-1])):
            return keep
    return None


class Run:
    """What all rounds share: the binary, the scratch places, and the map of every (subject, epoch, seq) seen."""

    def __init__(self, options):
        self.binary = options.fanoutd
        self.work = tempfile.mkdtemp(prefix="crash-check-")
        self.seen = {}
        self.top = {}
        self.daemons = []
        self.mount = None
        self.seam = b"FANOUTD_HISTORY_FAULTS" in open(self.binary, "rb").read()

    def mount_tmpfs(self):
        path = os.path.join(self.work, "tmpfs")
        os.mkdir(path)
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", path],
                                capture_output=True, text=True)
        if result.returncode != 0:
            return (result.stderr.strip() or f"mount exit {result.returncode}")
        self.mount = path
        return None

    def record(self, subject, epoch, seq, payload, problems, where):
        key = (subject, epoch, seq)
        old = self.seen.setdefault(key, payload)
        if old != payload:
            problems.append(f"{subject} epoch={epoch} seq={seq} named two payloads ({where}): "
                            f"{old[:24]}... and {payload[:24]}...")
        if seq > self.top.get((subject, epoch), 0):
            self.top[(subject, epoch)] = seq

    def close(self):
        for daemon in self.daemons:
            if daemon.process.poll() is None:
                daemon.process.kill()
                daemon.process.wait()
        if self.mount:
            subprocess.run(["umount", "-l", self.mount], capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)


class Round:
    def __init__(self, run, number, kind, rng, turn):
        # `turn` counts the rounds of this kind: a kind's variants take turns, so that a few rounds cover them.
        self.run, self.number, self.kind, self.rng, self.turn = run, number, kind, rng, turn
        base = run.mount if kind == "enospc" else run.work
        self.directory = os.path.join(base, f"r{number}")
        self.config_path = os.path.join(run.work, f"r{number}.yaml")
        self.log_path = os.path.join(run.work, f"r{number}.log")
        self.rules, self.fsync = FULL, "always"
        self.required = {subject: [] for subject in SUBJECTS}
        self.epochs = {}
        self.damaged = False
        self.problems, self.notes = [], []
        self.cycle = 0
        self.filler = None
        self.daemon = self.subscriber = self.publisher = None

    # -- the server --------------------------------------------------------------------------------------------
    def write_config(self):
        text = (f'history_dir: "{self.directory}"\nhistory_fsync: {self.fsync}\nhistory_max_bytes: 268435456\n'
                f"max_pending_bytes: 67108864\n")
        if self.rules:
            text += "history:\n" + "".join(f'  - subjects: "{p}"\n    max_messages: {k}\n    max_age: 0\n'
                                           for p, k in self.rules)
        with open(self.config_path, "w") as file:
            file.write(text)

    def begin(self, faults=None, load=True):
        """Starts the server, checks what it kept, and starts the subscriber and the publisher."""
        self.write_config()
        self.cycle += 1
        self.daemon = Daemon(self.run.binary, self.config_path, self.log_path, self.run.daemons, faults)
        self.check_damaged_folder()
        if self.epochs:
            self.verify()
        if load:
            self.subscriber = Subscriber(self.daemon.port)
            window = self.rng.choice([1, 10, 50])
            # Payloads of up to 80 or up to 2,000 bytes: larger ones make a writer's pass span many pages.
            pad = self.rng.choice([80, 80, 2000])
            rate = 400000 if self.kind == "enospc" else None
            self.publisher = Publisher(self.daemon.port, self.rng, f"r{self.number}c{self.cycle}", window, pad, rate)
        return self.daemon

    def settle(self, durable):
        """After the server ended: records what the subscriber saw, and which acknowledged PUBs must be kept."""
        self.publisher.stop()
        self.subscriber.stop()
        for subject, epoch, seq, payload in self.subscriber.seen:
            self.run.record(subject, epoch, seq, payload, self.problems, f"live, cycle {self.cycle}")
        # A PUB not acknowledged, or whose record may be lost, may still be retained: it holds a place (None)
        # in its subject's last max_messages, so that the check never asks for one it may have pushed out.
        for subject, payload, sent in self.publisher.acked:
            if coverage(self.rules, subject):
                self.required[subject].append(payload if durable(sent) else None)
        for subject, _ in self.publisher.unanswered:
            if coverage(self.rules, subject):
                self.required[subject].append(None)
        self.notes.append(f"c{self.cycle}:{len(self.publisher.acked)}acked")
        self.epochs = dict(self.subscriber.epochs)
        self.subscriber = self.publisher = None

    def pause(self, low=0.1, high=0.6):
        time.sleep(self.rng.uniform(low, high))

    # -- the checks --------------------------------------------------------------------------------------------
    def verify(self):
        connection = Connection(self.daemon.port)
        try:
            for subject in SUBJECTS:
                old = self.epochs.get(subject, "none")
                connection.sock.sendall(f"RESUME {subject} {old} 0\n".encode())
                reply = connection.readline()
                if not reply.startswith("+OK "):
                    raise Violation(f"RESUME {subject}: {reply}")
                f = fields(reply)
                epoch, seq, replayed, missed = f["epoch"], int(f["seq"]), int(f["replayed"]), f["missed"]
                top = self.run.top.get((subject, epoch), 0)
                payloads = set()
                for _ in range(replayed):
                    parts = connection.readline().split(" ", 3)
                    if parts[0] != "MSG" or parts[1] != subject:
                        raise Violation(f"RESUME {subject}: unexpected {' '.join(parts)[:60]}")
                    self.run.record(subject, epoch, int(parts[2]), parts[3], self.problems,
                                    f"replay, start {self.cycle}")
                    payloads.add(parts[3])
                if epoch == old:
                    if seq < top:
                        self.problems.append(f"{subject}: numbering went back under epoch {epoch} at start "
                                             f"{self.cycle}: seq={seq}, but {top} was delivered")
                    if missed != "unknown" and replayed + int(missed) != seq:
                        self.problems.append(f"{subject}: start {self.cycle}: replayed {replayed} + missed "
                                             f"{missed} != seq {seq} from 0 ({reply})")
                keep = coverage(self.rules, subject)
                need = [p for p in self.required[subject][-keep:] if p is not None] if keep else []
                missing = [p for p in need if p not in payloads]
                if missing:
                    self.problems.append(f"{subject}: start {self.cycle}: {len(missing)} of {len(need)} "
                                         f"acknowledged messages not replayed (first {missing[0][:20]}), "
                                         f"epoch {'kept' if epoch == old else 'new'}: {reply}")
            connection.sock.sendall(b"PING crash-check\n")
            if connection.readline() != "+PONG crash-check":
                raise Violation("no +PONG")
        finally:
            connection.close()

    def check_damaged_folder(self):
        folder = os.path.join(self.directory, "damaged")
        if not self.damaged and os.path.isdir(folder) and os.listdir(folder):
            self.problems.append(f"start {self.cycle}: {sorted(os.listdir(folder))} moved to damaged/ "
                                 f"though no file was damaged")
            self.damaged = True  # said once

    # -- the end of a round: a clean stop, a start that checks, new PUBs, and once more --------------------------
    def final(self):
        self.begin()
        self.pause(0.1, 0.3)
        self.daemon.term()
        self.settle(lambda sent: True)
        self.begin(load=False)
        self.daemon.term()

    # -- the disk ----------------------------------------------------------------------------------------------
    def fill(self):
        # While the disk is full, the load goes unpaced: a writer's pass meets the full disk with many records.
        self.publisher.rate = None
        self.filler = os.path.join(self.run.mount, f"filler-{self.number}")
        chunk = b"\xa5" * 65536
        with open(self.filler, "wb", buffering=0) as file:
            try:
                while True:
                    file.write(chunk)
            except OSError:
                pass
            try:
                while True:
                    file.write(b"\xa5" * 512)
            except OSError:
                pass
            # A few pages left most of the time: the writer then fills the disk itself, mid-write (a short
            # write), not only at a write's start.
            room = self.rng.choice([0, self.rng.randrange(1, 16 * 4096)])
            file.truncate(max(0, file.tell() - room))
        self.notes.append(f"filled, {room} bytes left")
        return time.monotonic()

    def free(self):
        if self.filler and os.path.exists(self.filler):
            os.remove(self.filler)
        self.filler = None
        if self.publisher:
            self.publisher.rate = 400000
        return time.monotonic()

    def room_again(self, always):
        """Frees the disk; returns the time after which a PUB acknowledged under everysec must reach the disk: once
        the writer's queue has drained (what it held when the disk filled may fill it again), if room is left."""
        freed = self.free()
        if always:
            return freed
        deadline = time.monotonic() + TIMEOUT
        while self.info().get("history_write_queue") != "0":
            if time.monotonic() > deadline:
                raise Violation("the writer's queue did not drain within 30 s of the disk's freeing")
            time.sleep(0.02)
        room = os.statvfs(self.run.mount)
        if room.f_bavail * room.f_frsize < (1 << 20):
            self.notes.append("refilled by the writer's backlog: nothing after required")
            return float("inf")
        self.failures = self.info().get("history_disk_failures")
        return time.monotonic()

    def still_room(self, freed, always):
        """`freed`, or never if a write failed since (under everysec, a write that fails loses its records: the
        writer's backlog or a compaction may fill a small disk again)."""
        if always or freed == float("inf") or self.info().get("history_disk_failures") == self.failures:
            return freed
        self.notes.append("the disk filled again: nothing after required")
        return float("inf")

    def info(self):
        connection = Connection(self.daemon.port)
        try:
            connection.sock.sendall(b"INFO\n")
            return fields(connection.readline())
        finally:
            connection.close()

    def segments(self):
        return sorted(os.path.join(self.directory, name) for name in os.listdir(self.directory)
                      if name.endswith(".seg"))

    def damage(self, how):
        """Damages one segment where the damage can be told from a torn write; records what it did."""
        segments = [(path,) + segment_records(path) for path in self.segments()]
        last = segments[-1][0] if segments else None
        candidates = []
        for path, data, records in segments:
            if how == "truncate" and path == last:
                continue
            # In the last segment, damage must have a whole record after it: else it is a torn end.
            usable = records[:-1] if path == last else records
            if usable:
                candidates.append((path, data, records, usable))
        if not candidates:
            self.notes.append(f"no site for {how}")
            return
        # Two rounds in three damage the segment being written (if it has records to spare), one an earlier one.
        wanted = [c for c in candidates if (c[0] == last) == (self.turn % 3 != 2)] or candidates
        path, data, records, usable = self.rng.choice(wanted)
        name = os.path.basename(path)
        self.damaged = True
        shutil.copyfile(path, os.path.join(self.run.work, f"r{self.number}-{name}.before-damage"))
        if how == "flip":
            start, length = self.rng.choice(usable)
            with open(path, "r+b") as file:
                if self.turn % 3 == 1:
                    # One round in three damages a record's length so that it runs past the file's end, as a
                    # torn write's last record does, though whole records follow it.
                    past = len(data) - start - 8 + self.rng.randrange(1, 4096)
                    file.seek(start)
                    file.write(past.to_bytes(4, "little"))
                    self.notes.append(f"length of the record at {start} of {name} set to {past}, past the end "
                                      f"({len(records)} records, {len(data)} bytes)")
                else:
                    at = start + self.rng.randrange(length)
                    file.seek(at)
                    file.write(bytes([data[at] ^ self.rng.randrange(1, 256)]))
                    self.notes.append(f"flipped byte {at} of {name} ({len(records)} records, {len(data)} bytes)")
        elif how == "zero":
            end = records[-1][0] if path == last else records[-1][0] + records[-1][1]
            blocks = [b for b in range(0, end, 4096) if b + 4096 <= end or path != last]
            blocks = [b for b in blocks if any(data[b:b + 4096])] or [usable[0][0]]
            at = self.rng.choice(blocks)
            length = 4096 if path != last else min(4096, end - at)
            with open(path, "r+b") as file:
                file.seek(at)
                file.write(b"\0" * length)
            self.notes.append(f"zeroed {length} bytes at {at} of {name} ({len(records)} records)")
        else:
            end = records[-1][0] + records[-1][1]
            boundaries = {start for start, _ in records} | {end}
            cuts = [b for b in range(1, end) if b not in boundaries]
            at = self.rng.choice(cuts)
            os.truncate(path, at)
            self.notes.append(f"cut {name} at {at} of {len(data)} bytes ({len(records)} records)")
        self.required = {subject: [] for subject in SUBJECTS}

    # -- the kinds ---------------------------------------------------------------------------------------------
    def kind_kill(self):
        for _ in range(2):
            self.begin()
            self.pause()
            self.daemon.kill9()
            self.settle(lambda sent: True)
        self.final()

    def kind_enospc(self):
        variant, self.fsync = [("kill-full", "always"), ("free-stop", "everysec"), ("start-full", "always"),
                               ("free-stop", "always"), ("start-full", "everysec"),
                               ("free-stop-small", "everysec")][self.turn % 6]
        always = self.fsync == "always"
        self.notes.append(f"{variant} {self.fsync}")
        self.begin()
        self.pause(0.05, 0.3)
        self.fill()
        if variant == "free-stop" and not always:
            # A burst larger than half the writer's queue meets the full disk: its pass goes through the page
            # cache, where a write can be cut short mid-record.
            self.publisher.pad, target = 4000, self.publisher.sent_bytes + (40 << 20)
            deadline = time.monotonic() + 6
            while self.publisher.sent_bytes < target and time.monotonic() < deadline and self.publisher.is_alive():
                time.sleep(0.02)
            self.publisher.pad = 80
        self.pause(0.2, 0.5)
        if variant == "kill-full":
            self.daemon.kill9()
            self.settle(lambda sent: True)
            self.free()
        elif variant.startswith("free-stop"):
            # -small: no burst, so that the writer's backlog fits the disk once it has room.
            freed = self.room_again(always)
            self.pause(0.2, 0.5)
            freed = self.still_room(freed, always)
            self.daemon.term()
            self.settle(lambda sent: always or sent > freed)
        else:
            if self.rng.random() < 0.5:
                self.daemon.kill9()
                if not always:
                    self.required = {subject: [] for subject in SUBJECTS}
            else:
                self.daemon.term()
            self.settle(lambda sent: always)
            self.notes.append("start while full")
            self.begin()
            self.pause(0.1, 0.3)
            freed = self.room_again(always)
            self.pause(0.2, 0.5)
            freed = self.still_room(freed, always)
            self.daemon.term()
            self.settle(lambda sent: always or sent > freed)
        self.final()

    def kind_damage(self):
        self.begin()
        self.pause()
        self.daemon.term()
        self.settle(lambda sent: True)
        self.begin()
        self.pause()
        self.daemon.kill9()
        self.settle(lambda sent: True)
        self.damage(self.kind)
        self.final()

    def set_rules(self, rules):
        for subject in SUBJECTS:
            before, after = coverage(self.rules, subject), coverage(rules, subject)
            if not before or not after:
                self.required[subject] = []
            elif after < before:
                self.required[subject] = self.required[subject][-after:]
        self.rules = rules

    def kind_reload(self):
        steps = [["one"], ["removed"], ["narrowed"], ["one", "full"], ["removed", "full"],
                 ["narrowed", "full"]][self.turn % 6]
        self.notes.append("rules " + ">".join(["full"] + steps))
        self.begin()
        self.pause()
        changed = 0.0
        for name in steps:
            self.set_rules(RULE_SETS[name])
            self.write_config()
            self.daemon.reload()
            changed = time.monotonic()
            self.pause()
        self.daemon.kill9()
        self.settle(lambda sent: sent > changed)
        self.final()

    def kind_seam(self):
        what = ["write", "sync", "tear"][self.turn % 3]
        if what == "tear":
            faults = f"tear={self.rng.randrange(1, 400000)}"
        else:
            code = self.rng.choice(["ENOSPC", "EIO"]) if what == "write" else "EIO"
            faults = f"{what}={code}@{self.rng.randrange(1, 40)}"
            if self.rng.random() < 0.5:
                faults += f"x{self.rng.randrange(1, 10)}"
        self.notes.append(faults)
        self.begin(faults=faults)
        self.pause(0.2, 0.8)
        self.daemon.kill9()
        self.settle(lambda sent: True)
        self.final()

    def play(self):
        try:
            os.makedirs(self.directory, exist_ok=True)
            getattr(self, "kind_" + ("damage" if self.kind in ("flip", "zero", "truncate") else self.kind))()
        except Violation as violation:
            self.problems.append(str(violation))
        except (OSError, EOFError, ValueError, KeyError, subprocess.TimeoutExpired) as error:
            self.problems.append(f"start {self.cycle}: {type(error).__name__}: {error}")
        finally:
            for part in (self.publisher, self.subscriber):
                if part:
                    part.stop()
            if self.daemon and self.daemon.process.poll() is None:
                self.daemon.kill9()
            self.free()
        return not self.problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fanoutd", default=default_fanoutd())
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--max-seconds", type=float, default=3600)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--first-round", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(ALL_KINDS))
    parser.add_argument("--verbose", action="store_true", help="a line for every round, not only failing ones")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, history dirs)")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else random.randrange(1 << 31)
    kinds = [k for k in options.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown:
        parser.error(f"unknown kinds {unknown}; known: {','.join(ALL_KINDS)}")
    if not os.access(options.fanoutd, os.X_OK):
        parser.error(f"no fanoutd at {options.fanoutd}")
    run = Run(options)
    # A run stopped by SIGTERM still stops its servers and unmounts its tmpfs (the `finally` below).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(143))
    print(f"crash_check: {options.fanoutd}, seed {seed}, kinds {','.join(kinds)}, scratch {run.work}", flush=True)
    if "enospc" in kinds:
        why = "not root" if os.geteuid() != 0 else run.mount_tmpfs()
        if why:
            print(f"crash_check: skipping enospc: cannot mount a {TMPFS_BYTES >> 20} MiB tmpfs ({why})", flush=True)
            kinds.remove("enospc")
    if "seam" in kinds and not run.seam:
        print("crash_check: skipping seam: this fanoutd has no FANOUTD_HISTORY_FAULTS", flush=True)
        kinds.remove("seam")
    if not kinds:
        print("0 passed, 0 failed")
        run.close()
        return 2
    started = time.monotonic()
    passed = failed = 0
    failures = {}
    try:
        for number in range(options.first_round, options.first_round + options.rounds):
            if time.monotonic() - started > options.max_seconds:
                print(f"crash_check: stopped after {options.max_seconds:.0f} s", flush=True)
                break
            kind = kinds[number % len(kinds)]
            this = Round(run, number, kind, random.Random(f"{seed}:{number}"), number // len(kinds))
            if this.play():
                passed += 1
                if options.verbose:
                    print(f"ok round {number} {kind} [{'; '.join(this.notes)}]", flush=True)
                shutil.rmtree(this.directory, ignore_errors=True)
            else:
                failed += 1
                failures[kind] = failures.get(kind, 0) + 1
                print(f"FAIL round {number} {kind} [{'; '.join(this.notes)}]: {' | '.join(this.problems[:3])}"
                      f"{f' (+{len(this.problems) - 3} more)' if len(this.problems) > 3 else ''}; "
                      f"again: {sys.argv[0]} --fanoutd {options.fanoutd} --seed {seed} --first-round {number} "
                      f"--rounds 1 --kinds {','.join(kinds)}", flush=True)
                if not options.keep:
                    shutil.rmtree(this.directory, ignore_errors=True)
    finally:
        if options.keep:
            print(f"crash_check: kept {run.work}" + (f" (umount {run.mount} when done)" if run.mount else ""),
                  flush=True)
            for daemon in run.daemons:
                if daemon.process.poll() is None:
                    daemon.process.kill()
        else:
            run.close()
    if failures:
        print("crash_check: failed rounds by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(failures.items())))
    print(f"crash_check: {time.monotonic() - started:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else (0 if passed else 2)


if __name__ == "__main__":
    sys.exit(main())
