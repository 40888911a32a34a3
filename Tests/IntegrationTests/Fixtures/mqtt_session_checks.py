"""MQTT 3.1.1 session checks against a running fanoutd: persistent sessions, resends with DUP, takeover, wills.

Usage: mqtt_session_checks.py CHECK MQTT_PORT
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
paho-mqtt publishes and watches; where a client must misbehave (leave messages unacknowledged, drop its socket
without DISCONNECT) a raw socket speaks the few packets needed. Every wait is bounded (TIMEOUT seconds).
"""
import queue
import socket
import struct
import sys

import paho.mqtt.client as mqtt

TIMEOUT = 10
HOST = "127.0.0.1"


def expect(condition, what):
    if not condition:
        print(f"failed: {what}")
        sys.exit(1)


# --- paho clients -------------------------------------------------------------------------------------------


class Paho:
    """A paho client whose CONNACK and messages are awaited with bounds."""

    def __init__(self, port, client_id, clean_session=True, will=None):
        self.messages = queue.Queue()
        self.connacks = queue.Queue()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                                  clean_session=clean_session, protocol=mqtt.MQTTv311)
        if will:
            self.client.will_set(*will)
        self.client.on_connect = lambda c, u, flags, code, p: self.connacks.put((flags.session_present, code))
        self.client.on_message = lambda c, u, m: self.messages.put(m)
        self.client.connect(HOST, port, keepalive=30)
        self.client.loop_start()
        self.session_present, code = self.connacks.get(timeout=TIMEOUT)
        expect(code == 0, f"{client_id}: CONNACK {code}")

    def subscribe(self, topic, qos):
        granted = queue.Queue()
        self.client.on_subscribe = lambda c, u, mid, codes, p: granted.put([int(code.value) for code in codes])
        self.client.subscribe(topic, qos)
        codes = granted.get(timeout=TIMEOUT)
        expect(codes == [qos], f"SUBACK {codes} for {topic}")

    def publish(self, topic, payload, qos):
        info = self.client.publish(topic, payload, qos)
        info.wait_for_publish(timeout=TIMEOUT)
        expect(info.is_published(), f"publish to {topic} acknowledged")

    def next_message(self):
        try:
            return self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            expect(False, "a message within the timeout")

    def until(self, payload):
        """The messages received before the one with `payload` (which is taken too)."""
        before = []
        while True:
            message = self.next_message()
            if message.payload == payload:
                return before
            before.append(message)

    def stop(self):
        self.client.disconnect()
        self.client.loop_stop()


# --- a raw client ---------------------------------------------------------------------------------------------


def remaining_length(n):
    out = bytearray()
    while True:
        digit, n = n % 128, n // 128
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


def utf8(text):
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def packet(first, body):
    return bytes([first]) + remaining_length(len(body)) + body


class Raw:
    """A socket speaking just enough MQTT: CONNECT, SUBSCRIBE, reading packets, closing without DISCONNECT."""

    def __init__(self, port, client_id, clean_session, will=None):
        self.sock = socket.create_connection((HOST, port), timeout=TIMEOUT)
        self.buffer = b""
        flags = 0x02 if clean_session else 0
        payload = utf8(client_id)
        if will:
            topic, message, qos = will
            flags |= 0x04 | (qos << 3)
            payload += utf8(topic) + struct.pack(">H", len(message)) + message
        body = utf8("MQTT") + bytes([4, flags]) + struct.pack(">H", 30) + payload
        self.sock.sendall(packet(0x10, body))
        kind, _, body = self.read()
        expect(kind == 2 and body[1] == 0, f"{client_id}: CONNACK {body!r}")
        self.session_present = body[0] & 1 == 1

    def subscribe(self, topic, qos, packet_id=1):
        self.sock.sendall(packet(0x82, struct.pack(">H", packet_id) + utf8(topic) + bytes([qos])))
        kind, _, body = self.read()
        expect(kind == 9 and body[2:] == bytes([qos]), f"SUBACK {body!r}")

    def read(self):
        """(type, flags, body) of the next packet; None at the end of the stream."""
        while True:
            if len(self.buffer) >= 2:
                length, multiplier, at = 0, 1, 1
                while at < len(self.buffer):
                    byte = self.buffer[at]
                    length += (byte & 0x7F) * multiplier
                    multiplier *= 128
                    at += 1
                    if not byte & 0x80:
                        if len(self.buffer) >= at + length:
                            first, body = self.buffer[0], self.buffer[at:at + length]
                            self.buffer = self.buffer[at + length:]
                            return first >> 4, first & 0x0F, body
                        break
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk

    def read_publish(self):
        """(dup, qos, packet id, topic, payload) of the next PUBLISH."""
        read = self.read()
        expect(read is not None and read[0] == 3, f"a PUBLISH, got {read!r}")
        _, flags, body = read
        length = struct.unpack(">H", body[:2])[0]
        topic = body[2:2 + length].decode()
        qos = (flags >> 1) & 3
        rest = body[2 + length:]
        packet_id = struct.unpack(">H", rest[:2])[0] if qos else None
        return bool(flags & 0x08), qos, packet_id, topic, rest[2:] if qos else rest

    def ended(self):
        """Whether the server closed the connection (the end of the stream, within the timeout)."""
        try:
            return self.read() is None
        except ConnectionResetError:
            return True

    def drop(self):
        """Closes the socket without DISCONNECT: an abnormal end."""
        self.sock.close()


