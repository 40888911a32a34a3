// The same client over the WebSocket at /ws from Node (Node 20 needs --experimental-websocket, which
// `npm test` passes): one API on both transports.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AuthRequired, SlowConsumer, connect } from "../dist/index.js";
import { authConfig, historyConfig, sensorsToken, startDaemon } from "./support.mjs";

test("a WebSocket client and a TCP client share subjects", { timeout: 20000, skip: typeof WebSocket === "undefined" && "no WebSocket in this Node" }, async (t) => {
    const daemon = await startDaemon({ config: historyConfig });
    t.after(() => daemon.stop());
    const browserLike = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`);
    t.after(() => browserLike.close());
    const tcp = await connect(daemon.address);
    t.after(() => tcp.close());
    const sub = browserLike.subscribe("news.*");
    await sub.ready;
    assert.equal(await tcp.publish("news.uk", "from tcp"), 1);
    const message = await sub.nextMessage();
    assert.deepEqual([message.subject, message.seq, message.text], ["news.uk", 1, "from tcp"]);
    const back = tcp.subscribe("replies");
    await back.ready;
    assert.equal(await browserLike.publish("replies", "from ws"), 1);
    assert.equal((await back.nextMessage()).text, "from ws");
});

test("a token is sent with AUTH after the WebSocket greeting", { timeout: 20000, skip: typeof WebSocket === "undefined" && "no WebSocket in this Node" }, async (t) => {
    const daemon = await startDaemon({ config: authConfig });
    t.after(() => daemon.stop());
    const anonymous = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`);
    t.after(() => anonymous.close());
    await assert.rejects(anonymous.publish("sensors.kitchen", "1"), AuthRequired);
    const sensors = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`, { token: sensorsToken });
    t.after(() => sensors.close());
    assert.equal(await sensors.publish("sensors.kitchen", "21.5"), 0);
});

test("a WebSocket cannot be paused: a subscription that falls too far behind ends with SlowConsumer", { timeout: 20000, skip: typeof WebSocket === "undefined" && "no WebSocket in this Node" }, async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    const slow = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`, { maxPending: 10 });
    t.after(() => slow.close());
    const publisher = await connect(daemon.address);
    t.after(() => publisher.close());
    const sub = slow.subscribe("firehose");
    await sub.ready;
    await Promise.all(Array.from({ length: 100 }, (_, i) => publisher.publish("firehose", String(i))));
    // The queue stops at twice the bound: what was queued is still delivered, then the error.
    const seqs = [];
    await assert.rejects((async () => {
        for (;;) seqs.push((await sub.nextMessage()).seq);
    })(), SlowConsumer);
    assert.deepEqual(seqs, Array.from({ length: 20 }, (_, i) => i + 1));
    // The client unsubscribed the subject, and the connection itself goes on.
    assert.equal((await slow.info()).subscriptions, 0);
});
