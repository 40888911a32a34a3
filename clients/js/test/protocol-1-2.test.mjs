// Groups, questions, any bytes (1.2) and the RESET push, against a scripted server that speaks exactly the
// lines PROTOCOL.md gives them: the exact lines the client sends, and pushes fanoutd cannot be made to send on
// demand (RESET, answers from another node). protocol-1-2-fanoutd.test.mjs runs the same verbs against fanoutd.
import assert from "node:assert/strict";
import { test } from "node:test";
import { connect } from "../dist/index.js";
import { lineLogger, recorder, startFakeServer } from "./support.mjs";

test("a group subscription is a QSUB and receives its share", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "QSUB workers jobs.> audit");
        conn.send("+OK 2");
        conn.send("MSG jobs.eu 4 job four");
        conn.send("MSG jobs.eu 9 job nine");
        await conn.closed();
    });
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.address, { onEvent: events });
    t.after(() => client.close());
    const sub = client.subscribe("jobs.>", "audit", { group: "workers" });
    await sub.ready;
    assert.deepEqual([(await sub.nextMessage()).seq, (await sub.nextMessage()).seq], [4, 9]);
    // A member sees an increasing subsequence of seqs: that is no gap.
    assert.deepEqual(events.of("gap"), []);
});

test("ask gathers answers until DONE", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "ASK svc.health 500 0 are you ok");
        conn.send("+OK q17 3");
        conn.send("ANSWER q17 4 fine");
        conn.send("ANSWER q17 node2/9 all good");
        conn.send("DONE q17 asked=3 answered=2 gone=1");
        assert.equal(await conn.line(), "ASK svc.none 1000 1 ?");
        conn.send("+OK q18 0");
        conn.send("DONE q18 asked=0 answered=0 gone=0");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address);
    t.after(() => client.close());
    const { answers, asked, gone } = await client.ask("svc.health", "are you ok", { timeout: 500, max: 0 });
    assert.deepEqual(answers.map((a) => [a.responder, a.text]), [["4", "fine"], ["node2/9", "all good"]]);
    assert.deepEqual([asked, gone], [3, 1]);
    const empty = await client.ask("svc.none", "?", { timeout: 1000, max: 1 });
    assert.deepEqual([empty.answers, empty.asked], [[], 0]);
});

test("respond answers each question with the handler's result", { timeout: 20000 }, async (t) => {
    let answered;
    const lines = new Promise((resolve) => (answered = resolve));
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "SUB svc.health");
        conn.send("+OK 1");
        assert.equal(await conn.line(), "QSUB pool svc.work");
        conn.send("+OK 2");
        conn.send("ASK svc.health a1 ping");
        conn.send("ASK svc.work a2 job");
        const got = [await conn.line(), await conn.line()].sort();
        conn.send("+OK 1");
        conn.send("+OK 0");
        answered(got);
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address);
    t.after(() => client.close());
    client.respond("svc.health", (q) => "pong " + q.text);
    client.respond("svc.work", async (q) => new Uint8Array([...new TextEncoder().encode("done "), ...q.payload]), { group: "pool" });
    assert.deepEqual(await lines, ["ANSWER a1 pong ping", "ANSWER a2 done job"]);
});

test("payloads a line cannot carry go as BPUB and arrive as BMSG", { timeout: 20000 }, async (t) => {
    const blob = new Uint8Array(256 * 4000 + 1);
    for (let i = 0; i < blob.length - 1; i++) blob[i] = i % 256;
    blob[blob.length - 1] = 13;
    const small = new Uint8Array([97, 10, 98, 0, 99, 10]);
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "SUB bin.*");
        conn.send("+OK 1");
        assert.equal(await conn.line(), "BPUB bin.a 6");
        assert.deepEqual(new Uint8Array(await conn.exactly(7)), new Uint8Array([...small, 10]));
        conn.send("+OK 3");
        assert.equal(await conn.line(), `BPUB bin.big ${blob.length}`);
        assert.ok(Buffer.from(await conn.exactly(blob.length + 1)).equals(Buffer.concat([blob, Buffer.from("\n")])));
        conn.send("+OK 1");
        assert.equal(await conn.line(), "PUB bin.line plain");
        conn.send("+OK 1");
        conn.sendBytes(Buffer.concat([Buffer.from("BMSG bin.a 1 6\n"), small, Buffer.from("\n")]));
        conn.sendBytes(Buffer.concat([Buffer.from(`BMSG bin.big 1 ${blob.length}\n`), blob, Buffer.from("\n")]));
        conn.send("MSG bin.line 1 ends in CR\r");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address);
    t.after(() => client.close());
    const sub = client.subscribe("bin.*");
    await sub.ready;
    assert.equal(await client.publish("bin.a", small), 3);
    assert.equal(await client.publish("bin.big", blob), 1);
    assert.equal(await client.publish("bin.line", "plain"), 1);
    assert.deepEqual((await sub.nextMessage()).payload, small);
    assert.deepEqual((await sub.nextMessage()).payload, blob);
    assert.equal((await sub.nextMessage()).text, "ends in CR\r");
});

test("a RESET moves the position and is reported like a resume", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "RESUME orders");
        conn.send("+OK 1 epoch=E1 seq=0 replayed=0 missed=0");
        conn.send("MSG orders 1 one");
        conn.send("MSG orders 2 two");
        conn.send("RESET orders epoch=E1 seq=5 missed=3");
        conn.send("MSG orders 6 six");
        conn.send("RESET orders epoch=E2 seq=0 missed=unknown");
        conn.send("MSG orders 1 new one");
        conn.send("MSG orders 1 new one again");
        conn.send("MSG orders 2 new two");
        await conn.closed();
    });
    t.after(() => server.stop());
    const events = recorder();
    const logger = lineLogger();
    const client = await connect(server.address, { onEvent: events, logger });
    t.after(() => client.close());
    const sub = client.subscribe("orders");
    const received = [];
    for (let i = 0; i < 5; i++) {
        const m = await sub.nextMessage();
        received.push(`${m.seq} ${m.text}`);
    }
    assert.deepEqual(received, ["1 one", "2 two", "6 six", "1 new one", "2 new two"]);
    assert.deepEqual(events.of("reset").map((e) => [e.report.subject, e.report.missed]), [["orders", 3], ["orders", null]]);
    assert.deepEqual(events.of("gap"), []);
    assert.ok(logger.lines.includes("fanout: missed 3 messages on orders (reset by the server)"));
    assert.ok(logger.lines.includes("fanout: missed messages on orders (unknown: the server's numbering restarted)"));
});
