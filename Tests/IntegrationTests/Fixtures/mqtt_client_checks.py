"""MQTT 3.1.1 as a third-party client sees it: paho-mqtt (and raw sockets for what paho will not send) against a
server on 127.0.0.1. Only MQTT is spoken, so every check holds against any conforming broker as well (Debian's
mosquitto was the reference these were first run against); the fanout side is mqtt_cross_checks.py's.

Usage: mqtt_client_checks.py CHECK HTTP_PORT TCP_PORT MQTT_PORT [EXTRA...]
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
"""
import time

from mqtt_checks_common import Peer, RawClient, drained, expect, packet, parse_publish, run, subscribe_packet

# Every byte value, and a payload with line feeds, must cross unchanged.
ALL_BYTES = bytes(range(256))
LINES = b"first line\nsecond line\r\nthird"


def qos_roundtrip(http, tcp, port):
    """At QoS 0, 1 and 2: payloads (every byte value, line feeds, empty) arrive unchanged at the QoS asked, and
    a message goes at the lower of its publisher's and the filter's QoS."""
    sub = Peer(port)
    pub = Peer(port)
    sub.subscribed(("rt/q0", 0), ("rt/q1", 1), ("rt/q2", 2), ("rt/low", 1))
    for qos in (0, 1, 2):
        for payload in (ALL_BYTES, LINES, b"plain text", b""):
            pub.publish(f"rt/q{qos}", payload, qos)
            sub.expect_message(f"rt/q{qos}", payload, qos=qos, retain=False)
    # The filter's QoS caps a QoS 2 publish; a QoS 0 publish stays at 0 whatever the filter.
    pub.publish("rt/low", b"capped", 2)
    sub.expect_message("rt/low", b"capped", qos=1)
    pub.publish("rt/q2", b"uncapped", 0)
    sub.expect_message("rt/q2", b"uncapped", qos=0)
    drained(sub, "round trip")
    sub.close()
    pub.close()


def wildcards(http, tcp, port):
    """`+` and `#`: `a/#` matches `a` itself; `+` one level only; a filter starting with a wildcard never matches
    a `$` topic (MQTT-4.7.2-1) while `$SYS/#` does."""
    sub = Peer(port)
    pub = Peer(port)
    sub.subscribed(("wc/+/c", 1), ("wc/x/#", 1))
    every = Peer(port)
    every.subscribed(("#", 0), ("+/dollar", 0))
    dollar = Peer(port)
    dollar.subscribed(("$SYS/dollar", 0))
    pub.publish("wc/b/c", b"plus", 1)
    sub.expect_message("wc/b/c", b"plus", qos=1)
    pub.publish("wc/x", b"parent", 1)
    sub.expect_message("wc/x", b"parent", what="a/# matches a")
    pub.publish("wc/x/y/z", b"deep", 1)
    sub.expect_message("wc/x/y/z", b"deep")
    pub.publish("wc/b/c/d", b"too deep for +", 1)
    pub.publish("wc/end/c", b"marker", 1)
    sub.expect_message("wc/end/c", b"marker", what="`+` matched more than one level")
    drained(sub, "wildcards")
    for topic, payload in (("wc/b/c", b"plus"), ("wc/x", b"parent"), ("wc/x/y/z", b"deep"),
                           ("wc/b/c/d", b"too deep for +"), ("wc/end/c", b"marker")):
        every.expect_message(topic, payload, what=f"# receives {topic}")
    # A broker may refuse clients' $SYS publishes (mosquitto drops them); either way `#` must not see one.
    pub.publish("$SYS/dollar", b"system", 1)
    pub.publish("wc/after", b"marker", 1)
    every.expect_message("wc/after", b"marker", what="`#` and `+/dollar` must not match $SYS/dollar")
    drained(every, "$ topics")
    for peer in (sub, pub, every, dollar):
        peer.close()


