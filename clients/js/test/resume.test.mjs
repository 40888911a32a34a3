// Reconnect and resume through a proxy the test cuts: exact recovered and missed counts, no duplicate.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConnectionLost, connect } from "../dist/index.js";
import { fast, historyConfig, lineLogger, recorder, startDaemon, startProxy } from "./support.mjs";

test("a cut connection resumes with exact counts and no duplicate", { timeout: 30000 }, async (t) => {
    const daemon = await startDaemon({ config: historyConfig });
    t.after(() => daemon.stop());
    const proxy = await startProxy(daemon.port);
    t.after(() => proxy.stop());
    const events = recorder();
    const logger = lineLogger();
    const subscriber = await connect(proxy.address, { reconnect: fast, onEvent: events, logger });
    t.after(() => subscriber.close());
    const publisher = await connect(daemon.address);
    t.after(() => publisher.close());
    const sub = subscriber.subscribe("orders.eu");
    await sub.ready;
    for (let i = 1; i <= 2; i++) await publisher.publish("orders.eu", `o${i}`);
    assert.deepEqual([(await sub.nextMessage()).seq, (await sub.nextMessage()).seq], [1, 2]);

    proxy.cut(true);
    await events.waitFor("disconnected");
    // Seven while away; history keeps five (seqs 5 to 9), so 3 and 4 are gone for good.
    for (let i = 3; i <= 9; i++) await publisher.publish("orders.eu", `o${i}`);
    proxy.release();
    const [resumed] = await events.waitFor("resumed");
    assert.deepEqual(resumed.report, { subject: "orders.eu", recovered: 5, missed: 2, reason: "resume" });
    assert.ok(logger.lines.includes("fanout: recovered 5 messages on orders.eu"));
    assert.ok(logger.lines.includes("fanout: missed 2 messages on orders.eu (history too short)"));
    await publisher.publish("orders.eu", "o10");
    const seqs = [];
    for (let i = 0; i < 6; i++) seqs.push((await sub.nextMessage()).seq);
    assert.deepEqual(seqs, [5, 6, 7, 8, 9, 10]);
    assert.equal(sub.pending, 0);
});

test("subjects met through a wildcard resume, and losses without history are counted", { timeout: 30000 }, async (t) => {
    const daemon = await startDaemon({ config: historyConfig });
    t.after(() => daemon.stop());
    const proxy = await startProxy(daemon.port);
    t.after(() => proxy.stop());
    const events = recorder();
    const subscriber = await connect(proxy.address, { reconnect: fast, onEvent: events, logger: lineLogger() });
    t.after(() => subscriber.close());
    const publisher = await connect(daemon.address);
    t.after(() => publisher.close());
    const sub = subscriber.subscribe("feeds.*", "news.*");
    await sub.ready;
    await publisher.publish("feeds.a", "a1");
    await publisher.publish("news.uk", "n1");
    assert.deepEqual([(await sub.nextMessage()).subject, (await sub.nextMessage()).subject], ["feeds.a", "news.uk"]);
    proxy.cut(true);
    await events.waitFor("disconnected");
    await publisher.publish("feeds.a", "a2");
    await publisher.publish("feeds.a", "a3");
    await publisher.publish("news.uk", "n2");
    await publisher.publish("news.uk", "n3");
    proxy.release();
    const reports = Object.fromEntries((await events.waitFor("resumed", 2))
        .map((e) => [e.report.subject, [e.report.recovered, e.report.missed]]));
    assert.deepEqual(reports, { "feeds.a": [2, 0], "news.uk": [0, 2] });
    await publisher.publish("news.fr", "f1");
    const received = [];
    for (let i = 0; i < 3; i++) {
        const m = await sub.nextMessage();
        received.push(`${m.subject}#${m.seq}`);
    }
    assert.deepEqual(received, ["feeds.a#2", "feeds.a#3", "news.fr#1"]);
});

test("a restarted server is reported as unknown losses", { timeout: 30000 }, async (t) => {
    const first = await startDaemon({ config: historyConfig });
    t.after(() => first.stop());
    const proxy = await startProxy(first.port);
    t.after(() => proxy.stop());
    const events = recorder();
    const subscriber = await connect(proxy.address, { reconnect: fast, onEvent: events, logger: lineLogger() });
    t.after(() => subscriber.close());
    const sub = subscriber.subscribe("orders.us");
    await sub.ready;
    const publisher = await connect(first.address);
    t.after(() => publisher.close());
    await publisher.publish("orders.us", "before");
    assert.equal((await sub.nextMessage()).seq, 1);
    proxy.cut(true);
    const second = await startDaemon({ config: historyConfig });
    t.after(() => second.stop());
    proxy.target = second.port;
    const restartedPublisher = await connect(second.address);
    t.after(() => restartedPublisher.close());
    await restartedPublisher.publish("orders.us", "after restart");
    proxy.release();
    const [resumed] = await events.waitFor("resumed");
    assert.equal(resumed.report.missed, null);
    assert.match(resumed.detail, /unknown: the server's numbering restarted/);
    const message = await sub.nextMessage();
    assert.deepEqual([message.seq, message.text], [1, "after restart"]);
});

test("without reconnect the iteration fails with ConnectionLost", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    const proxy = await startProxy(daemon.port);
    t.after(() => proxy.stop());
    const client = await connect(proxy.address, { reconnect: false, logger: lineLogger() });
    t.after(() => client.close());
    const sub = client.subscribe("x");
    await sub.ready;
    proxy.cut(false);
    await assert.rejects(sub.next(), ConnectionLost);
    await assert.rejects(client.publish("x", "y"), ConnectionLost);
});
