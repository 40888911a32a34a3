// A consumer that does not keep up stops the client reading its socket; nothing piles up in the client.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Closed, connect } from "../dist/index.js";
import { rawCommand, startDaemon, startFakeServer } from "./support.mjs";

const messages = 6000;
const payload = "p".repeat(1000);

test("a slow consumer holds a bounded queue and loses nothing", { timeout: 60000 }, async (t) => {
    const daemon = await startDaemon({ env: { FANOUTD_SEND_BUFFER_BYTES: "4096", FANOUTD_MAX_PENDING_BYTES: "67108864" } });
    t.after(() => daemon.stop());
    const subscriber = await connect(daemon.address, { maxPending: 10 });
    t.after(() => subscriber.close());
    const publisher = await connect(daemon.address);
    t.after(() => publisher.close());
    const sub = subscriber.subscribe("slow");
    await sub.ready;
    const receivers = await Promise.all(Array.from({ length: messages }, () => publisher.publish("slow", payload)));
    assert.deepEqual(new Set(receivers), new Set([1]));
    // No event says the socket was paused: look until the queue is full.
    for (const deadline = Date.now() + 10000; sub.pending < 10 && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // What the client holds is the bound plus at most one read (64 KiB).
    assert.ok(sub.pending >= 10 && sub.pending <= 10 + Math.ceil(65536 / payload.length) + 1, `pending ${sub.pending}`);
    // And the rest waits on the server, which the client's socket is pushing back on.
    const listing = await rawCommand(daemon.port, "CLIENTS");
    const pending = [...listing.matchAll(/pending=(\d+)/g)].map((m) => Number(m[1]));
    assert.ok(Math.max(...pending) > 0, listing);
    let expected = 1;
    for await (const message of sub) {
        assert.equal(message.seq, expected++);
        if (message.seq === messages) break;
    }
    assert.equal(expected, messages + 1);
});

test("a burst of publishes never awaited on the way holds bounded output", { timeout: 30000 }, async (t) => {
    let finish;
    const finished = new Promise((resolve) => (finish = resolve));
    // A server that reads nothing: the kernel's buffers fill, then the socket's own buffer.
    const server = await startFakeServer(() => finished);
    t.after(() => server.stop());
    t.after(() => finish());
    const client = await connect(server.address, { reconnect: false });
    let written = 0;
    const publish = client.publish.bind(client);
    const replies = [];
    for (let i = 0; i < 20000; i++) {
        const before = client["pending"].length;
        replies.push(publish("burst", payload));
        if (client["pending"].length > before) written++;
    }
    // Past the socket's high-water mark the rest wait, unwritten, for the socket to drain.
    assert.ok(written < 20000 && written > 0, `written ${written}`);
    await client.close();
    const outcomes = await Promise.allSettled(replies);
    assert.ok(outcomes.every((o) => o.status === "rejected" && o.reason instanceof Closed));
});
