"""Server-Sent Events in the differential: an event stream of a pattern gets exactly the messages a TCP
subscriber of that pattern gets (subject, seq, payload bytes, in order), whoever published them: TCP PUB and
BPUB (any bytes: CR, LF, NUL, not UTF-8), WebSocket text and binary frames, POST /publish. A question to a
subject that only an event stream watches closes at once with nobody asked, and text a client chose (payloads,
questions with CRs shaped as event-stream lines) never becomes an event of its own.

Usage: transport_differential_sse.py sse HTTP_PORT TCP_PORT
The stream is parsed as the HTML Standard's event-stream rules say (CR, LF and CRLF each end a line; an empty
line dispatches; `:` starts a comment), so a line a payload forged would show as an event or a field. Every
wait is bounded (TIMEOUT seconds). Prints "ok sse" and exits 0 when every expectation holds.
"""
import base64
import codecs
import json
import os
import socket
import sys

from transport_differential import TIMEOUT, WebSocketPeer, expect, http_publish, masked, message

FORGED = b'data: {"subject":"%s","seq":999,"payload":"forged"}'


class EventStream:
    """A raw `GET /events` client: the response head, then the body as events, parsed strictly."""

    def __init__(self, port, query):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.sendall(b"GET /events?%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (query, port))
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            expect(chunk, f"stream {query!r} closed before its head: {response!r}")
            response += chunk
        head, _, body = response.partition(b"\r\n\r\n")
        expect(head.startswith(b"HTTP/1.1 200"), f"stream {query!r}: {head!r}")
        expect(b"content-type: text/event-stream" in head.lower(), f"stream {query!r}: {head!r}")
        # The stream is UTF-8; bytes that are not would be a payload the server failed to encode.
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.text, self.started = "", False
        self.data, self.type, self.last_id = "", "", ""
        self.events, self.comments, self.odd_fields = [], [], []
        self.feed(body)

    def feed(self, data):
        self.text += self.decoder.decode(data)
        if not self.started and self.text:
            self.started = True
            if self.text.startswith("\ufeff"):
                self.text = self.text[1:]
        while True:
            ends = [i for i in (self.text.find("\r"), self.text.find("\n")) if i >= 0]
            if not ends:
                return
            end = min(ends)
            if self.text[end] == "\r" and end + 1 == len(self.text):
                return  # a CR last: an LF may follow in the next read, and CRLF is one line end
            after = end + 2 if self.text[end:end + 2] == "\r\n" else end + 1
            line, self.text = self.text[:end], self.text[after:]
            self.line(line)

    def line(self, line):
        if line == "":
            return self.dispatch()
        if line.startswith(":"):
            return self.comments.append(line[1:])
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self.data += value + "\n"
        elif field == "event":
            self.type = value
        elif field == "id":
            if "\0" not in value:
                self.last_id = value
        elif field == "retry" and value.isdigit() and value.isascii():
            pass
        else:
            self.odd_fields.append(line)  # the server sends no other field: a line someone forged

    def dispatch(self):
        if self.data == "":
            self.type = ""
            return
        self.events.append((self.type or "message", self.data[:-1], self.last_id))
        self.data, self.type = "", ""

    def read_until(self, found):
        """Reads until `found(events)` holds."""
        while not found(self.events):
            chunk = self.sock.recv(65536)
            expect(chunk, f"stream closed; events so far {self.events!r}")
            self.feed(chunk)

    def subscribed(self):
        """Waits for the comment that carries the subscription's reply (`+OK ...`)."""
        while not any(c.startswith(" +OK ") for c in self.comments):
            chunk = self.sock.recv(65536)
            expect(chunk, f"stream closed before its subscription's reply: {self.comments!r}")
            self.feed(chunk)


def as_message(event):
    """An event's message as (subject, seq, payload bytes, was base64)."""
    kind, data, _ = event
    expect(kind == "message", f"an event that is not a message: {event!r}")
    fields = json.loads(data)
    expect(set(fields) in ({"subject", "seq", "payload"}, {"subject", "seq", "payload_base64"}), f"{event!r}")
    if "payload_base64" in fields:
        payload = base64.b64decode(fields["payload_base64"], validate=True)
        return fields["subject"].encode(), fields["seq"], payload, True
    return fields["subject"].encode(), fields["seq"], fields["payload"].encode("utf-8"), False


class LinePeer:
    """A TCP connection read exactly: a line is everything before its LF (a CR before it is payload), and a
    BMSG carries its bytes; so the reference keeps every byte a message had."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.data, self.token = b"", 0
        expect(self.unit()[1].startswith(b"+HELLO "), "greeting")

    def unit(self):
        while True:
            newline = self.data.find(b"\n")
            if newline >= 0:
                line = self.data[:newline]
                if line.startswith(b"BMSG "):
                    end = newline + 1 + int(line.split(b" ")[3])
                    if len(self.data) > end:
                        expect(self.data[end:end + 1] == b"\n", f"BMSG not ended by LF: {self.data[:end + 2]!r}")
                        unit, self.data = ("BMSG", line, self.data[newline + 1:end]), self.data[end + 1:]
                        return unit
                else:
                    self.data = self.data[newline + 1:]
                    return ("LINE", line)
            chunk = self.sock.recv(65536)
            expect(chunk, f"connection closed; unread {self.data!r}")
            self.data += chunk

    def run(self, data):
        """Sends `data` and a PING; everything received before its PONG."""
        self.token += 1
        pong = b"+PONG ~%d" % self.token
        self.sock.sendall(data + b"PING ~%d\n" % self.token)
        units = []
        while (unit := self.unit()) != ("LINE", pong):
            units.append(unit)
        return units


def replies(units):
    return [u[1] for u in units if u[0] == "LINE" and (u[1].startswith(b"+") or u[1].startswith(b"-ERR"))]


def pushed(units):
    """The messages among `units` as (subject, seq, payload bytes, came as BMSG)."""
    out = []
    for unit in units:
        if unit[0] == "BMSG":
            _, subject, seq, _ = unit[1].split(b" ")
            out.append((subject, int(seq), unit[2], True))
        elif unit[1].startswith(b"MSG "):
            _, subject, seq, payload = unit[1].split(b" ", 3)
            out.append((subject, int(seq), payload, False))
    return out


def publish_all(prefix, http, tcp):
    """Publishes on `prefix.*` by every kind of publisher; (subject, payload) of each accepted, in order."""
    sent = []
    m, forged = prefix + b".m", FORGED % (prefix + b".m")
    # Well-formed UTF-8 at its edges, and the sequences a lax decoder takes: a surrogate, an overlong form,
    # past U+10FFFF, a cut sequence.
    edges = [b"\xf0\x9f\x98\x80 \xef\xbb\xbf \xe2\x80\xa8", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80",
             b"\xe2\x82"]
    tcp_lines = edges + [b"plain", b"x\ry", b"tail\r\r", b"x\r" + forged + b"\r\rid: 1\r\r", b"a\x00b",
                         b"\xff\xfe not utf-8", "é “quotes” \"json\" \\ back\ttab".encode(), b"", b"two  spaces "]
    a = LinePeer(tcp)
    for payload in tcp_lines:
        got = replies(a.run(b"PUB %s %s\n" % (m, payload)))
        expect(len(got) == 1, f"PUB {payload!r}: {got!r}")
        if got[0].startswith(b"+OK "):
            # PUB's line loses one CR before its LF, as every line does.
            sent.append((m, payload[:-1] if payload.endswith(b"\r") else payload))
    run_payloads = [b"run %d\r%s" % (n, forged) for n in range(5)]
    got = replies(a.run(b"".join(b"PUB %s.r %s\n" % (prefix, p) for p in run_payloads)))
    expect(len(got) == 5 and all(g.startswith(b"+OK ") for g in got), f"a run of PUBs: {got!r}")
    sent += [(prefix + b".r", p) for p in run_payloads]
    large = bytes(range(256)) * 400  # over max_line: a BMSG, whatever its bytes
    bpubs = edges + [large, b"\xc3\xa9" * 40000, b"a\nb", b"\r", b"\r\n", b"\x00", b"\xff\x00\xfe", b"",
                     b"\n\n" + forged + b"\n\n", b"cr\r" + forged + b"\r\r", b"ends in cr\r", b"\r\n" * 3 + b"\x00\xc3"]
    for payload in bpubs:
        got = replies(a.run(b"BPUB %s %d\n%s\n" % (m, len(payload), payload)))
        expect(len(got) == 1 and got[0].startswith(b"+OK "), f"BPUB {payload!r}: {got!r}")
        sent.append((m, payload))
    ws = WebSocketPeer(http, "binary-whole")
    frames = [(False, b"PUB %s ws text\r%s\r\r\n" % (m, forged), b"ws text\r" + forged + b"\r"),
              (False, b"BPUB %s 4\nt\n\rx" % m, b"t\n\rx"),
              (True, b"PUB %s ws \xfe\xff binary\n" % m, b"ws \xfe\xff binary"),
              (True, b"BPUB %s 5\n\xff\r\x00\n\r\n" % m, b"\xff\r\x00\n\r")]
    for binary, frame, payload in frames:
        ws.send_frames(message(frame, binary) + masked(1, b"PING last"))
        got = []
        while (unit := ws.unit()) != ("LINE", b"+PONG last"):
            got.append(unit)
        kind = "binary" if binary else "text"
        expect(len(replies(got)) == 1 and replies(got)[0].startswith(b"+OK "), f"WebSocket {kind} {frame!r}: {got!r}")
        sent.append((m, payload))
    ws.close()
    for body in [large, b"two\nlines \xff", b"cr\r" + forged + b"\r\r", b"\x00\r\n", b"plain post"]:
        status = http_publish(http, m, body)
        expect(status.startswith(b"HTTP/1.1 200"), f"POST /publish {body!r}: {status!r}")
        sent.append((m, body))
    return a, sent


def check_sse(http, tcp):
    prefix, watched = b"e%d" % os.getpid(), b"w%d.only" % os.getpid()
    p = LinePeer(tcp)
    expect(replies(p.run(b"SUB %s.>\n" % prefix)) == [b"+OK 1"], "the TCP subscriber's SUB")
    pattern = EventStream(http, b"subject=%s.%%3E" % prefix)
    single = EventStream(http, b"subject=%s.m" % prefix)
    alone = EventStream(http, b"subject=%s&subject=w%d.p.%%3E" % (watched, os.getpid()))
    pair = EventStream(http, b"subject=%s.r&subject=%s.m" % (prefix, prefix))
    for stream in (pattern, single, alone, pair):
        stream.subscribed()
    a, sent = publish_all(prefix, http, tcp)
    # Questions: to a subject only an event stream watches (nobody is asked, DONE at once, though the timeout
    # is a minute), and to one a TCP subscriber watches too (only it is asked), each with CRs shaped as lines.
    forged_ask = b"x\r" + FORGED % watched + b"\r\rZ"
    by_pattern = b"w%d.p.x" % os.getpid()  # watched by the stream's pattern (SUB), not its RESUME
    for subject, question in ((watched, b"q"), (watched, forged_ask), (by_pattern, forged_ask)):
        units = a.run(b"ASK %s 60000 0 %s\n" % (subject, question))
        qid = units[0][1].split(b" ")[1] if units and units[0][1].startswith(b"+OK ") else b"?"
        done = [("LINE", b"+OK %s 0" % qid), ("LINE", b"DONE %s asked=0 answered=0 gone=0" % qid)]
        expect(units == done, f"ASK {subject!r} {question!r}: a subject only an event stream watches: {units!r}")
    m = prefix + b".m"
    got = a.run(b"ASK %s 100 0 %s\n" % (m, b"x\r" + FORGED % m + b"\r\rZ"))
    expect(len(replies(got)) == 1 and replies(got)[0].endswith(b" 1"), f"ASK to the TCP subscriber: {got!r}")
    qid = replies(got)[0].split(b" ")[1]
    done = a.unit()
    expect(done == ("LINE", b"DONE %s asked=1 answered=0 gone=0" % qid), f"the question's end: {done!r}")
    for subject in (m, watched):
        expect(replies(a.run(b"PUB %s ~end\n" % subject))[0].startswith(b"+OK "), "end mark")
    sent.append((m, b"~end"))
    units = p.run(b"")
    asks = [u for u in units if u[0] == "LINE" and u[1].startswith(b"ASK ")]
    expect(asks == [("LINE", b"ASK %s %s x\r%s\r\rZ" % (m, qid, FORGED % m))], f"the question to TCP: {asks!r}")
    reference = pushed(units)
    expect([(s, b) for s, _, b, _ in reference] == sent, f"TCP got {reference!r}\n    sent {sent!r}")
    for subject in {s for s, _ in sent}:
        seqs = [seq for s, seq, _, _ in reference if s == subject]
        expect(seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"{subject!r} seqs {seqs!r}")

    def ends(events):
        return any(e[0] == "message" and json.loads(e[1]).get("payload") == "~end" for e in events)

    failures = []
    for name, stream, expected in [("pattern", pattern, reference),
                                   ("single", single, [r for r in reference if r[0] == m]),
                                   ("pair", pair, [r for r in reference if r[0] in (prefix + b".r", m)])]:
        stream.read_until(ends)
        got = [as_message(e) for e in stream.events]
        if [g[:3] for g in got] != [r[:3] for r in expected]:
            failures.append(f"{name} stream:\n    got {got!r}\n    tcp {expected!r}")
        if any(r[3] and not g[3] for g, r in zip(got, expected)):
            failures.append(f"{name} stream: a BMSG's payload not as payload_base64: {got!r}")
        ids = [e[2] for e in stream.events]
        want = [""] * len(ids) if name == "pattern" else [f":{r[1]}" for r in expected]
        if name == "pair":  # an id holds the last seq of each of the URL's subjects, in the URL's order
            last = {prefix + b".r": 0, m: 0}
            want = []
            for r in expected:
                last[r[0]] = r[1]
                want.append(f":{last[prefix + b'.r']},{last[m]}")
        if not all(i.endswith(w) and (w or not i) for i, w in zip(ids, want)):
            failures.append(f"{name} stream: ids {ids!r}, expected ending {want!r}")
    alone.read_until(ends)
    got = [as_message(e)[:3] for e in alone.events]
    if got != [(watched, 1, b"~end")]:
        failures.append(f"the watched-only stream: {alone.events!r}")
    for name, stream in [("pattern", pattern), ("single", single), ("watched", alone), ("pair", pair)]:
        if stream.odd_fields or "forged" in repr(stream.comments):
            failures.append(f"{name} stream: forged lines {stream.odd_fields!r}, comments {stream.comments!r}")
        stream.sock.close()
    a.sock.close()
    p.sock.close()
    expect(not failures, "\n".join(failures))


if __name__ == "__main__":
    name, http, tcp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        {"sse": check_sse}[name](http, tcp)
    except AssertionError as error:
        print(f"FAIL {name}: {error}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)