def retained(http, tcp, port):
    """A retained message at QoS 0, 1 and 2 reaches a later subscriber with the retain flag at its QoS, live
    messages carry no flag, and an empty retained payload clears it."""
    pub = Peer(port)
    for qos in (0, 1, 2):
        pub.publish(f"ret/q{qos}", f"kept at {qos}".encode(), qos, retain=True)
    late = Peer(port)
    late.subscribed(("ret/q0", 2), ("ret/q1", 2), ("ret/q2", 2))
    got = {}
    for _ in range(3):
        message = late.message("a retained message")
        got[message.topic] = message
    for qos in (0, 1, 2):
        message = got.get(f"ret/q{qos}")
        expect(message is not None and message.payload == f"kept at {qos}".encode(), f"retained q{qos}: {got}")
        expect(message.retain and message.qos == qos, f"ret/q{qos}: retain {message.retain} qos {message.qos}")
    pub.publish("ret/q1", b"live", 1)
    late.expect_message("ret/q1", b"live", qos=1, retain=False, what="a live message carries no retain flag")
    # A lower filter QoS caps a retained message's.
    capped = Peer(port)
    capped.subscribed(("ret/q2", 1))
    capped.expect_message("ret/q2", b"kept at 2", qos=1, retain=True)
    for qos in (0, 1, 2):
        pub.publish(f"ret/q{qos}", b"", 1, retain=True)
    cleared = Peer(port)
    cleared.subscribed(("ret/#", 1))
    pub.publish("ret/end", b"marker", 1)
    cleared.expect_message("ret/end", b"marker", retain=False, what="cleared retained messages must not come")
    for peer in (pub, late, capped, cleared):
        peer.close()


def will(http, tcp, port):
    """A connection that ends without DISCONNECT has its will published at its QoS (0, 1, 2, and retained);
    one that sends DISCONNECT has none."""
    watcher = Peer(port)
    watcher.subscribed(("will/#", 2))
    for qos in (0, 1, 2):
        raw = RawClient(port)
        raw.connected(client_id=f"will-q{qos}", will=(f"will/q{qos}", f"gone {qos}".encode(), qos, False))
        raw.abandon()
        watcher.expect_message(f"will/q{qos}", f"gone {qos}".encode(), qos=qos, retain=False)
    raw = RawClient(port)
    raw.connected(client_id="will-kept", will=("will/kept", b"retained will", 1, True))
    raw.abandon()
    watcher.expect_message("will/kept", b"retained will", qos=1, retain=False,
                           what="a retained will goes to present subscribers without the flag")
    late = Peer(port)
    late.subscribed(("will/kept", 1))
    late.expect_message("will/kept", b"retained will", retain=True, what="a retained will is retained")
    polite = RawClient(port)
    polite.connected(client_id="will-polite", will=("will/polite", b"must not be published", 1, False))
    polite.disconnect()
    marker = Peer(port)
    marker.publish("will/end", b"marker", 1)
    watcher.expect_message("will/end", b"marker", what="DISCONNECT must drop the will")
    drained(watcher, "will")
    marker.publish("will/kept", b"", 1, retain=True)
    for peer in (watcher, late, marker):
        peer.close()


def keepalive(http, tcp, port):
    """A client that CONNECTs with keep-alive 1 and then sends nothing is closed within 1.5 s (MQTT-3.1.2-24,
    with slack for a loaded machine) and its will is published."""
    watcher = Peer(port)
    watcher.subscribed(("ka/#", 1))
    raw = RawClient(port)
    raw.connected(client_id="keepalive-1", keepalive=1, will=("ka/expired", b"silent too long", 1, False))
    connected = time.monotonic()
    raw.closed("a silent keep-alive 1 client")
    elapsed = time.monotonic() - connected
    expect(1.0 <= elapsed <= 1.5 + 1.5, f"closed after {elapsed:.2f} s, expected about 1.5 s")
    watcher.expect_message("ka/expired", b"silent too long", qos=1)
    # One that keeps talking stays: PINGREQ every half second for three seconds.
    raw = RawClient(port)
    raw.connected(client_id="keepalive-2", keepalive=1)
    for _ in range(6):
        raw.send(packet(0xC0, b""))
        got = raw.packet()
        expect(got == (0xD0, b""), f"PINGRESP expected, got {got!r}")
        # Pacing the client's own pings, not waiting for the server: the check is that it stays open.
        time.sleep(0.5)
    raw.disconnect()
    watcher.close()


