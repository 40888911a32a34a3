"""What the MQTT fixtures share: a paho-mqtt client whose callbacks become events and queues, a raw MQTT 3.1.1
socket for what paho will not send (a will left behind, a keep-alive never kept, credentials refused), and the
runner that maps a check's name to its function.

Every wait is bounded by TIMEOUT and ends on an event (a callback, a packet, end of stream), never on a sleep.
The TCP and WebSocket sides reuse websocket_checks.py and transport_differential.py.
"""
import asyncio
import queue
import socket
import struct
import sys
import threading
import time

try:
    import paho.mqtt.client as mqtt
except ImportError:
    # A machine without the library fails every MQTT check, saying why, rather than passing any.
    print("FAIL: the paho-mqtt Python module is not installed (./dev deps installs it)", flush=True)
    sys.exit(1)

from websocket_checks import TIMEOUT, expect

# SUBACK's failure code, MQTT 3.1.1 section 3.9.3.
SUBACK_FAILURE = 0x80


class Peer:
    """One paho connection (MQTT 3.1.1): connected on creation, received messages in `messages`.

    It never reconnects by itself: a connection the server closes stays closed (`disconnected` is set), so a
    check sees a takeover or a refusal instead of paho quietly connecting again."""

    def __init__(self, port, client_id="", clean=True, username=None, password=None, will=None, keepalive=60):
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean,
                                  protocol=mqtt.MQTTv311)
        self.messages = queue.Queue()
        self.connected = threading.Event()
        self.disconnected = threading.Event()
        self.session_present = None
        self.connack_code = None
        self._lock = threading.Lock()
        self._subacks = {}
        self._suback_events = {}
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self.client.on_unsubscribe = self._on_unsubscribe
        if username is not None:
            self.client.username_pw_set(username, password)
        if will is not None:
            topic, payload, qos, retain = will
            self.client.will_set(topic, payload, qos, retain)
        self.client.connect("127.0.0.1", port, keepalive)
        self.client.loop_start()
        expect(self.connected.wait(TIMEOUT), f"{client_id or 'a client'}: no CONNACK")
        expect(self.connack_code == 0, f"{client_id or 'a client'}: CONNACK {self.connack_code}")

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        self.session_present = flags.session_present
        self.connack_code = 0 if not reason_code.is_failure else reason_code.value
        self.connected.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        self.disconnected.set()
        # Stops paho's network thread from connecting again (loop_stop does not join from that thread).
        client.loop_stop()

    def _on_message(self, client, userdata, message):
        self.messages.put(message)

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        with self._lock:
            self._subacks[mid] = [code.value for code in reason_codes]
            event = self._suback_events.setdefault(mid, threading.Event())
        event.set()

    def _on_unsubscribe(self, client, userdata, mid, reason_codes, properties):
        with self._lock:
            event = self._suback_events.setdefault(("un", mid), threading.Event())
        event.set()

    def _event(self, key):
        with self._lock:
            return self._suback_events.setdefault(key, threading.Event())

    def subscribe(self, *filters):
        """Subscribes (filter, qos) pairs in one SUBSCRIBE and returns SUBACK's codes."""
        result, mid = self.client.subscribe(list(filters))
        expect(result == mqtt.MQTT_ERR_SUCCESS, f"SUBSCRIBE {filters}: {result}")
        expect(self._event(mid).wait(TIMEOUT), f"no SUBACK for {filters}")
        with self._lock:
            return self._subacks[mid]

    def subscribed(self, *filters):
        """Subscribes and expects every filter granted the QoS it asked for."""
        codes = self.subscribe(*filters)
        expect(codes == [qos for _, qos in filters], f"SUBACK {codes} for {filters}")

    def unsubscribe(self, *topics):
        result, mid = self.client.unsubscribe(list(topics))
        expect(result == mqtt.MQTT_ERR_SUCCESS, f"UNSUBSCRIBE {topics}: {result}")
        expect(self._event(("un", mid)).wait(TIMEOUT), f"no UNSUBACK for {topics}")

    def publish(self, topic, payload, qos=0, retain=False):
        """Publishes and, at QoS 1 and 2, waits for the server's PUBACK or PUBCOMP."""
        info = self.client.publish(topic, payload, qos, retain)
        info.wait_for_publish(TIMEOUT)
        expect(info.is_published(), f"PUBLISH {topic} at QoS {qos} not acknowledged")

    def message(self, what="a message"):
        try:
            return self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"{what}: nothing within {TIMEOUT} s") from None

    def expect_message(self, topic, payload, qos=None, retain=None, what=None):
        """The next message is this one (and at this QoS and retain flag, when given)."""
        what = what or f"{topic} {payload[:40]!r}"
        got = self.message(what)
        expect(got.topic == topic and got.payload == payload,
               f"{what}: got {got.topic!r} {got.payload[:60]!r}")
        if qos is not None:
            expect(got.qos == qos, f"{what}: QoS {got.qos}, expected {qos}")
        if retain is not None:
            expect(bool(got.retain) == retain, f"{what}: retain {got.retain}, expected {retain}")
        return got

    def wait_closed(self, what):
        expect(self.disconnected.wait(TIMEOUT), f"{what}: the connection stayed open")

    def close(self):
        """DISCONNECT, so that no will goes."""
        if not self.disconnected.is_set():
            self.client.disconnect()
            self.disconnected.wait(TIMEOUT)
        self.client.loop_stop()


