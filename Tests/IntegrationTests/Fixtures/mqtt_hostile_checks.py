"""Hostile MQTT crowds against a running fanoutd (the Swift suite times a bystander's PINGs and reads the RSS
meanwhile). Usage as mqtt_checks_common.run says. Each crowd is raw sockets, connected in batches with their
CONNECTs pipelined; every wait is bounded and ends on an event (a close, a counter in INFO).
"""
import select
import socket
import struct
import time

from mqtt_checks_common import (RawClient, connect_packet, expect, packet, publish_packet, run, subscribe_packet)

CROWD = 1000


def info(tcp):
    line = socket.create_connection(("127.0.0.1", tcp), timeout=30)
    reader = line.makefile("rb")
    reader.readline()
    line.sendall(b"INFO\n")
    fields = dict(word.split("=", 1) for word in reader.readline().decode().split()[1:] if "=" in word)
    line.close()
    return fields


def crowd(port, count, make_connect, then=b"", receive_buffer=None):
    """`count` sockets, each sent its CONNECT (and `then`) and its CONNACK read, in batches of 250."""
    socks = []
    while len(socks) < count:
        batch = []
        for _ in range(min(250, count - len(socks))):
            sock = socket.socket()
            if receive_buffer:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            sock.connect(("127.0.0.1", port))
            sock.settimeout(30)
            sock.sendall(make_connect(len(socks) + len(batch)))
            batch.append(sock)
        for sock in batch:
            connack = b""
            while len(connack) < 4:
                chunk = sock.recv(4 - len(connack))
                expect(chunk, "a CONNACK before the close")
                connack += chunk
            expect(connack == bytes([0x20, 2, 0, 0]), f"CONNACK {connack!r}")
            if then:
                sock.sendall(then)
        socks += batch
    return socks


def wait_all_closed(socks, within, what):
    """Every socket reaches end of stream (or a reset) within `within` seconds; returns the seconds it took."""
    started = time.monotonic()
    open_socks = set(socks)
    while open_socks:
        left = within - (time.monotonic() - started)
        expect(left > 0, f"{what}: {len(open_socks)} of {len(socks)} still open after {within} s")
        ready, _, _ = select.select(list(open_socks)[:1000], [], [], min(left, 0.5))
        for sock in ready:
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                data = b""
            if not data:
                open_socks.discard(sock)
                sock.close()
    return time.monotonic() - started


def silent(http, tcp, port):
    """1,000 connections with keep-alive 2 that never send PINGREQ: all closed within 1.5 x 2 s and slack."""
    socks = crowd(port, CROWD, lambda n: connect_packet(f"silent-{n}", keepalive=2))
    took = wait_all_closed(socks, 3 + 7, "silent clients")
    expect(int(info(tcp)["mqtt_connections"]) == 0, "no MQTT connection left")
    print(f"silent: {CROWD} closed {took:.1f} s after the last CONNACK", flush=True)


def unread(http, tcp, port):
    """1,000 QoS 0 subscribers of a busy topic that never read (4 KiB receive buffers) while a publisher sends
    100 B messages: each is dropped as a slow consumer at max_pending_bytes, and the publisher goes on."""
    socks = crowd(port, CROWD, lambda n: connect_packet(f"unread-{n}"),
                  then=subscribe_packet(1, ("busy/topic", 0)), receive_buffer=4096)
    publisher = RawClient(port)
    publisher.connected(client_id="busy-publisher")
    # The SUBACKs are in the crowd's unread buffers; a PINGREQ after them fences the subscriptions in order.
    fence = RawClient(port)
    fence.connected(client_id="fence")
    fence.send(subscribe_packet(1, ("busy/topic", 0)))
    expect(fence.packet()[0] == 0x90, "the fence's SUBACK")
    before = int(info(tcp)["slow_consumers"])
    payload = b"x" * 100
    burst = publish_packet("busy/topic", payload) * 100
    started = time.monotonic()
    dropped = 0
    while dropped < CROWD:
        expect(time.monotonic() - started < 60, f"only {dropped} of {CROWD} unread subscribers dropped in 60 s")
        publisher.send(burst)
        publisher.send(packet(0xC0, b""))
        expect(publisher.packet() == (0xD0, b""), "the publisher's PINGRESP")
        # The fence reads: it is no slow consumer.
        fence.sock.setblocking(False)
        try:
            while fence.sock.recv(1 << 20):
                pass
        except BlockingIOError:
            pass
        fence.sock.setblocking(True)
        dropped = int(info(tcp)["slow_consumers"]) - before
    took = wait_all_closed(socks, 30, "unread subscribers")
    print(f"unread: {CROWD} dropped as slow consumers in {time.monotonic() - started:.1f} s", flush=True)
    publisher.disconnect()


