"""HTTPS checks against a running fanoutd's https_listen, with clients that trust only the test CA and verify
that the certificate names 127.0.0.1.

Usage: https_listener_checks.py CHECK HTTPS_PORT TCP_PORT CA_PEM [ARGUMENT]
  clients      GET /healthz, /metrics and the console, an event stream, a wss:// subscriber and POST /publish over TLS, each seeing a
               message published over plain TCP (or over HTTPS)
  stream       an event stream on ARGUMENT (a subject): prints "ready", then "event <payload>" per message
  certificate  prints "same" and exits 0 when the certificate a new connection gets is the first in ARGUMENT
               (a PEM file), else prints both fingerprints and exits 1
  other-ca     a client trusting only ARGUMENT (another CA) is refused by certificate verification
Prints "ok CHECK" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
Every wait is bounded (TIMEOUT seconds).
"""
import asyncio
import hashlib
import http.client
import json
import socket
import ssl
import sys

from websockets.asyncio.client import connect

TIMEOUT = 10


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def context(ca):
    """Trusts `ca` alone and checks the host name (here the IP address in subjectAltName)."""
    made = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    expect(made.check_hostname and made.verify_mode == ssl.CERT_REQUIRED, "the context verifies")
    return made


def https(port, ca, timeout=TIMEOUT):
    return http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=context(ca))


class EventStream:
    """GET /events?subject=S over TLS; `next_payload()` reads up to the next event's data."""

    def __init__(self, port, ca, subject, timeout=TIMEOUT):
        self.connection = https(port, ca, timeout)
        self.connection.request("GET", f"/events?subject={subject}")
        self.response = self.connection.getresponse()
        expect(self.response.status == 200, f"event stream status {self.response.status}")
        expect(self.response.getheader("Content-Type", "").startswith("text/event-stream"), "event stream type")
        # The subscription is made before the head is sent: from here on, a publish reaches the stream.
        expect(self.response.fp.readline().startswith(b"retry:"), "the stream's first line")

    def next_payload(self):
        while True:
            line = self.response.fp.readline()
            expect(line, "the event stream ended")
            if line.startswith(b"data:"):
                return json.loads(line[5:].decode())["payload"]


def tcp_publish(port, subject, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        stream = sock.makefile("rb")
        expect(stream.readline().startswith(b"+HELLO fanout/1 "), "TCP greeting")
        sock.sendall(f"PUB {subject} {payload}\n".encode())
        reply = stream.readline().decode().strip()
        expect(reply.startswith("+OK "), f"TCP PUB reply {reply!r}")
        return int(reply.split()[1])


async def clients(port, tcp, ca):
    health = https(port, ca)
    health.request("GET", "/healthz")
    answer = health.getresponse()
    expect(answer.status == 200 and answer.read().strip() == b"ok", f"/healthz over TLS: {answer.status}")
    for path, wanted in (("/metrics", b"fanout_connections"), ("/", b"<html")):
        page = https(port, ca)
        page.request("GET", path)
        answer = page.getresponse()
        body = answer.read()
        expect(answer.status == 200 and wanted in body, f"{path} over TLS: {answer.status} {body[:200]!r}")
    # The console's own page, served over TLS, may open its WebSocket: its origin is https://<the host>.
    console = await asyncio.wait_for(connect(f"wss://127.0.0.1:{port}/ws", ssl=context(ca), open_timeout=TIMEOUT,
                                             origin=f"https://127.0.0.1:{port}"), TIMEOUT)
    expect((await asyncio.wait_for(console.recv(), TIMEOUT)).startswith("+HELLO fanout/1 "), "console's greeting")
    await console.close()
    events = EventStream(port, ca, "secure.news")
    ws = await asyncio.wait_for(connect(f"wss://127.0.0.1:{port}/ws", ssl=context(ca), open_timeout=TIMEOUT), TIMEOUT)
    expect((await asyncio.wait_for(ws.recv(), TIMEOUT)).startswith("+HELLO fanout/1 "), "wss greeting")
    await ws.send("SUB secure.>")
    expect(await asyncio.wait_for(ws.recv(), TIMEOUT) == "+OK 1", "wss SUB reply")
    # Plain TCP to both TLS subscribers.
    expect(tcp_publish(tcp, "secure.news", "over-tcp") == 2, "two receivers over TLS")
    expect(events.next_payload() == "over-tcp", "the event stream got the TCP message")
    expect(await asyncio.wait_for(ws.recv(), TIMEOUT) == "MSG secure.news 1 over-tcp", "wss got the TCP message")
    # HTTPS publish to both.
    publish = https(port, ca)
    publish.request("POST", "/publish/secure.news", body=b"over-https")
    answer = publish.getresponse()
    body = json.loads(answer.read())
    expect(answer.status == 200 and body["receivers"] == 2, f"POST /publish over TLS: {answer.status} {body}")
    expect(events.next_payload() == "over-https", "the event stream got the HTTPS publish")
    expect(await asyncio.wait_for(ws.recv(), TIMEOUT) == "MSG secure.news 2 over-https", "wss got the HTTPS publish")
    # A wss publisher reaches the stream too.
    await ws.send("PUB secure.news over-wss")
    expect(await asyncio.wait_for(ws.recv(), TIMEOUT) == "+OK 2", "wss PUB reply")
    expect(events.next_payload() == "over-wss", "the event stream got the wss publish")
    await ws.close()


def stream(port, ca, subject):
    # Left open while the test reloads the server: a minute between reads at most (keep-alives come sooner).
    events = EventStream(port, ca, subject, timeout=60)
    print("ready", flush=True)
    while True:
        print(f"event {events.next_payload()}", flush=True)


def certificate(port, ca, pem):
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw:
        with context(ca).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            served = tls.getpeercert(binary_form=True)
    expected = ssl.PEM_cert_to_DER_cert(open(pem).read())
    if served != expected:
        print(f"served {hashlib.sha256(served).hexdigest()}, expected {hashlib.sha256(expected).hexdigest()}")
        sys.exit(1)
    print("same")


def other_ca(port, ca):
    try:
        certificate(port, ca, None)
    except ssl.SSLCertVerificationError as error:
        expect("certificate verify failed" in str(error), str(error))
        return
    raise AssertionError("a client trusting another CA was let in")


def main():
    check, port, tcp, ca = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    argument = sys.argv[5] if len(sys.argv) > 5 else None
    if check == "clients":
        asyncio.run(asyncio.wait_for(clients(port, tcp, ca), 4 * TIMEOUT))
    elif check == "stream":
        stream(port, ca, argument)
    elif check == "certificate":
        certificate(port, ca, argument)
        return
    elif check == "other-ca":
        other_ca(port, argument)
    else:
        raise SystemExit(f"unknown check {check}")
    print(f"ok {check}")


if __name__ == "__main__":
    main()
