"""Differential transport check: one scripted session of every verb, run over TCP and over WebSocket framed
every way (text and binary frames, whole, two commands to a frame, one-byte continuation frames, one byte per
write), must give the same transcript: the same replies, exactly one per command, and the same bytes pushed.

Usage: transport_differential.py CHECK HTTP_PORT TCP_PORT
  CHECK is "all" (every mode against TCP) or "issue" (the framing cases of issue 35 with their expected replies).
Prints "ok CHECK" and exits 0 when every expectation holds. Raw sockets throughout, so that the framing is
exactly what the table says; every wait is bounded (TIMEOUT seconds).
"""
import base64
import os
import socket
import struct
import sys

from ws_frames import masked

TIMEOUT = 10


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def is_utf8(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class Units:
    """The server's byte stream as units: a line (its LF removed; a CR before it stays, as a payload's last
    byte) or a BMSG with its bytes, exactly as the protocol frames them on TCP."""

    def __init__(self):
        self.data = b""

    def feed(self, data):
        self.data += data

    def next(self):
        newline = self.data.find(b"\n")
        if newline < 0:
            return None
        line = self.data[:newline]
        if line.startswith(b"BMSG "):
            length = int(line.split(b" ")[3])
            end = newline + 1 + length
            if len(self.data) < end + 1:
                return None
            expect(self.data[end:end + 1] == b"\n", f"BMSG bytes not followed by LF: {self.data[:end + 2]!r}")
            unit = ("BMSG", line, self.data[newline + 1:end])
            self.data = self.data[end + 1:]
            return unit
        self.data = self.data[newline + 1:]
        return ("LINE", line)


class TCPPeer:
    def __init__(self, port, one_byte=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.units = Units()
        self.one_byte = one_byte
        hello = self.unit()
        expect(hello[0] == "LINE" and hello[1].startswith(b"+HELLO fanout/1 "), f"greeting {hello!r}")

    def send(self, commands):
        data = b"".join(commands)
        if self.one_byte:
            for index in range(len(data)):
                self.sock.sendall(data[index:index + 1])
        else:
            self.sock.sendall(data)

    def unit(self):
        while True:
            unit = self.units.next()
            if unit is not None:
                return unit
            chunk = self.sock.recv(65536)
            if not chunk:
                return ("CLOSED",)
            self.units.feed(chunk)

    def close(self):
        self.sock.close()


def message(payload, binary, fragment=None):
    """One message as frames: whole, or in continuation frames of `fragment` bytes."""
    opcode = 2 if binary else 1
    if fragment is None or len(payload) <= fragment:
        return masked(opcode, payload)
    pieces = [payload[i:i + fragment] for i in range(0, len(payload), fragment)]
    frames = [masked(opcode, pieces[0], fin=False)]
    frames += [masked(0, piece, fin=False) for piece in pieces[1:-1]]
    frames.append(masked(0, pieces[-1], fin=True))
    return b"".join(frames)


class WebSocketPeer:
    """A raw WebSocket client. `mode` says how commands become frames: text or binary, one command a frame
    ("whole", its last LF left off for text as a browser sends it), two commands a frame ("pairs"), one-byte
    continuation frames ("frag1"), or whole binary frames written one byte at a time ("bytes1"). Commands that
    are not UTF-8 go in binary frames in the text modes, as a browser client sends them."""

    def __init__(self, port, mode):
        self.mode = mode
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            expect(chunk, "closed during the handshake")
            response += chunk
        head, _, self.raw = response.partition(b"\r\n\r\n")
        expect(head.startswith(b"HTTP/1.1 101"), f"handshake: {head!r}")
        self.units = Units()
        self.close_code = None
        hello = self.unit()
        expect(hello[0] == "LINE" and hello[1].startswith(b"+HELLO fanout/1 "), f"greeting {hello!r}")

    def frames_for(self, commands):
        binary_mode = self.mode.startswith("binary") or self.mode == "bytes1"
        if self.mode.endswith("pairs"):
            groups = [commands[i:i + 2] for i in range(0, len(commands), 2)]
        else:
            groups = [[command] for command in commands]
        out = b""
        for group in groups:
            payload = b"".join(group)
            binary = binary_mode or not is_utf8(payload)
            if self.mode == "text-whole" and not binary:
                payload = payload[:-1]
            out += message(payload, binary, fragment=1 if self.mode.endswith("frag1") else None)
        return out

    def send(self, commands):
        data = self.frames_for(commands)
        if self.mode == "bytes1":
            for index in range(len(data)):
                self.sock.sendall(data[index:index + 1])
        else:
            self.sock.sendall(data)

    def send_frames(self, data):
        self.sock.sendall(data)

    def need(self, count):
        while len(self.raw) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                return False
            self.raw += chunk
        return True

    def unit(self):
        while True:
            unit = self.units.next()
            if unit is not None:
                return unit
            if self.close_code is not None or not self.need(2):
                return ("CLOSED",)
            fin_opcode, length = self.raw[0], self.raw[1] & 0x7F
            offset = 2
            if length == 126:
                self.need(4)
                length, offset = struct.unpack("!H", self.raw[2:4])[0], 4
            elif length == 127:
                self.need(10)
                length, offset = struct.unpack("!Q", self.raw[2:10])[0], 10
            expect(self.need(offset + length), "closed mid-frame")
            payload = self.raw[offset:offset + length]
            self.raw = self.raw[offset + length:]
            expect(fin_opcode & 0x80, "the server fragments nothing")
            opcode = fin_opcode & 0x0F
            if opcode == 1:
                expect(is_utf8(payload), f"a text frame that is not UTF-8: {payload!r}")
                expect(not payload.endswith(b"\n"), f"a text frame holds a line without its LF: {payload!r}")
                self.units.feed(payload + b"\n")
            elif opcode == 2:
                # A binary frame holds output exactly as TCP carries it: whole units, line ends included.
                expect(payload.endswith(b"\n"), f"a binary frame that is not whole lines: {payload!r}")
                self.units.feed(payload)
            elif opcode == 8:
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                return ("CLOSE", self.close_code)

    def close(self):
        self.sock.close()


def is_reply(unit):
    return unit[0] == "LINE" and (unit[1].startswith(b"+") or unit[1].startswith(b"-ERR"))


class Session:
    """Runs steps against one connection under test (`a`) and a TCP peer (`p`), recording what each sees."""

    def __init__(self, a, p, prefix):
        self.a, self.p, self.prefix = a, p, prefix
        self.ids = {}
        self.sentinel = 0
        self.transcript = []

    def register(self, question_id):
        if question_id not in self.ids.values():
            self.ids["q%d" % len(self.ids)] = question_id

    def fill(self, command):
        command = command.replace(b"S.", self.prefix.encode() + b".")
        for name, value in self.ids.items():
            command = command.replace(b"{" + name.encode() + b"}", value)
        return command

    def drain(self, peer):
        """Everything `peer` receives before the reply to a PING sent now (in its own frame)."""
        self.sentinel += 1
        token = b"~%d" % self.sentinel
        peer.send([b"PING " + token + b"\n"])
        units = []
        while True:
            unit = peer.unit()
            expect(unit[0] != "CLOSED", f"connection closed; so far {units!r}")
            if unit == ("LINE", b"+PONG " + token):
                return units
            units.append(unit)

    def normal(self, unit, loose):
        if unit[0] == "BMSG":
            _, subject, seq, _ = unit[1].split(b" ")
            unit = ("MSG", subject, seq, unit[2])
        elif unit[0] == "LINE" and unit[1].startswith(b"MSG "):
            _, subject, seq, payload = unit[1].split(b" ", 3)
            unit = ("MSG", subject, seq, payload)
        elif unit[0] == "LINE":
            line = unit[1]
            if line.startswith(b"ASK "):
                self.register(line.split(b" ")[2])
            if line.startswith(b"ANSWER "):
                parts = line.split(b" ", 3)
                line = b" ".join(parts[:2] + [b"<client>"] + parts[3:])
            if loose and is_reply(unit):
                line = line.split(b" ")[0] + b" ..."
            if line.startswith(b"+OK ") and b"=" in line and line.split(b" ")[2:3] != []:
                head, *entries = line.split(b" ")
                if all(b"=" in e and b"," not in e for e in entries[1:]) and entries and entries[0].isdigit():
                    line = b" ".join([head, entries[0]] + sorted(entries[1:]))  # CHANNELS lists in no order
            unit = ("LINE", line)
        text = repr(unit).replace(self.prefix, "S")
        for name, value in sorted(self.ids.items(), key=lambda item: -len(item[1])):
            text = text.replace(value.decode(errors="replace"), "{" + name + "}")
        return text

    def step(self, who, commands, replies, loose=False, then_close=False):
        sender, other = (self.a, self.p) if who == "a" else (self.p, self.a)
        filled = [self.fill(c) for c in commands]
        sender.send(filled)
        if then_close:
            units = []
            while True:
                unit = sender.unit()
                if unit[0] in ("CLOSED", "CLOSE"):
                    break
                units.append(unit)
        else:
            units = self.drain(sender)
        got = sum(1 for u in units if is_reply(u))
        expect(got == replies, f"{who} {[c[:60] for c in filled]!r}: {got} replies, expected {replies}: {units!r}")
        for unit in units:
            if is_reply(unit) and unit[1].startswith(b"+OK ") and filled[0].startswith(b"ASK "):
                self.register(unit[1].split(b" ")[1])
        seen = [self.normal(u, loose) for u in units]
        pushed = [self.normal(u, False) for u in self.drain(other)] if not then_close else []
        self.transcript.append((who, [repr(c)[:60] for c in commands], seen, pushed))


def http_publish(port, subject, body):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    sock.sendall(b"POST /publish/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (subject, len(body)) + body)
    response = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            break
        response += chunk
    sock.close()
    return response.split(b"\r\n")[0]


def session(http, tcp, mode, run):
    prefix = f"d{run}{os.getpid()}"
    a = TCPPeer(tcp, one_byte=(mode == "tcp1")) if mode.startswith("tcp") else WebSocketPeer(http, mode)
    p = TCPPeer(tcp)
    s = Session(a, p, prefix)
    s.step("p", [b"SUB S.a S.b.>\n", b"QSUB g S.q\n", b"SUB S.r\n"], 3)
    s.step("a", [b"PING\n", b"PING two  words\n", b"HELP\n", b"\n", b"PING\r\n"], 4)
    s.step("a", [b"INFO\n", b"CLIENTS\n"], 2, loose=True)
    s.step("a", [b"SUB S.m S.n.>\n", b"QSUB grp S.g\n", b"UNSUB S.n.>\n", b"sub S.x\n", b"CHANNELS S.>\n"], 5)
    s.step("a", [b"PUB S.a hello  world \n", b"PUB S.a \n", b"PUB S.a\n", b"PUB S.* x\n", b"PUB a..b x\n",
                 b"FOO bar\n", b"UNSUB\n", b"SUB S.m\n"], 8)
    s.step("a", [b"BPUB S.a 5\nab\ncd\n", b"BPUB S.a 0\n\n", b"BPUB S.b.c 3\n\xff\x00\xfe\n",
                 b"BPUB S.a 9\nPING evil\n", b"BPUB bad..s 3\nxyz\n", b"BPUB S.a 3\r\nabc\r\n", b"BPUB S.a x\n",
                 b"BPUB S.a 5000\n" + b"z" * 5000 + b"\n", b"PUB S.latin \xff\xfe not utf-8\n"], 9)
    s.step("a", [b"RESUME S.h\n", b"LAST S.h 2\n", b"RESUME S.h nope 3\n", b"RESUME S.*\n", b"WHO S.a\n",
                 b"KICK 999999\n", b"AUTH token\n"], 7)
    # A asks, P (a TCP subscriber) is asked with the exact bytes and answers with others.
    s.step("a", [b"ASK S.r 5000 1 \xff\xfe?\n", b"ASK S.* 5000 0 x\n", b"ASK S.r 0 0 x\n"], 3)
    s.step("p", [b"ANSWER {q0} \xfe\xff!\n"], 1)
    # P asks, A is asked and answers.
    s.step("p", [b"ASK S.m 5000 1 \xff\xfe q\n"], 1)
    s.step("a", [b"ANSWER {q1} \xfe\xff a\n", b"ANSWER {q1} again\n", b"ANSWER bad!id x\n"], 3)
    # Pushes of every shape reach A.
    s.step("p", [b"PUB S.m plain\n", b"BPUB S.m 3\na\nb\n", b"BPUB S.m 2\n\xff\xfe\n", b"PUB S.m \xc3\xa9 utf8\n",
                 b"BPUB S.m 0\n\n", b"PUB S.m \n", b"PUB S.m a CR at the end\r\r\n"], 7)
    status = http_publish(http, prefix.encode() + b".m", b"two\nlines \xff")
    expect(status.startswith(b"HTTP/1.1 200"), f"POST /publish: {status!r}")
    s.transcript.append(("http", [], [], [s.normal(u, False) for u in s.drain(a)]))
    s.step("a", [b"QUIT\n"], 1, then_close=True)
    if isinstance(a, WebSocketPeer):
        expect(a.close_code == 1000, f"QUIT's close code {a.close_code}")
    a.close()
    p.close()
    return s.transcript


def check_all(http, tcp):
    reference = session(http, tcp, "tcp", 0)
    modes = ["tcp1", "text-whole", "binary-whole", "text-pairs", "binary-pairs", "text-frag1", "binary-frag1",
             "bytes1"]
    failures = []
    for run, mode in enumerate(modes, start=1):
        try:
            transcript = session(http, tcp, mode, run)
        except AssertionError as error:
            failures.append(f"{mode}: {error}")
            continue
        for expected, got in zip(reference, transcript):
            if expected != got:
                failures.append(f"{mode}: step {got[1]}\n    tcp: {expected[2:]}\n    {mode}: {got[2:]}")
                break
    expect(not failures, "\n".join(failures))


def check_issue(http, tcp):
    """Issue 35's framing cases, each with the one reply it must get, then a PING that must still answer."""
    cases = [
        (1, b"BPUB x 0", [b"+OK 0"]),
        (1, b"BPUB y 9\nPING evil\n", [b"+OK 0"]),
        (2, b"BPUB a..b 3", [b"-ERR bad-subject"]),
        (2, b"BPUB y 3", [b"-ERR syntax"]),
        (2, b"PING one\nPING two\n", [b"+PONG one", b"+PONG two"]),
        (2, b"PING one\nPING two", [b"+PONG one", b"+PONG two"]),
        (2, b"BPUB y 3\nab", [b"-ERR syntax"]),
        (2, b"BPUB y 3\nabcd\nPING lost\n", [b"-ERR syntax"]),
        (2, b"BPUB y 2\nab\nPING after\n", [b"+OK 0", b"+PONG after"]),
        (1, b"PING a\nBPUB y 1\nb\nPING c", [b"+PONG a", b"+OK 0", b"+PONG c"]),
    ]
    for opcode, payload, replies in cases:
        for fragment in (None, 1):
            ws = WebSocketPeer(http, "binary-whole")
            ws.send_frames(message(payload, opcode == 2, fragment))
            ws.send_frames(masked(1, b"PING last"))
            got = []
            while True:
                unit = ws.unit()
                expect(unit[0] == "LINE", f"{payload!r}: {unit!r} after {got!r}")
                if unit[1] == b"+PONG last":
                    break
                got.append(unit[1])
            ok = len(got) == len(replies) and all(g.startswith(r) for g, r in zip(got, replies))
            expect(ok, f"{'binary' if opcode == 2 else 'text'} {payload!r} (fragments {fragment}): {got!r}, "
                       f"expected {replies!r}")
            ws.close()


def replies_until_last(ws):
    got = []
    while True:
        unit = ws.unit()
        expect(unit[0] == "LINE", f"{unit!r} after {len(got)} replies")
        if unit[1] == b"+PONG last":
            return got
        got.append(unit[1])


def check_held(http, tcp):
    """Commands after one that stops reading in the middle of a message (a failed AUTH's pause; output over the
    pause mark; a turn used up) wait for reading to resume and are answered, in order, as on TCP."""
    for binary in (False, True):
        ws = WebSocketPeer(http, "binary-whole")
        ws.send_frames(message(b"AUTH wrong-token\nPING after the pause\n", binary))
        ws.send_frames(masked(1, b"PING last"))
        got = replies_until_last(ws)
        expect(len(got) == 2 and got[0].startswith(b"-ERR denied") and got[1] == b"+PONG after the pause",
               f"{'binary' if binary else 'text'} frame: {got!r}")
        ws.close()
    ws = WebSocketPeer(http, "binary-whole")
    count, filler = 600, b"p" * 1000
    ws.send_frames(message(b"".join(b"PING %d %s\n" % (n, filler) for n in range(count)), True))
    ws.send_frames(masked(1, b"PING last"))
    got = replies_until_last(ws)
    expected = [b"+PONG %d %s" % (n, filler) for n in range(count)]
    expect(got == expected, f"{len(got)} replies to {count} PINGs in one binary frame; first wrong: "
                            f"{next((g[:20] for g, e in zip(got, expected) if g != e), None)!r}")
    ws.close()


CHECKS = {"all": check_all, "issue": check_issue, "held": check_held}

if __name__ == "__main__":
    name, http, tcp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        CHECKS[name](http, tcp)
    except AssertionError as error:
        print(f"FAIL {name}: {error}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)
