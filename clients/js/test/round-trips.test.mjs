// Round trips against a real fanoutd: subscribe, publish, pipelining, payloads, history, INFO.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { readFileSync } from "node:fs";
import { CannotConnect, UnknownCommand, connect } from "../dist/index.js";
import { historyConfig, startDaemon } from "./support.mjs";

let daemon;
before(async () => (daemon = await startDaemon({ config: historyConfig })));
after(async () => daemon.stop());

test("a publish reaches a wildcard subscriber with its seq", { timeout: 20000 }, async () => {
    const subscriber = await connect(daemon.address);
    const publisher = await connect(daemon.address);
    const sub = subscriber.subscribe("news.*", "alerts.>");
    await sub.ready;
    assert.equal(await publisher.publish("news.uk", "hello"), 1);
    assert.equal(await publisher.publish("alerts.fire.kitchen", new TextEncoder().encode("smoke and more")), 1);
    assert.equal(await publisher.publish("news.uk.london", "nobody"), 0);
    const first = await sub.nextMessage();
    const second = await sub.nextMessage();
    assert.deepEqual([first.subject, first.seq, first.text], ["news.uk", 1, "hello"]);
    assert.deepEqual([second.subject, second.seq, second.text], ["alerts.fire.kitchen", 1, "smoke and more"]);
    await subscriber.close();
    await publisher.close();
});

test("concurrent publishes are pipelined and matched in order", { timeout: 30000 }, async () => {
    const subscriber = await connect(daemon.address);
    const publisher = await connect(daemon.address);
    const sub = subscriber.subscribe("pipe.>");
    await sub.ready;
    const receivers = await Promise.all(Array.from({ length: 2000 }, (_, i) =>
        publisher.publish(i % 2 === 0 ? "pipe.a" : "other.a", String(i))));
    assert.deepEqual(receivers, Array.from({ length: 2000 }, (_, i) => (i % 2 === 0 ? 1 : 0)));
    const seqs = [];
    for await (const message of sub) {
        seqs.push(message.seq);
        if (seqs.length === 1000) break;
    }
    assert.deepEqual(seqs, Array.from({ length: 1000 }, (_, i) => i + 1));
    // Leaving the loop unsubscribed.
    assert.equal((await subscriber.info()).subscriptions, 0);
    await subscriber.close();
    await publisher.close();
});

test("large and binary payloads arrive unchanged", { timeout: 20000 }, async () => {
    const client = await connect(daemon.address);
    const sub = client.subscribe("blob");
    await sub.ready;
    // Every byte a PUB line can carry: all but LF, and no CR at the end.
    const bytes = [];
    while (bytes.length < 60000) for (let b = 0; b < 256; b++) if (b !== 10) bytes.push(b);
    const payload = new Uint8Array([...bytes.slice(0, 60000), 101, 110, 100]);
    assert.equal(await client.publish("blob", payload), 1);
    const message = await sub.nextMessage();
    assert.equal(message.payload.length, 60003);
    assert.deepEqual(message.payload, payload);
    await client.close();
});

test("last gives retained messages, then subscribe goes on without repeats", { timeout: 20000 }, async () => {
    const client = await connect(daemon.address);
    for (let i = 1; i <= 4; i++) await client.publish("orders.eu", `order-${i}`);
    const newest = await client.last("orders.eu", 2);
    assert.deepEqual(newest.map((m) => [m.seq, m.text]), [[3, "order-3"], [4, "order-4"]]);
    await client.publish("orders.eu", "order-5");
    const sub = client.subscribe("orders.eu");
    await sub.ready;
    await client.publish("orders.eu", "order-6");
    assert.deepEqual([(await sub.nextMessage()).seq, (await sub.nextMessage()).seq], [5, 6]);
    assert.equal(sub.pending, 0);
    await client.close();
});

test("info is an object with numbers", { timeout: 20000 }, async () => {
    const client = await connect(daemon.address);
    const info = await client.info();
    assert.equal(typeof info.uptime_s, "number");
    assert.equal(info.epoch, client.greeting.epoch);
    assert.match(await client.ping("hi"), /PONG hi/);
    assert.match(await client.request("CLIENTS"), /^1 id=/);
    await assert.rejects(client.request("FROB"), UnknownCommand);
    await client.close();
});

test("TLS with the server's CA, and a refusal without it", { timeout: 30000 }, async (t) => {
    const secure = await startDaemon({ tls: true });
    t.after(() => secure.stop());
    const client = await connect(`127.0.0.1:${secure.tlsPort}`, { tls: { ca: readFileSync(secure.certificate) } });
    t.after(() => client.close());
    const sub = client.subscribe("secure");
    await sub.ready;
    assert.equal(await client.publish("secure", "over tls"), 1);
    assert.equal((await sub.nextMessage()).text, "over tls");
    await assert.rejects(connect(`127.0.0.1:${secure.tlsPort}`, { tls: true, reconnect: false }), CannotConnect);
});
