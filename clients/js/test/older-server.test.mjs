// Against a server without history (no epoch in its greeting, before 1.1): subscriptions come back with SUB
// after a reconnect, and a jump in a subject's seqs is reported as a gap.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConnectionLost, connect } from "../dist/index.js";
import { lineLogger, recorder, startFakeServer } from "./support.mjs";

test("resubscribes everything and reports gaps", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn, index) => {
        assert.equal(await conn.line(), "SUB news.* orders");
        conn.send("+OK 2");
        if (index === 0) {
            conn.send("MSG news.uk 1 first");
            conn.send("MSG orders 7 joined mid-stream");
            await conn.line(); // the test's PING: both messages are in
            conn.socket.destroy();
            return;
        }
        conn.send("MSG news.uk 4 after the outage");
        conn.send("MSG orders 8 next");
        await conn.closed();
    }, "");
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.address, { reconnect: { initial: 10, maximum: 50 }, onEvent: events, logger: lineLogger() });
    t.after(() => client.close());
    assert.equal(client.greeting.epoch, null);
    const sub = client.subscribe("news.*", "orders");
    await sub.ready;
    assert.deepEqual([(await sub.nextMessage()).seq, (await sub.nextMessage()).seq], [1, 7]);
    await assert.rejects(client.ping(), ConnectionLost);
    const after = [await sub.nextMessage(), await sub.nextMessage()].map((m) => `${m.subject}#${m.seq}`);
    assert.deepEqual(after, ["news.uk#4", "orders#8"]);
    assert.deepEqual(events.of("gap").map((e) => e.detail), ["gap on news.uk: expected seq 2, got 4"]);
});
