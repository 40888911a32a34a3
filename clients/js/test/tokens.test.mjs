// Application tokens (JWT) in the client, against scripted servers that send the pushes of docs/protocol-summary.md ("Beyond the contract"):
// the token function called on connect and on every reconnect, a refresh ahead of `exp` and on the
// `-ERR auth-expired` push, a failed refresh surfaced and retried, the `-ERR denied revoked:` notice ending the
// subscriptions it names, replies still matched when a push comes between a command and its reply, and a JWT
// presented in Node's WebSocket handshake as Authorization (runtime-tokens.test.mjs: the browser's subprotocol).
import assert from "node:assert/strict";
import { test } from "node:test";
import { connect, Denied, TokenError } from "../dist/index.js";
import { claims, refreshIn } from "../dist/tokens.js";
import { jwt, startFakeWebSocketServer, testCertificate } from "./fake-websocket.mjs";
import { fast, recorder, startFakeServer } from "./support.mjs";

/** A token function that counts its calls, keeps what it gave, and may be told to fail. */
function tokens(lifetimeSeconds = 3600) {
    const source = async () => {
        source.calls++;
        if (source.failing > 0) {
            source.failing--;
            throw new Error("backend down");
        }
        const token = jwt("alice", lifetimeSeconds, source.calls);
        source.issued.push(token);
        return token;
    };
    source.calls = 0;
    source.failing = 0;
    source.issued = [];
    return source;
}

test("the refresh comes a tenth of the lifetime before exp, within its bounds", () => {
    const now = 1_000_000_000;
    const token = (iat, exp) => `e30.${Buffer.from(JSON.stringify({ iat, exp })).toString("base64url")}.x`;
    const s = now / 1000;
    assert.equal(refreshIn(token(s, s + 3600), now), (3600 - 60) * 1000); // capped at a minute
    assert.equal(refreshIn(token(s, s + 300), now), (300 - 30) * 1000); // a tenth
    assert.equal(refreshIn(token(s, s + 20), now), (20 - 5) * 1000); // at least 5 s
    assert.equal(refreshIn(token(s, s + 3), now), 1500); // never before half of it
    assert.equal(refreshIn(token(s - 100, s - 1), now), 0); // already due
    assert.equal(refreshIn("static-token", now), null);
    assert.equal(refreshIn("a.b.c", now), null);
    assert.deepEqual(claims(token(1, 2)), { iat: 1, exp: 2 });
});

test("the token function is called before connecting and on every reconnect", { timeout: 20000 }, async (t) => {
    const source = tokens();
    const seen = [];
    const server = await startFakeServer(async (conn, index) => {
        seen.push(await conn.line());
        conn.send("+OK");
        if (index === 0) {
            conn.socket.destroy(); // the first connection drops once authenticated
            return;
        }
        await conn.closed();
    });
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.address, { token: source, reconnect: fast, onEvent: events });
    t.after(() => client.close());
    await events.waitFor("connected");
    assert.equal(source.calls, 2);
    assert.deepEqual(seen, source.issued.map((token) => `AUTH ${token}`));
});

