// Each -ERR code arrives as its own error class carrying the server's text.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
    AuthRequired, BadSubject, ConnectionLost, Denied, Limit, ServerError, Syntax, TooLong, Unavailable, connect,
} from "../dist/index.js";
import { authConfig, lineLogger, sensorsToken, startDaemon, startFakeServer } from "./support.mjs";

test("bad-subject, syntax and too-long, and the connection stays usable", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon({ env: { FANOUTD_MAX_LINE: "1024" } });
    t.after(() => daemon.stop());
    const client = await connect(daemon.address);
    t.after(() => client.close());
    await assert.rejects(client.publish("news.*", "x"), (e) => e instanceof BadSubject && /wildcards/.test(e.text));
    await assert.rejects(client.last("orders", -1), Syntax);
    // The client assumes the default max_line (65536), so this goes as a PUB line the server refuses.
    await assert.rejects(client.publish("big", "x".repeat(2000)), TooLong);
    assert.equal(await client.publish("small", "ok"), 0);
});

test("limit", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon({ env: { FANOUTD_MAX_SUBSCRIPTIONS: "2" } });
    t.after(() => daemon.stop());
    const client = await connect(daemon.address);
    t.after(() => client.close());
    const tooMany = client.subscribe("a", "b", "c");
    await assert.rejects(tooMany.ready, Limit);
    await assert.rejects(tooMany.next(), Limit);
    const sub = client.subscribe("a", "b");
    await sub.ready;
    assert.deepEqual(sub.patterns, ["a", "b"]);
});

test("auth-required, denied, and a bad token", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon({ config: authConfig });
    t.after(() => daemon.stop());
    const anonymous = await connect(daemon.address);
    t.after(() => anonymous.close());
    assert.equal(anonymous.greeting.authRequired, true);
    await assert.rejects(anonymous.publish("sensors.kitchen", "21.5"), AuthRequired);
    const sensors = await connect(daemon.address, { token: sensorsToken });
    t.after(() => sensors.close());
    assert.equal(await sensors.publish("sensors.kitchen", "21.5"), 0);
    await assert.rejects(sensors.publish("news.uk", "not mine"), Denied);
    await assert.rejects(connect(daemon.address, { token: "wrong" }), Denied);
});

test("unavailable and unknown codes carry the server's text", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        await conn.line();
        conn.send("-ERR unavailable shard 2 is down; outcome unknown");
        await conn.line();
        conn.send("-ERR brand-new a code from a later server");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address, { reconnect: false });
    t.after(() => client.close());
    await assert.rejects(client.publish("x", "1"), (e) => e instanceof Unavailable && e.text === "shard 2 is down; outcome unknown");
    await assert.rejects(client.publish("x", "2"), (e) => e instanceof ServerError && e.code === "brand-new"
        && e.text === "a code from a later server");
});

test("publishes in flight when the connection drops fail and are not sent again", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn, index) => {
        if (index === 0) {
            await conn.line();
            await conn.line();
            conn.socket.destroy();
            return;
        }
        await conn.line();
        conn.send("+OK 0");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address, { reconnect: { initial: 10, maximum: 50 }, logger: lineLogger() });
    t.after(() => client.close());
    const results = await Promise.allSettled([client.publish("x", "1"), client.publish("x", "2")]);
    assert.ok(results.every((r) => r.status === "rejected" && r.reason instanceof ConnectionLost), String(results));
    assert.match(results[0].reason.message, /not sent again/);
    assert.equal(await client.publish("x", "3"), 0);
    assert.deepEqual(server.connections.flatMap((c) => c.received), ["PUB x 1", "PUB x 2", "PUB x 3"]);
});
