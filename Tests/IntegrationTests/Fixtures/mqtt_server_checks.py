"""What an MQTT connection shares with every fanout connection, checked against a running fanoutd: application
tokens (JWT) as MQTT passwords, the per-user connection limit, presence membership (WHO, joins and leaves) and
KICK. Usage as mqtt_checks_common.run says; extra arguments are tokens minted by the Swift suite.
"""
import socket

from mqtt_checks_common import Peer, RawClient, expect, run
from websocket_checks import TIMEOUT


class Lines:
    """A line-protocol connection over TCP: commands and their one-line replies, pushes in order."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.file = self.sock.makefile("rb")
        expect(self.line().startswith("+HELLO "), "the greeting")

    def line(self):
        data = self.file.readline()
        expect(data.endswith(b"\n"), f"a whole line, got {data!r}")
        return data.decode().rstrip("\n")

    def command(self, text):
        self.sock.sendall(text.encode() + b"\n")
        return self.line()


def jwt(http, tcp, port, alice_token, *_):
    """An application's JWT is an MQTT password: its subject or `token` as user name connects, another name
    gets CONNACK 4; the token's grant is what the connection may do."""
    for username in ("alice", "token"):
        raw = RawClient(port)
        expect(raw.connack(client_id=f"jwt-{username}", username=username, password=alice_token) == (0, 0),
               f"user name {username} with alice's token")
        raw.disconnect()
    raw = RawClient(port)
    expect(raw.connack(client_id="jwt-bob", username="bob", password=alice_token)[1] == 4,
           "a user name that is not the token's subject")
    expect(raw.closed("after CONNACK 4") == [], "packets after the refusal")
    alice = Peer(port, client_id="jwt-sub", username="alice", password=alice_token)
    expect(alice.subscribe(("rooms/#", 1), ("admin/x", 1)) == [1, 0x80], "the grant allows rooms.> only")
    alice.close()


def user_limit(http, tcp, port, *_):
    """max_connections_per_user=1: a second MQTT connection of the user gets CONNACK 3 (server unavailable) and
    is closed; the first goes on."""
    first = Peer(port, client_id="limit-1", username="sensors", password="sensor-secret-token")
    raw = RawClient(port)
    expect(raw.connack(client_id="limit-2", username="sensors", password="sensor-secret-token")[1] == 3,
           "the user's second connection")
    expect(raw.closed("after CONNACK 3") == [], "packets after the refusal")
    first.subscribe(("sensors/#", 0))
    first.close()


def presence(http, tcp, port, *_):
    """An MQTT subscriber is a member of a kept subject as any connection is: WHO lists it, its join and its
    leave (`closed`, the socket dropped) go out on $presence.<subject>."""
    watcher = Lines(tcp)
    expect(watcher.command("SUB $presence.room.1") == "+OK 1", "the watcher subscribes")
    raw = RawClient(port)
    raw.connected(client_id="member")
    raw.send(bytes([0x82, 11, 0, 1, 0, 6]) + b"room/1" + bytes([1]))
    got = raw.packet()
    expect(got == (0x90, bytes([0, 1, 1])), f"SUBACK, got {got!r}")
    join = watcher.line()
    expect(join.startswith("MSG $presence.room.1 1 join id="), f"the join: {join}")
    who = Lines(tcp).command("WHO room.1")
    expect(who.startswith("+OK 1 "), f"WHO lists the MQTT member: {who}")
    raw.abandon()
    leave = watcher.line()
    expect(leave.startswith("MSG $presence.room.1 2 leave id=") and leave.endswith("reason=closed"),
           f"the leave: {leave}")


def kick(http, tcp, port, *_):
    """KICK closes an MQTT connection as any other (MQTT has no goodbye from the server), and its will goes."""
    watcher = Peer(port, client_id="kick-watcher")
    watcher.subscribe(("wills/#", 1))
    raw = RawClient(port)
    raw.connected(client_id="kicked", will=("wills/kicked", b"gone", 1, False))
    admin = Lines(tcp)
    clients = admin.command("CLIENTS")
    ids = [entry.split(",")[0][3:] for entry in clients.split(" ")[2:] if "transport=mqtt" in entry]
    expect(len(ids) == 2, f"two MQTT clients listed: {clients}")
    # The newest MQTT connection is the one to kick: ids grow.
    expect(admin.command(f"KICK {max(ids, key=int)} maintenance") == "+OK 1", "KICK answers")
    expect(raw.closed("the kicked connection") == [], "nothing sent to the kicked connection")
    watcher.expect_message("wills/kicked", b"gone", qos=1, what="the kicked client's will")
    watcher.close()


def unmappable(http, tcp, port, *_):
    """A subject with no MQTT topic (`a~b`: not this mapping's escape) reaches no MQTT subscriber and is counted
    in INFO's mqtt_unmappable, once per message per MQTT receiver."""
    watcher = Peer(port, client_id="unmappable-watcher")
    watcher.subscribed(("#", 0))
    publisher = Lines(tcp)
    expect(publisher.command("PUB a~b one") == "+OK 1", "the unmappable message is queued to the MQTT client")
    expect(publisher.command("PUB a~b two") == "+OK 1", "and the second")
    expect(publisher.command("PUB fence x") == "+OK 1", "the fence")
    watcher.expect_message("fence", b"x", what="the fence, first")
    info = dict(word.split("=", 1) for word in publisher.command("INFO").split()[1:] if "=" in word)
    expect(info["mqtt_unmappable"] == "2", f"mqtt_unmappable={info['mqtt_unmappable']}")
    watcher.close()


if __name__ == "__main__":
    run([jwt, user_limit, presence, kick, unmappable])