# --- checks ---------------------------------------------------------------------------------------------------


def persistent(port):
    """QoS 1 and 2 messages published while a clean-session-0 client is away arrive on its return, with
    session present; QoS 0 ones do not."""
    away = Paho(port, "persist-1", clean_session=False)
    expect(not away.session_present, "no session at first")
    away.subscribe("persist/#", 2)
    away.stop()
    publisher = Paho(port, "persist-publisher")
    publisher.publish("persist/a", b"one", 1)
    publisher.publish("persist/b", b"two", 2)
    publisher.publish("persist/c", b"zero", 0)
    back = Paho(port, "persist-1", clean_session=False)
    expect(back.session_present, "session present on return")
    # At QoS 2, as the kept QoS 2 message: paho hands a QoS 2 message over at PUBREL, after later QoS 1 ones.
    publisher.publish("persist/fence", b"fence", 2)
    kept = back.until(b"fence")
    expect([(m.topic, m.payload, m.qos) for m in kept] == [("persist/a", b"one", 1), ("persist/b", b"two", 2)],
           f"kept while away: {[(m.topic, m.payload, m.qos) for m in kept]}")
    back.stop()
    fresh = Paho(port, "persist-1", clean_session=True)
    expect(not fresh.session_present, "clean session 1 finds no session")
    fresh.stop()
    publisher.stop()


def resend(port):
    """Messages sent and not acknowledged are sent again on return, in the order first sent: a QoS 1 or 2
    PUBLISH with DUP and its packet id, a QoS 2 one whose PUBREC went with PUBREL (MQTT-4.4.0-1)."""
    raw = Raw(port, "resend-1", clean_session=False)
    raw.subscribe("resend/#", 2)
    publisher = Paho(port, "resend-publisher")
    publisher.publish("resend/one", b"unacked 1", 1)
    publisher.publish("resend/two", b"unacked 2", 2)
    publisher.publish("resend/three", b"received 2", 2)
    first = [raw.read_publish() for _ in range(3)]
    expect([(dup, qos, topic, payload) for dup, qos, _, topic, payload in first] == [
        (False, 1, "resend/one", b"unacked 1"), (False, 2, "resend/two", b"unacked 2"),
        (False, 2, "resend/three", b"received 2")], f"the first sends: {first!r}")
    released_id = first[2][2]
    raw.sock.sendall(packet(0x50, struct.pack(">H", released_id)))
    read = raw.read()
    expect(read == (6, 2, struct.pack(">H", released_id)), f"PUBREL after PUBREC: {read!r}")
    raw.drop()
    back = Raw(port, "resend-1", clean_session=False)
    expect(back.session_present, "session present")
    again = [back.read_publish(), back.read_publish()]
    expect(again == [(True, 1, first[0][2], "resend/one", b"unacked 1"),
                     (True, 2, first[1][2], "resend/two", b"unacked 2")], f"resent with DUP: {again!r}")
    read = back.read()
    expect(read == (6, 2, struct.pack(">H", released_id)), f"PUBREL sent again: {read!r}")
    back.sock.sendall(packet(0x40, struct.pack(">H", first[0][2])))
    back.drop()
    publisher.stop()


