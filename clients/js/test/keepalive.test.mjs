// A client that holds no subscription (a publisher, an asker) is not dropped by the server's
// idle_unsubscribed_timeout: it sends a PING while it holds none, and no warning or reconnect comes of it.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { connect } from "../dist/index.js";
import { lineLogger, recorder, startDaemon } from "./support.mjs";

let daemon;
// Connections that hold no subscription are dropped after 1 s without input.
before(async () => (daemon = await startDaemon({ env: { FANOUTD_IDLE_UNSUBSCRIBED_TIMEOUT: "1" } })));
after(async () => daemon.stop());

/** Resolves once the server closes a bare connection that sends nothing, with what it said. */
function bareConnectionDropped() {
    return new Promise((resolve, reject) => {
        const socket = net.createConnection({ host: "127.0.0.1", port: daemon.port });
        let said = "";
        socket.on("data", (chunk) => (said += chunk));
        socket.on("close", () => resolve(said));
        socket.on("error", reject);
    });
}

test("a publish-only client outlives idle_unsubscribed_timeout, quietly", { timeout: 20000 }, async (t) => {
    const logger = lineLogger();
    const events = recorder();
    const started = Date.now();
    const client = await connect(daemon.address, { logger, onEvent: events, keepalive: 250 });
    const subscriber = await connect(daemon.address);
    t.after(() => Promise.all([client.close(), subscriber.close()]));
    const sub = subscriber.subscribe("news.uk");
    await sub.ready;
    // The server's setting is in force: a connection that says nothing is dropped within the window.
    assert.match(await bareConnectionDropped(), /-ERR idle-timeout/);
    // Three timeouts' time, with a publish now and then at first and then none at all.
    assert.equal(await client.publish("news.uk", "one"), 1);
    while (Date.now() - started < 3500) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await client.publish("news.uk", "two"), 1);
    assert.deepEqual(events.events, [], "no disconnect, no reconnect");
    assert.deepEqual(logger.lines, [], "no warning");
    assert.deepEqual([(await sub.nextMessage()).text, (await sub.nextMessage()).text], ["one", "two"]);
    // Subscribed, then unsubscribed again: it is kept alive once more.
    const own = client.subscribe("news.fr");
    await own.ready;
    await own.unsubscribe();
    const quiet = Date.now();
    while (Date.now() - quiet < 2500) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await client.ping("still here"), "PONG still here");
    assert.deepEqual(events.events, [], "no disconnect, no reconnect");
    assert.deepEqual(logger.lines, [], "no warning");
});

test("over the WebSocket too, and keepalive: false leaves it to the server", { timeout: 20000 }, async (t) => {
    const url = `ws://127.0.0.1:${daemon.httpPort}/ws`;
    const kept = recorder();
    const left = recorder();
    const client = await connect(url, { logger: lineLogger(), onEvent: kept, keepalive: 250 });
    const bare = await connect(url, { logger: lineLogger(), onEvent: left, keepalive: false, reconnect: false });
    t.after(() => Promise.all([client.close(), bare.close()]));
    // The client without it is dropped after the server's 1 s; the other one is still on the same connection.
    await left.waitFor("disconnected", 1, 5000);
    const quiet = Date.now();
    while (Date.now() - quiet < 1500) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await client.ping("kept"), "PONG kept");
    assert.deepEqual(kept.events, [], "no disconnect, no reconnect");
});
