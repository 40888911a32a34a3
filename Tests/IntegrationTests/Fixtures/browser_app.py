"""A web application's backend for the cross-origin browser tests: serves cross_origin_page.html (at /) and
client_page.html (at /client, with the JavaScript client's browser build, --client-script, at /fanout.browser.js,
as an application serves the library itself) on an origin of its own and, given an HMAC secret, mints the page's
tokens at /token as an application would, with PyJWT.

Usage: browser_app.py [--client-script FANOUT_BROWSER_JS] [--secret-file F] [--sub USER] [--ttl SECONDS]
                      [--issuer I] [--audience A] [--publish P ...] [--subscribe P ...]
                      [--publish-deny P ...] [--subscribe-deny P ...]
Listens on 127.0.0.1 on a port the kernel picks, prints "APP <port>" and serves until stdin closes.
/token answers {"token": "<jwt>"} (HS256; claims sub, iat, nbf, exp, iss and aud when given, and the fanout
claim with the patterns given), or 404 when no secret was given; each token minted prints
"TOKEN <count> iat=<iat> exp=<exp>", so that a test can count the page's requests and see when it asked.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {"/": (os.path.join(HERE, "cross_origin_page.html"), "text/html; charset=utf-8"),
         "/client": (os.path.join(HERE, "client_page.html"), "text/html; charset=utf-8")}


MINTED = {"count": 0, "lock": threading.Lock()}


def mint(options):
    import jwt  # only when tokens are asked for

    with open(options.secret_file, "rb") as handle:
        secret = handle.read().removesuffix(b"\n")  # as fanoutd reads token_secret_file
    now = int(time.time())
    grant = {"publish": options.publish, "subscribe": options.subscribe}
    if options.publish_deny:
        grant["publish_deny"] = options.publish_deny
    if options.subscribe_deny:
        grant["subscribe_deny"] = options.subscribe_deny
    claims = {"sub": options.sub, "iat": now, "nbf": now, "exp": now + options.ttl, "fanout": grant}
    if options.issuer:
        claims["iss"] = options.issuer
    if options.audience:
        claims["aud"] = options.audience
    with MINTED["lock"]:
        MINTED["count"] += 1
        print(f"TOKEN {MINTED['count']} iat={now} exp={claims['exp']}", flush=True)
    return jwt.encode(claims, secret, algorithm="HS256")


def handler(options):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path in FILES:
                name, content_type = FILES[path]
                with open(name, "rb") as handle:
                    self.answer(200, content_type, handle.read())
            elif path == "/token" and options.secret_file:
                self.answer(200, "application/json", json.dumps({"token": mint(options)}).encode())
            else:
                self.answer(404, "text/plain", b"not found\n")

        def answer(self, status, content_type, body):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # the test reads stdout: keep it to the APP and TOKEN lines
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--secret-file")
    parser.add_argument("--sub", default="page-user")
    parser.add_argument("--ttl", type=int, default=300)
    parser.add_argument("--issuer")
    parser.add_argument("--audience")
    parser.add_argument("--publish", nargs="*", default=[">"])
    parser.add_argument("--subscribe", nargs="*", default=[">"])
    parser.add_argument("--publish-deny", nargs="*", default=[])
    parser.add_argument("--subscribe-deny", nargs="*", default=[])
    parser.add_argument("--client-script")
    options = parser.parse_args()
    if options.client_script:
        FILES["/fanout.browser.js"] = (options.client_script, "text/javascript; charset=utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(options))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"APP {server.server_address[1]}", flush=True)
    sys.stdin.read()  # the test closes stdin (or kills this process) when it is done
    server.shutdown()


if __name__ == "__main__":
    main()