def session(http, tcp, port):
    """Clean session 0 at QoS 1 and 2: messages published while the subscriber is away arrive, in order, when it
    returns (CONNACK session present 1) without subscribing again; a message it received but never acknowledged
    is sent again with DUP set; clean session 1 ends the session."""
    pub = Peer(port)
    for qos in (1, 2):
        client_id = f"session-q{qos}"
        Peer(port, client_id=client_id, clean=True).close()  # no session left from an earlier run
        sub = Peer(port, client_id=client_id, clean=False)
        expect(not sub.session_present, "a new session is not present")
        sub.subscribed((f"sess/q{qos}", qos))
        sub.close()
        for n in range(3):
            pub.publish(f"sess/q{qos}", f"while away {n}".encode(), qos)
        back = Peer(port, client_id=client_id, clean=False)
        expect(back.session_present, f"q{qos}: CONNACK session present 1")
        for n in range(3):
            back.expect_message(f"sess/q{qos}", f"while away {n}".encode(), qos=qos)
        pub.publish(f"sess/q{qos}", b"live", qos)
        back.expect_message(f"sess/q{qos}", b"live", qos=qos, what="the subscription was kept")
        back.close()
        fresh = Peer(port, client_id=client_id, clean=True)
        expect(not fresh.session_present, "clean session 1: no session present")
        fresh.close()
    # Received but never acknowledged: a raw subscriber leaves a QoS 1 PUBLISH without PUBACK.
    raw = RawClient(port)
    raw.connack(client_id="session-unacked", clean=True)
    raw.sock.close()
    raw = RawClient(port)
    raw.connected(client_id="session-unacked", clean=False)
    raw.send(subscribe_packet(7, ("sess/unacked", 1)))
    got = raw.packet()
    expect(got == (0x90, b"\x00\x07\x01"), f"SUBACK expected, got {got!r}")
    pub.publish("sess/unacked", b"left unacknowledged", 1)
    topic, packet_id, payload, qos, _, dup = parse_publish(*raw.packet())
    expect((topic, payload, qos, dup) == ("sess/unacked", b"left unacknowledged", 1, False), f"first: {topic} {payload}")
    raw.abandon()
    raw = RawClient(port)
    expect(raw.connected(client_id="session-unacked", clean=False) == 1, "session present")
    topic, again, payload, qos, _, dup = parse_publish(*raw.packet())
    expect((topic, payload, qos) == ("sess/unacked", b"left unacknowledged", 1), f"resent: {topic} {payload}")
    expect(dup, "a message sent again carries DUP=1 (MQTT-4.4.0-1)")
    raw.send(packet(0x40, again.to_bytes(2, "big")))
    raw.disconnect()
    raw = RawClient(port)
    expect(raw.connected(client_id="session-unacked", clean=True) == 0, "clean session 1: no session present")
    raw.disconnect()
    pub.close()


def takeover(http, tcp, port):
    """A second CONNECT with a connected client's id closes the first connection (MQTT-3.1.4-2); the newer one
    works, and the older one's will is published."""
    watcher = Peer(port)
    watcher.subscribed(("take/#", 1))
    first = Peer(port, client_id="takeover-id", will=("take/will", b"first is gone", 1, False))
    second = Peer(port, client_id="takeover-id")
    first.wait_closed("the first connection of a client id taken over")
    watcher.expect_message("take/will", b"first is gone", what="the will of a connection taken over")
    second.subscribed(("take/echo", 1))
    watcher.publish("take/echo", b"to the second", 1)
    second.expect_message("take/echo", b"to the second", what="the newer connection works")
    expect(not second.disconnected.is_set(), "the newer connection stays")
    second.close()
    watcher.close()


def shared(http, tcp, port):
    """`$share/<group>/<filter>`: of two members, each message goes to exactly one, and both take some."""
    first, second = Peer(port), Peer(port)
    for member in (first, second):
        member.subscribed(("$share/workers/jobs/+", 1), ("jobs-done", 1))
    pub = Peer(port)
    count = 20
    for n in range(count):
        pub.publish(f"jobs/{n % 3}", f"job {n}".encode(), 1)
    pub.publish("jobs-done", b"marker", 1)
    taken = {}
    for name, member in (("first", first), ("second", second)):
        while True:
            message = member.message(f"the jobs and the marker ({name})")
            if message.topic == "jobs-done":
                break
            expect(message.payload not in taken, f"{message.payload!r} went to both members")
            taken[message.payload] = name
        drained(member, f"member {name}")
    expect(len(taken) == count, f"{len(taken)} of {count} jobs arrived")
    expect(set(taken.values()) == {"first", "second"}, f"one member took every job: {set(taken.values())}")
    for peer in (first, second, pub):
        peer.close()


if __name__ == "__main__":
    run([qos_roundtrip, wildcards, retained, will, keepalive, session, takeover, shared])
