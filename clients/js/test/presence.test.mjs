// Presence (1.3) against a scripted server that speaks exactly the contract's lines: the WHO and KICK lines the
// client sends, the members and joins and leaves it reads (a user written with `_`, a group member, a field or a
// reason this version does not know, a payload that is neither), and the push `-ERR kicked`, after which the
// client does not come back. presence-fanoutd.test.mjs runs the same against fanoutd.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BadSubject, connect, Denied, Kicked, ProtocolViolation, Syntax } from "../dist/index.js";
import { parseEvent, parseMember } from "../dist/presence.js";
import { lineLogger, recorder, startFakeServer } from "./support.mjs";

// A reconnect that would come within milliseconds, were one made.
const fast = { initial: 10, maximum: 20, jitter: 0 };

const member = (client, user, sinceSeconds, group = null) => ({ client, user, sinceSeconds, group });

test("a member word reads every field and ignores unknown ones", () => {
    assert.deepEqual(parseMember("id=7,user=alice,since_s=12"), member("7", "alice", 12));
    assert.deepEqual(parseMember("id=n2/9,user=-,since_s=0,group=pool,zone=eu"), member("n2/9", null, 0, "pool"));
    for (const bad of ["id=7,user=alice", "id=,user=a,since_s=1", "id=7,user=a,since_s=x", "id=7 user=a since_s=1",
        "id=7,user=a,since_s=1,junk"]) {
        assert.throws(() => parseMember(bad), Error, bad);
    }
});

test("joins and leaves read as the contract writes them", () => {
    assert.deepEqual(parseEvent("$presence.chat.room1", 4, "join id=7,user=alice_b,since_s=0"),
        { kind: "join", member: member("7", "alice_b", 0), reason: null, subject: "chat.room1", seq: 4 });
    const leave = parseEvent("$presence.chat.room1", 5, new TextEncoder().encode(
        "leave id=7,user=alice_b,since_s=12,reason=kicked"));
    assert.deepEqual([leave.kind, leave.member.sinceSeconds, leave.reason], ["leave", 12, "kicked"]);
    // A reason a later server adds is kept as its text.
    assert.equal(parseEvent("$presence.x", 6, "leave id=8,user=-,since_s=1,reason=moved").reason, "moved");
    for (const bad of ["join", "hello id=7,user=a,since_s=0", "leave id=7,user=a,since_s=1",
        "leave id=7,user=a,since_s=1,reason=", "join id=7,since_s=0"]) {
        assert.throws(() => parseEvent("$presence.x", 1, bad), Error, bad);
    }
});

test("who sends the subject and limit and reads the count and the members in order", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "WHO chat.room1");
        conn.send("+OK 3 id=7,user=alice,since_s=12 id=node2/9,user=bob_smith,since_s=3,group=pool "
            + "id=8,user=-,since_s=0,future=1");
        assert.equal(await conn.line(), "WHO chat.room1 1");
        conn.send("+OK 3 id=7,user=alice,since_s=12");
        assert.equal(await conn.line(), "WHO chat.empty 0");
        conn.send("+OK 0");
        assert.equal(await conn.line(), "WHO news.uk");
        conn.send("-ERR syntax no presence kept for news.uk");
        assert.equal(await conn.line(), "WHO chat.room1");
        conn.send("+OK 1 id=7,user=alice");
        assert.equal(await conn.line(), "PING");
        conn.send("+PONG");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address);
    t.after(() => client.close());
    assert.deepEqual(await client.who("chat.room1"), { count: 3, members: [member("7", "alice", 12),
        member("node2/9", "bob_smith", 3, "pool"), member("8", null, 0)] });
    assert.deepEqual(await client.who("chat.room1", 1), { count: 3, members: [member("7", "alice", 12)] });
    assert.deepEqual(await client.who("chat.empty", 0), { count: 0, members: [] });
    await assert.rejects(client.who("news.uk"), (e) => e instanceof Syntax && e.text === "no presence kept for news.uk");
    await assert.rejects(client.who("chat.room1"), ProtocolViolation);
    // A wildcard or a bad limit is refused here, and nothing is sent: the next line is the PING.
    await assert.rejects(client.who("chat.*"), BadSubject);
    await assert.rejects(client.who("chat.room1", -1), Syntax);
    assert.equal(await client.ping(), "PONG");
});

