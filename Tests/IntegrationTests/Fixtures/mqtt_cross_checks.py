"""MQTT and fanout's other transports meeting: paho-mqtt against fanoutd's MQTT listener, and a TCP line client,
a WebSocket (the `websockets` library) or a Server-Sent Events stream on the same server. Payload bytes cross
unchanged; topics and subjects map as docs/mqtt.md says; credentials are those of tests' auth.yaml.

Usage: mqtt_cross_checks.py CHECK HTTP_PORT TCP_PORT MQTT_PORT
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
"""
import asyncio
import base64
import json
import re

from mqtt_checks_common import SUBACK_FAILURE, Peer, RawClient, drained, expect, publish_packet, run
from transport_differential import TCPPeer
from transport_differential_sse import EventStream
from websocket_checks import greeted, recv

ALL_BYTES = bytes(range(256))
MSG = re.compile(rb"MSG (\S+) (\d+) (.*)", re.S)


def command(peer, line):
    """Sends one protocol line and returns the reply line."""
    peer.send([line.encode() + b"\n"])
    return line_of(peer, f"reply to {line}")


def line_of(peer, what):
    unit = peer.unit()
    expect(unit[0] == "LINE", f"{what}: {unit!r}")
    return unit[1].decode(errors="replace")


def subscribed(peer, patterns):
    """SUB's reply counts the connection's subscriptions, these included."""
    reply = command(peer, "SUB " + " ".join(patterns))
    expect(re.fullmatch(r"\+OK \d+", reply) and int(reply[4:]) >= len(patterns), f"SUB {patterns}: {reply}")


def expect_msg(peer, subject, payload, what=None):
    """The next unit is MSG `subject` with this payload (a line client's form of a message)."""
    what = what or f"MSG {subject}"
    unit = peer.unit()
    match = MSG.fullmatch(unit[1]) if unit[0] == "LINE" else None
    expect(match is not None and match.group(1).decode() == subject and match.group(3) == payload,
           f"{what}: got {unit!r}")


def expect_bmsg(peer, subject, payload, what=None):
    """The next unit is BMSG `subject` with exactly these bytes."""
    what = what or f"BMSG {subject}"
    unit = peer.unit()
    expect(unit[0] == "BMSG" and unit[1].split(b" ")[1].decode() == subject and unit[2] == payload,
           f"{what}: got {unit!r}")


def mqtt_to_tcp(http, tcp, port):
    """MQTT PUBLISH at QoS 0, 1 and 2 reaches a TCP subscriber: a line payload as MSG, one with a line feed and
    every byte value as BMSG, byte for byte."""
    line = TCPPeer(tcp)
    subscribed(line, ["m2t.>"])
    pub = Peer(port)
    for qos in (0, 1, 2):
        pub.publish("m2t/text", f"plain text at {qos}".encode(), qos)
        expect_msg(line, "m2t.text", f"plain text at {qos}".encode())
        pub.publish("m2t/lines", b"one\ntwo", qos)
        expect_bmsg(line, "m2t.lines", b"one\ntwo", "a payload with LF")
        pub.publish("m2t/bytes", ALL_BYTES, qos)
        expect_bmsg(line, "m2t.bytes", ALL_BYTES, "bytes 0x00-0xFF")
    # MQTT to MQTT, beside it: the same bytes.
    sub = Peer(port)
    sub.subscribed(("m2t/bytes", 2))
    pub.publish("m2t/bytes", ALL_BYTES, 2)
    sub.expect_message("m2t/bytes", ALL_BYTES, qos=2)
    expect_bmsg(line, "m2t.bytes", ALL_BYTES)
    pub.close()
    sub.close()
    line.close()


def tcp_to_mqtt(http, tcp, port):
    """A TCP PUB and BPUB reach MQTT subscribers at the filter's QoS (a fanout client's message counts as QoS 2),
    bytes unchanged."""
    sub = Peer(port)
    sub.subscribed(("t2m/q0", 0), ("t2m/q1", 1), ("t2m/q2", 2))
    line = TCPPeer(tcp)
    for qos in (0, 1, 2):
        reply = command(line, f"PUB t2m.q{qos} from a line client")
        expect(reply == "+OK 1", f"PUB reply {reply}")
        sub.expect_message(f"t2m/q{qos}", b"from a line client", qos=qos, retain=False)
        line.send([f"BPUB t2m.q{qos} {len(ALL_BYTES)}\n".encode() + ALL_BYTES + b"\n"])
        reply = line_of(line, "BPUB reply")
        expect(reply == "+OK 1", f"BPUB reply {reply}")
        sub.expect_message(f"t2m/q{qos}", ALL_BYTES, qos=qos, what="BPUB's bytes")
    drained(sub, "TCP to MQTT")
    sub.close()
    line.close()