def unacknowledged(http, tcp, port):
    """A QoS 1 subscriber that reads but never sends PUBACK: its unacknowledged messages count in its pending
    bytes, and it is dropped as a slow consumer at max_pending_bytes; the publisher (a TCP client, whose
    messages count as QoS 2, so they go at the filter's QoS 1) goes on."""
    lazy = RawClient(port)
    lazy.connected(client_id="never-acks")
    lazy.send(subscribe_packet(1, ("acks/topic", 1)))
    expect(lazy.packet()[0] == 0x90, "SUBACK")
    publisher = socket.create_connection(("127.0.0.1", tcp), timeout=30)
    replies = publisher.makefile("rb")
    expect(replies.readline().startswith(b"+HELLO "), "the publisher's greeting")
    before = int(info(tcp)["slow_consumers"])
    burst = b"PUB acks.topic " + b"y" * 100 + b"\n"
    received = 0
    started = time.monotonic()
    lazy.sock.settimeout(0.05)
    got = True
    while got is not None:
        expect(time.monotonic() - started < 60, f"the subscriber that never acknowledges is still there")
        publisher.sendall(burst * 200)
        for _ in range(200):
            expect(replies.readline().startswith(b"+OK "), "the publisher's +OK")
        try:
            while True:
                got = lazy.packet()
                if got is None:
                    break
                expect(got[0] == 0x32, f"a QoS 1 PUBLISH, got {got[0]:#x}")
                received += 1
        except (socket.timeout, TimeoutError):
            pass
    expect(int(info(tcp)["slow_consumers"]) - before == 1, "dropped as a slow consumer")
    print(f"unacknowledged: dropped after {received} QoS 1 messages", flush=True)
    publisher.sendall(b"PING after\n")
    expect(replies.readline() == b"+PONG after\n", "the publisher is served after the drop")
    publisher.close()


def retained_walk(http, tcp, port):
    """20,000 retained messages and one SUBSCRIBE of 1,000 wildcard filters (20 million matches): the walk goes
    a slice per loop pass (the bystander is served meanwhile), `r/#`'s 20,000 retained messages all arrive, once
    each, with the retain flag, and a PINGREQ sent after the SUBSCRIBE is answered after them."""
    publisher = RawClient(port)
    publisher.connected(client_id="retainer")
    count = 20_000
    batch = b"".join(publish_packet(f"r/{index}", b"kept %d" % index, retain=True) for index in range(count))
    publisher.send(batch + packet(0xC0, b""))
    expect(publisher.packet() == (0xD0, b""), "the retainer's PINGRESP")
    expect(int(info(tcp)["mqtt_retained"]) == count, "all retained")
    subscriber = RawClient(port)
    subscriber.connected(client_id="walker")
    filters = [(f"+/nothing-{index}", 0) for index in range(999)] + [("r/#", 0)]
    subscriber.send(subscribe_packet(5, *filters) + packet(0xC0, b""))
    first, body = subscriber.packet()
    expect(first == 0x90 and len(body) == 2 + 1000, "SUBACK of 1,000 filters")
    started = time.monotonic()
    seen = set()
    while True:
        got = subscriber.packet()
        expect(got is not None, "the walker stays connected")
        if got == (0xD0, b""):
            break
        first, body = got
        expect(first == 0x31, f"a retained QoS 0 PUBLISH, got {first:#x}")
        topic_length = struct.unpack("!H", body[:2])[0]
        topic = body[2:2 + topic_length].decode()
        expect(topic not in seen, f"{topic} twice")
        seen.add(topic)
    expect(len(seen) == count, f"{len(seen)} of {count} retained messages before the PINGRESP")
    print(f"retained-walk: {count} retained messages through 1,000 filters in {time.monotonic() - started:.1f} s",
          flush=True)
    subscriber.disconnect()
    publisher.disconnect()


if __name__ == "__main__":
    run([silent, unread, unacknowledged, retained_walk])
