"""Malformed and out-of-order MQTT 3.1.1 input against a running fanoutd, packet by packet: each case gets the
outcome the standard and docs/mqtt.md state (a CONNACK refusal code and the close, or the close alone), and after
every case the server still serves a fresh MQTT client and a TCP PING. Usage as mqtt_checks_common.run says.
"""
import socket
import struct

from mqtt_checks_common import (RawClient, connect_packet, expect, field, packet, publish_packet, remaining_length,
                                run, subscribe_packet)
from websocket_checks import TIMEOUT


def still_serving(port, tcp, what):
    """After `what`: a new MQTT client connects and is answered, and a TCP client's PING is answered."""
    raw = RawClient(port)
    expect(raw.connack(client_id="after") == (0, 0), f"after {what}: a new MQTT client's CONNACK")
    raw.send(packet(0xC0, b""))
    expect(raw.packet() == (0xD0, b""), f"after {what}: PINGRESP")
    raw.disconnect()
    line = socket.create_connection(("127.0.0.1", tcp), timeout=TIMEOUT)
    reader = line.makefile("rb")
    expect(reader.readline().startswith(b"+HELLO "), f"after {what}: the TCP greeting")
    line.sendall(b"PING alive\n")
    expect(reader.readline() == b"+PONG alive\n", f"after {what}: TCP PING")
    line.close()


def closes(port, tcp, data, what, connect_first=True, expect_packets=()):
    """Sends `data` (after a CONNECT answered 0 when `connect_first`) and expects the close, with exactly
    `expect_packets` sent before it."""
    raw = RawClient(port)
    if connect_first:
        raw.connected(client_id="malformed")
    raw.send(data)
    got = raw.closed(what)
    expect(got == list(expect_packets), f"{what}: before the close the server sent {got!r}")
    still_serving(port, tcp, what)


def connect_body(name=b"MQTT", level=4, flags=0x02, client_id=b"c"):
    return field(name) + bytes([level, flags]) + struct.pack("!H", 60) + field(client_id)


def connect_refusals(http, tcp, port):
    """Wrong protocol names close without CONNACK; levels 3 and 5 get CONNACK 1 then the close; an empty
    client id with clean session 0 gets CONNACK 2; a second CONNECT, or a first packet that is not CONNECT,
    closes."""
    for name in (b"MQIsdp", b"MQTX", b"mqtt"):
        closes(port, tcp, packet(0x10, connect_body(name=name)), f"protocol name {name!r}", connect_first=False)
    for level in (3, 5):
        closes(port, tcp, packet(0x10, connect_body(level=level)), f"protocol level {level}", connect_first=False,
               expect_packets=[(0x20, bytes([0, 1]))])
    closes(port, tcp, packet(0x10, connect_body(flags=0, client_id=b"")), "an empty id with clean session 0",
           connect_first=False, expect_packets=[(0x20, bytes([0, 2]))])
    closes(port, tcp, connect_packet("again"), "a second CONNECT")
    closes(port, tcp, publish_packet("a/b", b"x"), "PUBLISH before CONNECT", connect_first=False)
    closes(port, tcp, packet(0xC0, b""), "PINGREQ before CONNECT", connect_first=False)