async def websocket(http, tcp, port):
    """MQTT to a WebSocket subscriber (a text frame per MSG, a binary BMSG frame for any bytes), and a WebSocket
    PUB to MQTT subscribers."""
    ws = await greeted(f"ws://127.0.0.1:{http}/ws")
    await ws.send("SUB m2w.>")
    expect(await recv(ws) == "+OK 1", "WebSocket SUB")
    pub = Peer(port)
    for qos in (0, 1, 2):
        await asyncio.to_thread(pub.publish, "m2w/text", f"to the page at {qos}".encode(), qos)
        frame = await recv(ws)
        expect(re.fullmatch(rf"MSG m2w\.text \d+ to the page at {qos}", frame), f"WebSocket frame {frame!r}")
        await asyncio.to_thread(pub.publish, "m2w/bytes", ALL_BYTES, qos)
        frame = await recv(ws)
        expect(isinstance(frame, bytes) and re.fullmatch(rb"BMSG m2w\.bytes \d+ 256\n", frame[:-257])
               and frame[-257:] == ALL_BYTES + b"\n", f"WebSocket BMSG frame {frame[:40]!r}")
    sub = Peer(port)
    sub.subscribed(("w2m/in", 1), ("w2m/lines", 2))
    await ws.send("PUB w2m.in from the page")
    expect(await recv(ws) == "+OK 1", "WebSocket PUB reply")
    got = await asyncio.to_thread(sub.message, "the WebSocket's message")
    expect((got.topic, got.payload, got.qos) == ("w2m/in", b"from the page", 1), f"got {got.topic} {got.payload}")
    await ws.send(b"BPUB w2m.lines 7\nab\ncd\x00e\n")
    expect(await recv(ws) == "+OK 1", "WebSocket BPUB reply")
    got = await asyncio.to_thread(sub.message, "the WebSocket's BPUB")
    expect((got.topic, got.payload, got.qos) == ("w2m/lines", b"ab\ncd\x00e", 2), f"got {got.topic} {got.payload}")
    await ws.close()
    pub.close()
    sub.close()


def event_stream(http, tcp, port):
    """MQTT to a `GET /events` stream: each PUBLISH an event with its subject and payload (any bytes as
    payload_base64)."""
    stream = EventStream(http, b"subject=m2s.>")
    stream.subscribed()
    pub = Peer(port)
    for qos in (0, 1, 2):
        pub.publish("m2s/text", f"streamed at {qos}".encode(), qos)
    pub.publish("m2s/bytes", ALL_BYTES, 1)
    stream.read_until(lambda events: len(events) >= 4)
    data = [json.loads(event[1]) for event in stream.events]
    for qos in (0, 1, 2):
        expect(data[qos]["subject"] == "m2s.text" and data[qos]["payload"] == f"streamed at {qos}", f"event {data[qos]}")
    expect(data[3]["subject"] == "m2s.bytes" and base64.b64decode(data[3]["payload_base64"]) == ALL_BYTES,
           f"bytes event {data[3]}")
    pub.close()
    stream.sock.close()