test("a short token is refreshed ahead of exp on the live connection", { timeout: 20000 }, async (t) => {
    const source = tokens(2);
    let refreshed;
    const refresh = new Promise((resolve) => (refreshed = resolve));
    const server = await startFakeServer(async (conn) => {
        await conn.line();
        conn.send("+OK");
        assert.equal(await conn.line(), "SUB chat.>");
        conn.send("+OK 1");
        const started = Date.now();
        const line = await conn.line();
        refreshed({ line, after: Date.now() - started });
        conn.send("+OK");
        conn.send("MSG chat.room 1 still here");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address, { token: source });
    t.after(() => client.close());
    const sub = client.subscribe("chat.>");
    await sub.ready;
    const { line, after } = await refresh;
    // 2 s token: refreshed at half its lifetime, before it expires, on the same connection.
    assert.equal(line, `AUTH ${source.issued[1]}`);
    assert.ok(after < 1900, `refreshed ${after} ms after the SUB`);
    assert.equal((await sub.nextMessage()).text, "still here");
    assert.equal(server.connections.length, 1);
});

test("a function that gives the same token again does not refresh in a loop", { timeout: 20000 }, async (t) => {
    const token = jwt("alice", 2);
    const lines = [];
    const server = await startFakeServer(async (conn) => {
        for (;;) {
            lines.push(await conn.line());
            conn.send("+OK");
        }
    });
    t.after(() => server.stop());
    const client = await connect(server.address, { token: () => token });
    t.after(() => client.close());
    // Past the token's exp: the refresh timer had all its chances (the wait is the thing tested).
    await new Promise((resolve) => setTimeout(resolve, 2500));
    // The AUTH of the connect and the one refresh before exp; the same token is not due again at once.
    assert.deepEqual(lines, [`AUTH ${token}`, `AUTH ${token}`]);
});

test("the auth-expired push fetches a fresh token, and a reply still finds its command", { timeout: 20000 }, async (t) => {
    const source = tokens();
    const server = await startFakeServer(async (conn) => {
        await conn.line();
        conn.send("+OK");
        assert.equal(await conn.line(), "PUB a.b one");
        // The push comes between the command and its reply: it must not be taken for the reply.
        conn.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s");
        conn.send("+OK 3");
        assert.ok((await conn.line()).startsWith("AUTH "));
        conn.send("+OK");
        await conn.closed();
    });
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.address, { token: source, onEvent: events });
    t.after(() => client.close());
    assert.equal(await client.publish("a.b", "one"), 3);
    await events.waitFor("token-refreshed");
    assert.deepEqual(events.events.map((e) => e.kind), ["auth-expired", "token-refreshed"]);
    assert.equal(source.calls, 2);
});

test("a failed refresh is reported and retried", { timeout: 20000 }, async (t) => {
    const source = tokens();
    const server = await startFakeServer(async (conn) => {
        await conn.line();
        conn.send("+OK");
        conn.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s");
        assert.ok((await conn.line()).startsWith("AUTH "));
        conn.send("-ERR denied token is for another user");
        assert.ok((await conn.line()).startsWith("AUTH "));
        conn.send("+OK");
        await conn.closed();
    });
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.address, { token: source, onEvent: events });
    t.after(() => client.close());
    source.failing = 1;
    await events.waitFor("token-refreshed", 1, 15000);
    // The function threw once (retried after 1 s), then the server refused its token (retried after 2 s).
    const failures = events.of("token-failed").map((e) => e.detail);
    assert.equal(failures.length, 2);
    assert.match(failures[0], /backend down/);
    assert.match(failures[1], /another user/);
    assert.equal(source.calls, 4); // connect, the failure, the refused token, the good one
});

test("a token function that fails before the first connection throws TokenError", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer((conn) => conn.closed());
    t.after(() => server.stop());
    await assert.rejects(connect(server.address, { token: async () => { throw new Error("no session"); } }),
        (error) => error instanceof TokenError && error.cause.message === "no session");
    await assert.rejects(connect(server.address, { token: () => "two words" }), TokenError);
});

test("the revoked notice ends the subscriptions it names", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        await conn.line();
        conn.send("+OK");
        assert.equal(await conn.line(), "SUB chat.> other.*");
        conn.send("+OK 2");
        assert.equal(await conn.line(), "SUB news.*");
        conn.send("+OK 3");
        assert.equal(await conn.line(), "PING");
        conn.send("-ERR denied revoked: no longer allowed to subscribe to chat.>");
        conn.send("+PONG");
        // The revoked subscription's other pattern is given up too; news.* stays.
        assert.equal(await conn.line(), "UNSUB other.*");
        conn.send("+OK 1");
        conn.send("MSG news.today 1 kept");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address, { token: () => jwt("alice", 3600) });
    t.after(() => client.close());
    const revoked = client.subscribe("chat.>", "other.*");
    await revoked.ready;
    const kept = client.subscribe("news.*");
    await kept.ready;
    assert.equal(await client.ping(), "PONG");
    await assert.rejects(revoked.next(), (error) => error instanceof Denied && /chat\.>/.test(error.message));
    assert.equal((await kept.nextMessage()).text, "kept");
});