def framing(http, tcp, port):
    """A remaining length that runs into a fifth byte, one over max_payload (closed from its header, before the
    body is sent: FANOUTD_MAX_PAYLOAD=1024), reserved packet types 0 and 15, fixed-header flags other than the
    standard's, QoS 3, packet id 0, and packets only servers send."""
    closes(port, tcp, bytes([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]), "a remaining length of five bytes")
    closes(port, tcp, bytes([0x30]) + remaining_length(1024 + 65_536 + 100), "a packet over max_payload")
    closes(port, tcp, packet(0x00, b""), "packet type 0")
    closes(port, tcp, packet(0xF0, b""), "packet type 15")
    closes(port, tcp, packet(0x80, struct.pack("!H", 1) + field("a") + bytes([0])), "SUBSCRIBE with flags 0000")
    closes(port, tcp, packet(0x60, struct.pack("!H", 1)), "PUBREL with flags 0000")
    closes(port, tcp, packet(0x36, field("a") + struct.pack("!H", 1) + b"x"), "PUBLISH at QoS 3")
    closes(port, tcp, packet(0x32, field("a") + struct.pack("!H", 0) + b"x"), "PUBLISH with packet id 0")
    closes(port, tcp, packet(0x20, bytes([0, 0])), "CONNACK from a client")
    closes(port, tcp, packet(0x90, struct.pack("!H", 1) + bytes([0])), "SUBACK from a client")
    closes(port, tcp, packet(0xD0, b""), "PINGRESP from a client")


def topics(http, tcp, port):
    """Filters the standard calls invalid close the connection (section 4.8); so do a wildcard in a topic name,
    invalid UTF-8 and U+0000; a SUBSCRIBE of 10,000 filters passes the 1,000 a packet may carry and closes; a
    topic whose subject passes 255 bytes closes a PUBLISH and gets 0x80 in a SUBSCRIBE."""
    closes(port, tcp, subscribe_packet(1, ("a/#/b", 0)), "a filter with # not last")
    closes(port, tcp, subscribe_packet(1, ("a+/b", 0)), "a filter with + inside a level")
    closes(port, tcp, publish_packet("a/+", b"x"), "a wildcard in a PUBLISH topic")
    closes(port, tcp, packet(0x30, field(b"a/\xff\xfe") + b"x"), "invalid UTF-8 in a topic")
    closes(port, tcp, packet(0x30, field(b"a/\x00") + b"x"), "U+0000 in a topic")
    many = [(f"f/{index}", 0) for index in range(10_000)]
    closes(port, tcp, subscribe_packet(1, *many), "a SUBSCRIBE of 10,000 filters")
    long_topic = "/".join(["level"] * 50)  # 299 bytes as a subject
    closes(port, tcp, publish_packet(long_topic, b"x"), "a PUBLISH whose subject passes 255 bytes")
    raw = RawClient(port)
    raw.connected(client_id="long-filter")
    raw.send(subscribe_packet(7, (long_topic, 1), ("ok/topic", 1)))
    expect(raw.packet() == (0x90, struct.pack("!H", 7) + bytes([0x80, 1])), "SUBACK 0x80 for the long filter")
    raw.disconnect()


def split_at_every_byte(http, tcp, port):
    """CONNECT, SUBSCRIBE and a QoS 1 PUBLISH sent one byte per write get the replies whole packets get, and the
    message arrives unchanged."""
    subscriber = RawClient(port)
    subscriber.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for byte in connect_packet("split-sub"):
        subscriber.send(bytes([byte]))
    expect(subscriber.packet() == (0x20, bytes([0, 0])), "CONNACK after a CONNECT in single bytes")
    for byte in subscribe_packet(3, ("split/#", 1)):
        subscriber.send(bytes([byte]))
    expect(subscriber.packet() == (0x90, struct.pack("!H", 3) + bytes([1])), "SUBACK after single bytes")
    publisher = RawClient(port)
    publisher.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    publisher.connected(client_id="split-pub")
    payload = bytes(range(256))
    for byte in publish_packet("split/x", payload, qos=1, packet_id=9):
        publisher.send(bytes([byte]))
    expect(publisher.packet() == (0x40, struct.pack("!H", 9)), "PUBACK after a PUBLISH in single bytes")
    first, body = subscriber.packet()
    expect(first == 0x32 and body[:9] == field("split/x") and body[11:] == payload,
           f"the message whole and unchanged: {first:#x} {body[:12]!r}")
    subscriber.disconnect()
    publisher.disconnect()
    still_serving(port, tcp, "single-byte packets")


if __name__ == "__main__":
    run([connect_refusals, framing, topics, split_at_every_byte])