def wildcards(http, tcp, port):
    """Wildcards both ways: MQTT `+` and `#` filters receive fanout PUBs (`a/#` matches `a`); fanout `*` and `>`
    receive MQTT PUBLISHes; `#` never matches `$SYS/...`; escaped levels map as docs/mqtt.md's table says,
    both ways; a subject with no MQTT topic reaches no MQTT subscriber."""
    line = TCPPeer(tcp)
    every = Peer(port)
    every.subscribed(("#", 0), ("+/x", 0))
    system = Peer(port)
    system.subscribed(("$SYS/#", 0))
    for subject in ("$SYS.x", "dollar.end"):
        reply = command(line, f"PUB {subject} d")
        expect(reply.startswith("+OK "), f"PUB {subject}: {reply}")
    system.expect_message("$SYS/x", b"d", what="$SYS/# matches $SYS/x")
    every.expect_message("dollar/end", b"d", what="# and +/x must not match $SYS/x")
    drained(every, "$SYS")
    every.close()

    sub = Peer(port)
    sub.subscribed(("fw/+/t", 1), ("fw/deep/#", 2))
    for subject, topic, qos in (("fw.a.t", "fw/a/t", 1), ("fw.deep", "fw/deep", 2), ("fw.deep.x.y", "fw/deep/x/y", 2)):
        reply = command(line, f"PUB {subject} {topic}")
        expect(reply == "+OK 1", f"PUB {subject}: {reply}")
        sub.expect_message(topic, topic.encode(), qos=qos, what=f"{subject} to an MQTT wildcard filter")
    command(line, "PUB fw.a.t.u too deep")
    command(line, "PUB fw.end.t marker")
    sub.expect_message("fw/end/t", b"marker", what="+ matched two levels")
    drained(sub, "MQTT wildcards")

    subscribed(line, ["mw.*.t", "mw.deep.>"])
    pub = Peer(port)
    for topic, subject in (("mw/a/t", "mw.a.t"), ("mw/deep/x", "mw.deep.x"), ("mw/deep/x/y", "mw.deep.x.y")):
        pub.publish(topic, topic.encode(), 1)
        expect_msg(line, subject, topic.encode(), f"{topic} to fanout wildcards")

    escaped = (("/esc", "~.esc"), ("esc//b", "esc.~.b"), ("esc/", "esc.~"), ("v1.2", "v1~2E2"),
               ("esc/température", "esc.temp~C3~A9rature"), ("esc/a~b", "esc.a~7Eb"), ("esc/*", "esc.~2A"),
               ("esc/a b", "esc.a~20b"))
    subscribed(line, [subject for _, subject in escaped])
    for topic, subject in escaped:
        pub.publish(topic, topic.encode(), 1)
        expect_msg(line, subject, topic.encode(), f"MQTT {topic!r} as fanout {subject}")
    back = Peer(port)
    back.subscribed(*[(topic, 1) for topic, _ in escaped], ("esc/#", 1))
    # Published from a second line client: `line` holds these subjects and would take the pushes among replies.
    publisher = TCPPeer(tcp)
    for topic, subject in escaped:
        reply = command(publisher, f"PUB {subject} back")
        expect(reply.startswith("+OK "), f"PUB {subject}: {reply}")
        back.expect_message(topic, b"back", what=f"fanout {subject} as MQTT {topic!r}")
    # A subject whose `~` is not the mapping's own escape has no topic: nothing arrives before the marker.
    command(publisher, "PUB esc.x~y unmappable")
    command(publisher, "PUB esc.zz marker")
    while True:
        got = back.message("the marker after an unmappable subject")
        expect(got.payload != b"unmappable", f"unmappable subject delivered as {got.topic!r}")
        if got.topic == "esc/zz":
            break
    drained(back, "escaped levels")
    for peer in (sub, pub, back, system):
        peer.close()
    line.close()
    publisher.close()


SENSORS_TOKEN, READER_TOKEN = "sensor-secret-token", "reader-secret-token"


def auth(http, tcp, port):
    """On a server with tests' auth.yaml: a user and its token (or `token`) connect; a wrong token or a user
    that is not the token's gets CONNACK 4, no password 5, then the close; a denied filter gets SUBACK 0x80; a
    PUBLISH to a topic the user may not publish closes the connection."""
    for username in ("sensors", "token"):
        raw = RawClient(port)
        expect(raw.connack(client_id=f"auth-{username}", username=username, password=SENSORS_TOKEN) == (0, 0),
               f"{username} with the right token")
        raw.disconnect()
    refusals = ((dict(username="sensors", password="wrong-token"), 4, "a wrong token"),
                (dict(username="reader", password=SENSORS_TOKEN), 4, "another user's token"),
                (dict(username="sensors"), 5, "no password"),
                (dict(), 5, "no credentials"))
    for credentials, code, what in refusals:
        raw = RawClient(port)
        got = raw.connack(client_id="auth-refused", **credentials)
        expect(got[1] == code, f"{what}: CONNACK {got[1]}, expected {code}")
        expect(raw.closed(what) == [], f"{what}: packets after the refusal")

    reader = Peer(port, username="reader", password=READER_TOKEN)
    codes = reader.subscribe(("sensors/#", 1), ("sensors/secret/x", 1))
    expect(codes == [1, SUBACK_FAILURE], f"SUBACK {codes}, expected [1, 0x80] for a denied filter")
    sensors = Peer(port, username="sensors", password=SENSORS_TOKEN)
    sensors.publish("sensors/kitchen", b"21.5", 1)
    reader.expect_message("sensors/kitchen", b"21.5", qos=1)

    raw = RawClient(port)
    raw.connected(client_id="auth-denied-publish", username="sensors", password=SENSORS_TOKEN)
    raw.send(publish_packet("weather/x", b"not mine", qos=1, packet_id=3))
    expect(raw.closed("a PUBLISH to a denied topic") == [], "a denied PUBLISH got a packet back (PUBACK?)")
    drained(reader, "the denied PUBLISH")
    reader.close()
    sensors.close()


if __name__ == "__main__":
    run([mqtt_to_tcp, tcp_to_mqtt, websocket, event_stream, wildcards, auth])
