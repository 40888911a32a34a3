// Every word the client puts on a line is checked before anything is sent: a subject, pattern, group, count
// or text taken from user input can neither publish elsewhere nor smuggle in a second command (after which
// every reply would be matched to the wrong command).
import assert from "node:assert/strict";
import { test } from "node:test";
import { BadSubject, Syntax, connect } from "../dist/index.js";
import { startDaemon } from "./support.mjs";

const badSubjects = ["bad subject", "", "a\nPUB b", "a..b", ".a", "a.", "a\tb", "a\r", "café", "x".repeat(256),
    "news.*", "news.>", ">", "*"];
const badPatterns = ["bad subject", "", "a\nPUB b x", "a..b", ".a", "a.", "a.>.b", "a b", "x".repeat(256), "ü"];
const badGroups = ["bad group", "", "g\nPUB b x", "g/h", "x".repeat(65)];

test("bad subjects, patterns, groups and texts are refused before anything is sent", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    const client = await connect(daemon.address);
    t.after(() => client.close());
    const watcher = await connect(daemon.address);
    t.after(() => watcher.close());
    const everything = watcher.subscribe(">");
    await everything.ready;

    for (const subject of badSubjects) {
        await assert.rejects(client.publish(subject, "x"), BadSubject, `publish(${JSON.stringify(subject)})`);
        await assert.rejects(client.publish(subject, new Uint8Array([1, 10, 2])), BadSubject);
        await assert.rejects(client.last(subject), BadSubject);
        await assert.rejects(client.ask(subject, "q"), BadSubject);
    }
    for (const pattern of badPatterns) {
        assert.throws(() => client.subscribe(pattern), BadSubject, `subscribe(${JSON.stringify(pattern)})`);
        assert.throws(() => client.subscribe("fine", pattern), BadSubject);
        assert.throws(() => client.respond(pattern, () => "a"), BadSubject);
    }
    for (const group of badGroups) {
        assert.throws(() => client.subscribe("jobs", { group }), Syntax, `group ${JSON.stringify(group)}`);
        assert.throws(() => client.respond("jobs", () => "a", { group }), Syntax);
    }
    for (const count of [-1, 1.5, Number.NaN, "1\nPUB b x"]) await assert.rejects(client.last("a", count), Syntax);
    await assert.rejects(client.ask("a", "q", { timeout: 0 }), Syntax);
    await assert.rejects(client.ask("a", "q", { timeout: "5\nPUB b x" }), Syntax);
    await assert.rejects(client.ask("a", "q", { max: "0\nPUB b x" }), Syntax);
    await assert.rejects(client.ping("a\nPUB b x"), Syntax);
    await assert.rejects(client.request("PING\nPUB b x"), Syntax);
    await assert.rejects(client.request(""), TypeError);
    await assert.rejects(connect(daemon.address, { token: "t\nPUB b x" }), Syntax);

    // Literal tokens holding * or > among other bytes are subjects (PROTOCOL.md), and so is the longest one.
    const good = ["a*b", "x>", "a.b-c_d", "x".repeat(255)];
    for (const subject of good) assert.equal(await client.publish(subject, "ok"), 1, subject);
    // The connection is in step: each reply is its own command's, and nothing else was published.
    assert.equal(await client.ping("after"), "PONG after");
    assert.equal((await client.info()).published, good.length);
    for (const subject of good) assert.equal((await everything.nextMessage()).subject, subject);
    await assert.rejects(everything.nextMessage(300));
    assert.equal(await client.request("CHANNELS"), "1 >=1");
});

test("valid patterns are taken: wildcards in subscriptions, and a group name of 64 bytes",
    { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    const client = await connect(daemon.address);
    t.after(() => client.close());
    const sub = client.subscribe("news.*", "alerts.>", "a*b");
    await sub.ready;
    const group = client.subscribe("jobs.*", { group: "g".repeat(64) });
    await group.ready;
    assert.equal(await client.publish("news.uk", "1"), 1);
    assert.equal(await client.publish("jobs.a", "2"), 1);
    assert.equal((await sub.nextMessage()).subject, "news.uk");
    assert.equal((await group.nextMessage()).subject, "jobs.a");
});