test("kick names a client or a user with an optional reason", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "KICK 7 spamming the room");
        conn.send("+OK 1");
        assert.equal(await conn.line(), "KICK node2/9");
        conn.send("+OK 0");
        assert.equal(await conn.line(), "KICK user=alice");
        conn.send("+OK 2");
        assert.equal(await conn.line(), "KICK 7");
        conn.send("-ERR denied KICK needs an administrator");
        assert.equal(await conn.line(), "PING");
        conn.send("+PONG");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address);
    t.after(() => client.close());
    assert.equal(await client.kick(7, "spamming the room"), 1);
    assert.equal(await client.kick("node2/9"), 0);
    assert.equal(await client.kick("user=alice"), 2);
    await assert.rejects(client.kick("7"), Denied);
    for (const [word, reason] of [["7 8", undefined], ["7", "two\nlines"], ["7", "x".repeat(257)]]) {
        await assert.rejects(client.kick(word, reason), Syntax);
    }
    assert.equal(await client.ping(), "PONG");
});

test("joins and leaves arrive typed with their seqs, and a malformed one is skipped", { timeout: 20000 }, async (t) => {
    let unsubscribed;
    const sawUnsub = new Promise((resolve) => (unsubscribed = resolve));
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "RESUME $presence.chat.room1");
        conn.send("+OK 1 epoch=E1 seq=3 replayed=0 missed=0");
        conn.send("MSG $presence.chat.room1 4 join id=7,user=alice_b,since_s=0");
        conn.send("MSG $presence.chat.room1 5 join id=8,user=-,since_s=0,group=pool");
        conn.send("MSG $presence.chat.room1 6 hello");
        conn.send("MSG $presence.chat.room1 7 leave id=8,user=-,since_s=2,group=pool,reason=vanished");
        conn.send("MSG $presence.chat.room1 8 leave id=7,user=alice_b,since_s=12,reason=closed");
        assert.equal(await conn.line(), "UNSUB $presence.chat.room1");
        conn.send("+OK 0");
        unsubscribed();
        await conn.closed();
    });
    t.after(() => server.stop());
    const logger = lineLogger();
    const client = await connect(server.address, { logger });
    t.after(() => client.close());
    const presence = client.presence("chat.room1");
    await presence.ready;
    const events = [];
    for await (const event of presence) {
        events.push(event);
        if (events.length === 4) break;
    }
    assert.deepEqual(events, [
        { kind: "join", member: member("7", "alice_b", 0), reason: null, subject: "chat.room1", seq: 4 },
        { kind: "join", member: member("8", null, 0, "pool"), reason: null, subject: "chat.room1", seq: 5 },
        { kind: "leave", member: member("8", null, 2, "pool"), reason: "vanished", subject: "chat.room1", seq: 7 },
        { kind: "leave", member: member("7", "alice_b", 12), reason: "closed", subject: "chat.room1", seq: 8 },
    ]);
    assert.equal(presence.malformed, 1);
    assert.ok(logger.lines.some((line) => line.includes("seq 6")), logger.lines.join("\n"));
    // The break unsubscribed: the server's script saw the UNSUB.
    await sawUnsub;
});

test("a pattern watches every subject it matches, and a $presence. subject is refused", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "SUB $presence.chat.>");
        conn.send("+OK 1");
        conn.send("MSG $presence.chat.a 1 join id=3,user=u,since_s=0");
        conn.send("MSG $presence.chat.b 9 leave id=4,user=v,since_s=5,reason=timeout");
        await conn.closed();
    });
    t.after(() => server.stop());
    const client = await connect(server.address);
    t.after(() => client.close());
    const presence = client.presence("chat.>");
    const got = [await presence.nextEvent(5000), await presence.nextEvent(5000)];
    assert.deepEqual(got.map((e) => [e.subject, e.seq, e.kind, e.reason]),
        [["chat.a", 1, "join", null], ["chat.b", 9, "leave", "timeout"]]);
    assert.throws(() => client.presence("$presence.chat.a"), BadSubject);
    assert.throws(() => client.presence("chat." + "x".repeat(241)), BadSubject);
});

test("after the kicked push the client never reconnects, and everything ends with Kicked", { timeout: 20000 }, async (t) => {
    const server = await startFakeServer(async (conn) => {
        assert.equal(await conn.line(), "SUB news.*");
        conn.send("+OK 1");
        assert.equal(await conn.line(), "PING");
        conn.send("-ERR kicked spamming the room");
        conn.socket.end();
    });
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.address, { reconnect: fast, onEvent: events, logger: lineLogger() });
    t.after(() => client.close());
    const sub = client.subscribe("news.*");
    await sub.ready;
    const pinging = client.ping();
    await assert.rejects(pinging, (e) => e instanceof Kicked && e.code === "kicked" && e.reason === "spamming the room");
    await assert.rejects(sub.next(), (e) => e instanceof Kicked && e.reason === "spamming the room");
    const [kicked] = await events.waitFor("kicked");
    assert.equal(kicked.detail, "spamming the room");
    await events.waitFor("disconnected");
    // A reconnect with this backoff would have come within 20 ms: none comes in 50 times that.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(server.connections.length, 1);
    assert.deepEqual(events.of("reconnecting"), []);
    await assert.rejects(client.publish("news.uk", "x"), Kicked);
});
