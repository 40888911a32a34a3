// Groups, questions and any bytes (1.2) against a real fanoutd: what the scripted server of
// protocol-1-2.test.mjs cannot show, that the daemon and the client agree on these verbs.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { TooLong, connect } from "../dist/index.js";
import { Framer, defaultMaxLine, pushHeaderRoom } from "../dist/protocol.js";
import { historyConfig, startDaemon } from "./support.mjs";

let daemon;
before(async () => (daemon = await startDaemon({ config: historyConfig, env: { FANOUTD_MAX_PAYLOAD: "2000000" } })));
after(async () => daemon.stop());

const connectAll = (count) => Promise.all(Array.from({ length: count }, () => connect(daemon.address)));
const closeAll = (clients) => Promise.all(clients.map((c) => c.close()));

/** Waits until an awaited reading (a server counter no event announces) equals `wanted`. */
async function untilEquals(read, wanted, timeoutMs = 10000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = await read();
        if (value === wanted) return;
        if (Date.now() > deadline) throw new Error(`still ${value}, not ${wanted}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
    }
}

/** Subscribers of a subject as CHANNELS counts them (group members included). */
async function channelCount(client, subject) {
    const words = (await client.request(`CHANNELS ${subject}`)).split(" ").slice(1);
    return words.filter((w) => w.slice(0, w.lastIndexOf("=")) === subject)
        .reduce((sum, w) => sum + Number(w.slice(w.lastIndexOf("=") + 1)), 0);
}

async function clientCount(client) {
    return Number((await client.request("CLIENTS")).split(" ")[0]);
}

test("each message of a group reaches exactly one member, and the members share them", { timeout: 30000 }, async () => {
    const members = await connectAll(3);
    const [watcher, publisher] = await connectAll(2);
    const subs = members.map((m) => m.subscribe("jobs.>", { group: "workers" }));
    await Promise.all(subs.map((s) => s.ready));
    const plain = watcher.subscribe("jobs.>");
    await plain.ready;
    const count = 60;
    const receivers = await Promise.all(Array.from({ length: count },
        (_, i) => publisher.publish("jobs.eu", `job ${i}`)));
    assert.deepEqual(receivers, Array(count).fill(2));
    for (let seq = 1; seq <= count; seq++) assert.equal((await plain.nextMessage()).seq, seq);
    await publisher.ping();
    await untilEquals(async () => subs.reduce((sum, s) => sum + s.pending, 0), count);
    const shares = [];
    for (const sub of subs) {
        const share = [];
        while (sub.pending) share.push((await sub.nextMessage()).seq);
        shares.push(share);
    }
    assert.deepEqual(shares.flat().sort((a, b) => a - b), Array.from({ length: count }, (_, i) => i + 1));
    for (const share of shares) {
        assert.deepEqual(share, [...share].sort((a, b) => a - b), "a member sees an increasing subsequence");
        assert.ok(share.length > 0, `every member gets a share: ${shares.map((s) => s.length)}`);
    }
    await closeAll([...members, watcher, publisher]);
});

test("a vanished member is never chosen", { timeout: 30000 }, async () => {
    const [stays, leaves, publisher] = await connectAll(3);
    const sub = stays.subscribe("jobs.*", { group: "workers" });
    const gone = leaves.subscribe("jobs.*", { group: "workers" });
    await Promise.all([sub.ready, gone.ready]);
    const before = await clientCount(publisher);
    await leaves.close();
    await untilEquals(() => clientCount(publisher), before - 1);
    const receivers = await Promise.all(Array.from({ length: 40 }, (_, i) => publisher.publish("jobs.x", String(i))));
    assert.deepEqual(receivers, Array(40).fill(1));
    for (let i = 0; i < 40; i++) assert.equal((await sub.nextMessage()).text, String(i));
    await closeAll([stays, publisher]);
});

test("a pattern is held in one mode only", { timeout: 30000 }, async () => {
    const [client, publisher] = await connectAll(2);
    const plain = client.subscribe("work.a");
    await plain.ready;
    // fanoutd would move work.a into the group, and the plain subscription would get a share only.
    assert.throws(() => client.subscribe("work.a", { group: "pool" }), /already subscribed plainly/);
    assert.throws(() => client.respond("work.a", () => "", { group: "pool" }), /already subscribed plainly/);
    const grouped = client.subscribe("work.b", { group: "pool" });
    await grouped.ready;
    assert.throws(() => client.subscribe("work.b", { group: "other" }), /in group pool/);
    await assert.rejects(client.last("work.b"), /in group pool/);
    // Both are still held as they were.
    assert.equal(await publisher.publish("work.a", "one"), 1);
    assert.equal(await publisher.publish("work.b", "two"), 1);
    assert.equal((await plain.nextMessage()).text, "one");
    assert.equal((await grouped.nextMessage()).text, "two");
    await grouped.unsubscribe();
    assert.equal(await publisher.publish("work.b", "nobody"), 0);
    await closeAll([client, publisher]);
});

test("a message that comes after a timed-out nextMessage is kept for the next reader", { timeout: 30000 }, async () => {
    const [client, publisher] = await connectAll(2);
    const sub = client.subscribe("late.a");
    await sub.ready;
    await assert.rejects(sub.nextMessage(20), /no message within 20 ms/);
    assert.equal(await publisher.publish("late.a", "kept"), 1);
    await client.ping();
    assert.equal(sub.pending, 1);
    assert.equal((await sub.nextMessage()).text, "kept");
    await closeAll([client, publisher]);
});

test("ask gathers every responder's answer, then DONE", { timeout: 30000 }, async () => {
    const responders = await connectAll(3);
    const [asker] = await connectAll(1);
    responders.forEach((client, index) => client.respond("svc.health", (q) => `ok ${index} ${q.text}`));
    await untilEquals(() => channelCount(asker, "svc.health"), 3);
    const heard = [];
    const result = await asker.ask("svc.health", "ping", { timeout: 5000, onAnswer: (a) => heard.push(a.text) });
    assert.deepEqual([result.asked, result.answered, result.gone], [3, 3, 0]);
    assert.deepEqual(result.answers.map((a) => a.text).sort(), ["ok 0 ping", "ok 1 ping", "ok 2 ping"]);
    assert.deepEqual(heard.sort(), ["ok 0 ping", "ok 1 ping", "ok 2 ping"]);
    assert.equal(new Set(result.answers.map((a) => a.responder)).size, 3, "three distinct responder ids");
    await closeAll([...responders, asker]);
});

test("max answers closes the question early", { timeout: 30000 }, async () => {
    const responders = await connectAll(3);
    const [asker] = await connectAll(1);
    for (const client of responders) client.respond("svc.any", () => "here");
    await untilEquals(() => channelCount(asker, "svc.any"), 3);
    const started = Date.now();
    const result = await asker.ask("svc.any", "who", { timeout: 10000, max: 1 });
    assert.ok(Date.now() - started < 5000, "closed by the first answer, not the timeout");
    assert.deepEqual([result.asked, result.answered, result.answers.length], [3, 1, 1]);
    await closeAll([...responders, asker]);
});

test("a silent receiver is counted at the timeout", { timeout: 30000 }, async () => {
    const [silent, answering, asker] = await connectAll(3);
    // A plain subscriber gets the question and never answers it.
    await silent.subscribe("svc.slow").ready;
    answering.respond("svc.slow", () => "fast");
    await untilEquals(() => channelCount(asker, "svc.slow"), 2);
    const started = Date.now();
    const result = await asker.ask("svc.slow", "?", { timeout: 300 });
    assert.ok(Date.now() - started >= 250);
    assert.deepEqual([result.asked, result.answered, result.gone], [2, 1, 0]);
    assert.equal(result.answers[0].text, "fast");
    await closeAll([silent, answering, asker]);
});

test("a responder that disconnects counts as gone", { timeout: 30000 }, async () => {
    const [leaving, answering, asker] = await connectAll(3);
    let asked;
    const questioned = new Promise((resolve) => (asked = resolve));
    leaving.respond("svc.work", (q) => {
        asked(q);
        return new Promise(() => undefined);
    });
    answering.respond("svc.work", () => "done");
    await untilEquals(() => channelCount(asker, "svc.work"), 2);
    const question = asker.ask("svc.work", "job", { timeout: 20000 });
    await questioned;
    const started = Date.now();
    await leaving.close();
    const result = await question;
    assert.ok(Date.now() - started < 10000, "a departure closes the question, not the timeout");
    assert.deepEqual([result.asked, result.answered, result.gone], [2, 1, 1]);
    await closeAll([answering, asker]);
});

test("an answer the server would change is not sent", { timeout: 30000 }, async () => {
    const warnings = [];
    const logger = { info: () => undefined, warn: (line) => warnings.push(line) };
    const responder = await connect(daemon.address, { logger });
    const [asker] = await connectAll(1);
    responder.respond("svc.cr", () => "ends in CR\r");
    await untilEquals(() => channelCount(asker, "svc.cr"), 1);
    const result = await asker.ask("svc.cr", "?", { timeout: 200 });
    assert.deepEqual([result.asked, result.answered], [1, 0]);
    assert.ok(warnings.some((line) => line.includes("no CR at its end")), warnings.join("\n"));
    await closeAll([responder, asker]);
});

test("respond with a group asks one member, never the asker", { timeout: 30000 }, async () => {
    const pool = await connectAll(2);
    const [plain, asker] = await connectAll(2);
    pool.forEach((client, index) => client.respond("svc.job", () => `member ${index}`, { group: "pool" }));
    plain.respond("svc.job", () => "plain");
    // The asker is itself a member: it is left out, and the group's other members are asked instead.
    asker.respond("svc.job", () => "asker", { group: "pool" });
    await untilEquals(() => channelCount(asker, "svc.job"), 4);
    const members = new Set();
    for (let i = 0; i < 12; i++) {
        const result = await asker.ask("svc.job", "run", { timeout: 5000 });
        assert.deepEqual([result.asked, result.answered], [2, 2]);
        const texts = result.answers.map((a) => a.text).sort();
        assert.equal(texts[1], "plain");
        assert.notEqual(texts[0], "asker");
        members.add(texts[0]);
    }
    assert.deepEqual([...members].sort(), ["member 0", "member 1"], "the group spreads its questions");
    await closeAll([...pool, plain, asker]);
});

const bytes = (...parts) => new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...Buffer.from(p)] : p)));
const everyByte = new Uint8Array(256 * 400).map((_, i) => i % 256);
const payloads = [
    bytes("a\nb", [0], "c\n"),            // LF and NUL: BPUB, pushed as BMSG
    bytes("\n"),
    bytes([0xff, 0xfe, 0, 0x80], " not utf-8"), // a line carries it: PUB, pushed as MSG
    bytes("ends in CR\r"),                // a line cannot carry it: BPUB, pushed as MSG with its CR
    bytes(),
    everyByte,                            // LF inside and over max_line: BPUB, BMSG
    new Uint8Array(70000).fill(120),      // over max_line without LF: BPUB, BMSG
    bytes("\r\n"),
];

test("any bytes round trip exactly", { timeout: 30000 }, async () => {
    const [subscriber, publisher] = await connectAll(2);
    const sub = subscriber.subscribe("bin.*");
    await sub.ready;
    for (const payload of payloads) assert.equal(await publisher.publish("bin.a", payload), 1);
    // Text with LF goes as BPUB too.
    assert.equal(await publisher.publish("bin.a", "two\nlines"), 1);
    for (let seq = 1; seq <= payloads.length; seq++) {
        const message = await sub.nextMessage();
        assert.deepEqual([message.subject, message.seq], ["bin.a", seq]);
        assert.ok(Buffer.from(message.payload).equals(Buffer.from(payloads[seq - 1])), `payload ${seq}`);
    }
    assert.equal((await sub.nextMessage()).text, "two\nlines");
    await closeAll([subscriber, publisher]);
});

test("a payload of max_line bytes on a long subject arrives", { timeout: 30000 }, async () => {
    // A line can carry the payload, so fanoutd pushes it as MSG: a line longer than max_line by its header.
    const [subscriber, publisher] = await connectAll(2);
    const subject = "s".repeat(200) + ".long";
    const sub = subscriber.subscribe(subject);
    await sub.ready;
    const payload = new Uint8Array(65536).fill(121);
    assert.equal(await publisher.publish(subject, payload), 1);
    assert.ok(Buffer.from((await sub.nextMessage()).payload).equals(Buffer.from(payload)));
    await closeAll([subscriber, publisher]);
});

test("the longest MSG line is taken in any split", () => {
    // What fanoutd pushes for a max_line payload on a 255-byte subject, fed as the socket may hand it over.
    const line = Buffer.from(`MSG ${"s".repeat(255)} 18446744073709551615 ${"y".repeat(defaultMaxLine)}\n`);
    for (const split of [1, defaultMaxLine, defaultMaxLine + 200, line.length - 1]) {
        const framer = new Framer(defaultMaxLine + pushHeaderRoom, 1 << 20);
        const frames = [...framer.feed(new Uint8Array(line.subarray(0, split))),
            ...framer.feed(new Uint8Array(line.subarray(split)))];
        assert.equal(frames.length, 1);
        assert.ok(Buffer.from(frames[0]).equals(line.subarray(0, line.length - 1)));
    }
});

test("binary messages replay as they were pushed", { timeout: 30000 }, async () => {
    const [client] = await connectAll(1);
    for (const payload of payloads.slice(0, 4)) assert.equal(await client.publish("orders.bin", payload), 0);
    const messages = await client.last("orders.bin", 4);
    assert.deepEqual(messages.map((m) => m.seq), [1, 2, 3, 4]);
    messages.forEach((m, i) => assert.ok(Buffer.from(m.payload).equals(Buffer.from(payloads[i])), `payload ${i + 1}`));
    await client.close();
});

test("a payload over max_payload is refused and the connection stays usable", { timeout: 30000 }, async () => {
    const [client] = await connectAll(1);
    await assert.rejects(client.publish("bin.big", new Uint8Array(2000001).fill(10)), TooLong);
    assert.equal(await client.publish("bin.big", new Uint8Array(1000).fill(10)), 0);
    await client.close();
});

test("over the WebSocket, any bytes go both ways and questions are answered", { timeout: 30000 }, async () => {
    const ws = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`);
    const [tcp] = await connectAll(1);
    const fromTcp = ws.subscribe("wsbin.tcp");
    const fromWs = tcp.subscribe("wsbin.ws");
    await Promise.all([fromTcp.ready, fromWs.ready]);
    // Text frames carry lines: a payload that is not UTF-8 goes from the WebSocket as BPUB (a binary frame).
    for (const payload of payloads) assert.equal(await ws.publish("wsbin.ws", payload), 1);
    for (let i = 0; i < payloads.length; i++) {
        assert.ok(Buffer.from((await fromWs.nextMessage()).payload).equals(Buffer.from(payloads[i])), `from ws ${i + 1}`);
    }
    // Not the third payload toward the WebSocket: a line carries it, and fanoutd pushes that MSG as a text frame
    // that is not UTF-8, which a WebSocket client must fail the connection for (RFC 6455, 8.1).
    const towardWs = payloads.filter((_, i) => i !== 2);
    for (const payload of towardWs) assert.equal(await tcp.publish("wsbin.tcp", payload), 1);
    for (let i = 0; i < towardWs.length; i++) {
        assert.ok(Buffer.from((await fromTcp.nextMessage()).payload).equals(Buffer.from(towardWs[i])), `to ws ${i + 1}`);
    }
    ws.respond("wsbin.ask", (q) => `ws heard ${q.text}`);
    await untilEquals(() => channelCount(tcp, "wsbin.ask"), 1);
    const result = await tcp.ask("wsbin.ask", "hello", { timeout: 5000 });
    assert.deepEqual(result.answers.map((a) => a.text), ["ws heard hello"]);
    await closeAll([ws, tcp]);
});