# Raw packets (MQTT 3.1.1 section 2 and 3), for what a library will not send.

def remaining_length(n):
    out = b""
    while True:
        byte, n = n % 128, n // 128
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def field(value):
    data = value.encode() if isinstance(value, str) else value
    return struct.pack("!H", len(data)) + data


def packet(first_byte, body):
    return bytes([first_byte]) + remaining_length(len(body)) + body


def connect_packet(client_id, keepalive=60, clean=True, will=None, username=None, password=None):
    flags = 0x02 if clean else 0
    payload = field(client_id)
    if will is not None:
        topic, message, qos, retain = will
        flags |= 0x04 | (qos << 3) | (0x20 if retain else 0)
        payload += field(topic) + field(message)
    if username is not None:
        flags |= 0x80
        payload += field(username)
    if password is not None:
        flags |= 0x40
        payload += field(password)
    return packet(0x10, field("MQTT") + bytes([4, flags]) + struct.pack("!H", keepalive) + payload)


def publish_packet(topic, payload, qos=0, packet_id=1, retain=False):
    body = field(topic) + (struct.pack("!H", packet_id) if qos else b"") + payload
    return packet(0x30 | (qos << 1) | (1 if retain else 0), body)


def subscribe_packet(packet_id, *filters):
    return packet(0x82, struct.pack("!H", packet_id) + b"".join(field(f) + bytes([q]) for f, q in filters))


DISCONNECT = packet(0xE0, b"")


class RawClient:
    """An MQTT connection spoken byte by byte: packets out as given, packets in as (first byte, body)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.data = b""

    def send(self, data):
        self.sock.sendall(data)

    def packet(self):
        """The next packet as (first byte, body), or None when the server closed the connection."""
        while True:
            if len(self.data) >= 2:
                length, multiplier, index = 0, 1, 1
                while index < len(self.data):
                    byte = self.data[index]
                    length += (byte & 0x7F) * multiplier
                    multiplier *= 128
                    index += 1
                    if not byte & 0x80:
                        if len(self.data) >= index + length:
                            first, body = self.data[0], self.data[index:index + length]
                            self.data = self.data[index + length:]
                            return first, body
                        break
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None
            self.data += chunk

    def connack(self, **connect):
        """Sends CONNECT and returns CONNACK's (session present, return code)."""
        self.send(connect_packet(**connect))
        got = self.packet()
        expect(got is not None and got[0] == 0x20 and len(got[1]) == 2, f"CONNACK expected, got {got!r}")
        return got[1][0] & 1, got[1][1]

    def connected(self, **connect):
        session_present, code = self.connack(**connect)
        expect(code == 0, f"CONNACK {code} for {connect.get('client_id')!r}")
        return session_present

    def closed(self, what):
        """Reads until the server closes; packets it sends first are returned."""
        packets = []
        while True:
            got = self.packet()
            if got is None:
                return packets
            packets.append(got)
            expect(len(packets) < 1000, f"{what}: the connection stayed open")

    def abandon(self):
        """Closes the socket without DISCONNECT: the server must publish the will."""
        self.sock.close()

    def disconnect(self):
        """DISCONNECT, then waits for the server to close (so it has dropped the will before anything after)."""
        self.send(DISCONNECT)
        self.closed("after DISCONNECT")
        self.sock.close()


def parse_publish(first, body):
    """A PUBLISH's (topic, packet id or None, payload, qos, retain, dup)."""
    expect(first >> 4 == 3, f"PUBLISH expected, got packet type {first >> 4}")
    qos = (first >> 1) & 3
    length = struct.unpack("!H", body[:2])[0]
    topic = body[2:2 + length].decode()
    rest = body[2 + length:]
    packet_id = None
    if qos:
        packet_id, rest = struct.unpack("!H", rest[:2])[0], rest[2:]
    return topic, packet_id, rest, qos, bool(first & 1), bool(first & 8)


def drained(peer, what):
    """Expects nothing more is queued for `peer` (call after a marker it received came last)."""
    if not peer.messages.empty():
        extra = peer.messages.get_nowait()
        raise AssertionError(f"{what}: unexpected {extra.topic!r} {extra.payload[:60]!r}")


def run(checks):
    """Usage: SCRIPT CHECK HTTP_PORT TCP_PORT MQTT_PORT [EXTRA...]: prints "ok CHECK" when every expectation
    holds, else what failed, and exits 1. A check is a function of (http, tcp, mqtt, *extra), plain or async."""
    table = {f.__name__.replace("_", "-"): f for f in checks}
    name, http, tcp, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    started = time.monotonic()
    try:
        result = table[name](http, tcp, port, *sys.argv[5:])
        if asyncio.iscoroutine(result):
            asyncio.run(asyncio.wait_for(result, 90))
    except Exception as error:
        print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print(f"ok {name} ({time.monotonic() - started:.1f} s)", flush=True)