def takeover(port):
    """A CONNECT with a client id already connected closes the older connection, whose will goes; with clean
    session 0 the newer one finds the older one's session."""
    watcher = Paho(port, "takeover-watcher")
    watcher.subscribe("takeover/will", 1)
    older = Raw(port, "takeover-1", clean_session=False, will=("takeover/will", b"taken over", 1))
    older.subscribe("takeover/kept", 1)
    newer = Raw(port, "takeover-1", clean_session=False)
    expect(older.ended(), "the older connection is closed")
    expect(newer.session_present, "the older connection's session is the newer one's")
    message = watcher.next_message()
    expect((message.topic, message.payload) == ("takeover/will", b"taken over"), "the older connection's will")
    publisher = Paho(port, "takeover-publisher")
    publisher.publish("takeover/kept", b"still subscribed", 1)
    publish = newer.read_publish()
    expect(publish[3:] == ("takeover/kept", b"still subscribed"), f"the subscription carried over: {publish!r}")
    newer.sock.sendall(packet(0x40, struct.pack(">H", publish[2])))
    newer.sock.sendall(bytes([0xC0, 0]))
    read = newer.read()
    expect(read is not None and read[0] == 13, f"the newer one answers PINGREQ: {read!r}")
    newer.drop()
    cleaned = Raw(port, "takeover-1", clean_session=True)
    cleaned.drop()
    publisher.stop()
    watcher.stop()


def will(port):
    """The will goes on an abnormal close, and not after DISCONNECT."""
    watcher = Paho(port, "will-watcher")
    watcher.subscribe("will/#", 1)
    leaving = Raw(port, "will-abrupt", clean_session=True, will=("will/abrupt", b"gone", 1))
    leaving.drop()
    message = watcher.next_message()
    expect((message.topic, message.payload) == ("will/abrupt", b"gone"), f"the will: {message.topic}")
    polite = Paho(port, "will-polite", will=("will/polite", b"should not", 1))
    polite.stop()
    publisher = Paho(port, "will-publisher")
    publisher.publish("will/fence", b"fence", 1)
    before = watcher.until(b"fence")
    expect(before == [], f"no will after DISCONNECT: {[(m.topic, m.payload) for m in before]}")
    publisher.stop()
    watcher.stop()


def history(port):
    """With history kept for a subject a session's filter names exactly, a returning client catches up from
    history (RESUME's way) rather than from its session's queue: all five orders arrive though the daemon keeps
    two messages per session (FANOUTD_MQTT_SESSION_MAX_MESSAGES=2), while a subject without history gives the
    newest two from the queue."""
    away = Paho(port, "history-1", clean_session=False)
    away.subscribe("orders/x", 1)
    away.subscribe("plain/#", 1)
    away.stop()
    publisher = Paho(port, "history-publisher")
    for index in range(5):
        publisher.publish("orders/x", f"order {index}".encode(), 1)
        publisher.publish("plain/y", f"plain {index}".encode(), 1)
    back = Paho(port, "history-1", clean_session=False)
    expect(back.session_present, "session present on return")
    publisher.publish("plain/fence", b"fence", 1)
    publisher.publish("orders/x", b"order live", 1)
    seen = back.until(b"order live")
    orders = [m.payload for m in seen if m.topic == "orders/x"]
    plain = [m.payload for m in seen if m.topic == "plain/y"]
    expect(orders == [f"order {index}".encode() for index in range(5)],
           f"orders caught up from history, in order, before the live one: {orders}")
    expect(plain == [b"plain 3", b"plain 4"], f"the session's queue kept the newest two: {plain}")
    back.stop()
    publisher.stop()


CHECKS = {"history": history, "persistent": persistent, "resend": resend, "takeover": takeover, "will": will}

if __name__ == "__main__":
    name, port = sys.argv[1], int(sys.argv[2])
    CHECKS[name](port)
    print(f"ok {name}")
