// The browser entry point's transport, on the runtime's own WebSocket (Node 20: --experimental-websocket, which
// scripts/run-tests.mjs passes to this file alone; browsers are tested in browser.test.mjs).
import assert from "node:assert/strict";
import { test } from "node:test";
import { connect as connectTcp } from "../dist/index.js";
import { connect, SlowConsumer } from "../dist/browser.js";
import { startDaemon } from "./support.mjs";

const skip = typeof WebSocket === "undefined" && "no WebSocket in this Node";

test("a WebSocket cannot be paused: a subscription that falls too far behind ends with SlowConsumer",
    { timeout: 20000, skip }, async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    const slow = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`, { maxPending: 10 });
    t.after(() => slow.close());
    const publisher = await connectTcp(daemon.address);
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