test("Node's WebSocket presents a JWT as Authorization: Bearer, and refreshes with AUTH", { timeout: 20000 }, async (t) => {
    const source = tokens();
    let handshake;
    const refreshed = new Promise((resolve) => {
        handshake = async (conn) => {
            // No AUTH after the greeting: a PING that settles the server's answer to the handshake's token
            // (fanoutd sends AUTH's +OK first), then the application's.
            conn.send("+OK");
            for (let i = 0; i < 2; i++) {
                assert.equal(await conn.line(), "PING");
                conn.send("+PONG");
            }
            conn.send("-ERR auth-expired token expired; send AUTH with a fresh token within 30s");
            const line = await conn.line();
            conn.send("+OK");
            resolve({ conn, line });
        };
    });
    const server = await startFakeWebSocketServer((conn) => handshake(conn));
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.url, { token: source, onEvent: events });
    t.after(() => client.close());
    assert.equal(await client.ping(), "PONG");
    const { conn, line } = await refreshed;
    assert.equal(conn.headers.authorization, `Bearer ${source.issued[0]}`);
    assert.equal(conn.headers["sec-websocket-protocol"], undefined);
    assert.equal(line, `AUTH ${source.issued[1]}`);
    await events.waitFor("token-refreshed");
});

test("the server's answer to the handshake's token is never taken for a command's reply", { timeout: 20000 }, async (t) => {
    const token = jwt("alice", 3600);
    const server = await startFakeWebSocketServer(async (conn) => {
        // As fanoutd answers a token on the upgrade: AUTH's +OK right after the greeting (docs/browsers.md).
        conn.send("+OK");
        assert.equal(await conn.line(), "PING");
        conn.send("+PONG");
        assert.equal(await conn.line(), "PUB a.b one");
        conn.send("+OK 2");
    });
    t.after(() => server.stop());
    const client = await connect(server.url, { token });
    t.after(() => client.close());
    assert.equal(await client.publish("a.b", "one"), 2);
});

test("a token refused after the handshake fails the connect", { timeout: 20000 }, async (t) => {
    const server = await startFakeWebSocketServer(async (conn) => {
        conn.send("-ERR denied invalid token");
        assert.equal(await conn.line(), "PING");
        conn.send("+PONG");
    });
    t.after(() => server.stop());
    await assert.rejects(connect(server.url, { token: jwt("alice", 3600), reconnect: false }), Denied);
});

test("a static token over Node's WebSocket goes as AUTH, not in the handshake", { timeout: 20000 }, async (t) => {
    let seen;
    const first = new Promise((resolve) => (seen = resolve));
    const server = await startFakeWebSocketServer(async (conn) => {
        const line = await conn.line();
        conn.send("+OK");
        seen({ line, authorization: conn.headers.authorization });
    });
    t.after(() => server.stop());
    const client = await connect(server.url, { token: "sensor-secret-token" });
    t.after(() => client.close());
    assert.deepEqual(await first, { line: "AUTH sensor-secret-token", authorization: undefined });
});

test("wss:// with a custom CA carries the JWT, and is refused without the CA", { timeout: 20000 }, async (t) => {
    const certificate = testCertificate();
    const token = jwt("alice", 3600);
    let seen;
    const handshake = new Promise((resolve) => (seen = resolve));
    const server = await startFakeWebSocketServer(async (conn) => {
        for (let i = 0; i < 2; i++) {
            assert.equal(await conn.line(), "PING");
            conn.send("+PONG");
        }
        seen(conn.headers.authorization);
    }, certificate);
    t.after(() => server.stop());
    assert.match(server.url, /^wss:/);
    const client = await connect(server.url, { token, tls: { ca: certificate.cert } });
    t.after(() => client.close());
    assert.equal(await client.ping(), "PONG");
    assert.equal(await handshake, `Bearer ${token}`);
    await assert.rejects(connect(server.url, { token, reconnect: false }), /certificate/);
});
