// The Node WebSocket client's RFC 6455 framing: masked frames out, fragmented messages and control frames
// between fragments in, ping answered by pong, the close handshake both ways; against a scripted server for the
// exact frames and against a real fanoutd for large payloads and a server that closes.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import net from "node:net";
import { test } from "node:test";
import { ConnectionLost, connect } from "../dist/index.js";
import { FrameReader } from "../dist/websocket-framing.js";
import { recorder, startDaemon } from "./support.mjs";

test("Node has no WebSocket of its own here: the package's is what these tests use", () => {
    if (Number(process.versions.node.split(".")[0]) === 20) assert.equal(typeof globalThis.WebSocket, "undefined");
});

/** An unmasked server frame. */
function frame(opcode, payload, fin = true) {
    const bytes = Buffer.from(payload);
    const head = bytes.length < 126 ? Buffer.from([0, bytes.length])
        : bytes.length < 65536 ? Buffer.from([0, 126, bytes.length >> 8, bytes.length & 255])
            : Buffer.concat([Buffer.from([0, 127]), (() => {
                const b = Buffer.alloc(8);
                b.writeBigUInt64BE(BigInt(bytes.length));
                return b;
            })()]);
    head[0] = (fin ? 0x80 : 0) | opcode;
    return Buffer.concat([head, bytes]);
}

test("the frame reader joins fragments split at every byte, with a ping between them", () => {
    const bmsg = Buffer.concat([Buffer.from("BMSG big 1 70000\n"), randomBytes(70000), Buffer.from("\n")]);
    const stream = Buffer.concat([
        frame(1, "+HELLO fanout/1 ", false), frame(9, "p1"), frame(0, "fake auth=none"),
        frame(2, bmsg.subarray(0, 30000), false), frame(0, bmsg.subarray(30000, 60000), false),
        frame(10, ""), frame(0, bmsg.subarray(60000)), frame(8, Buffer.from([0x03, 0xe9, 0x62, 0x79, 0x65])),
    ]);
    const reader = new FrameReader(1 << 20);
    const out = [];
    for (const byte of stream) out.push(...reader.feed(Uint8Array.of(byte)));
    assert.deepEqual(out.map((m) => m.kind), ["ping", "text", "pong", "binary", "close"]);
    assert.equal(Buffer.from(out[1].data).toString(), "+HELLO fanout/1 fake auth=none");
    assert.ok(Buffer.from(out[3].data).equals(bmsg));
    assert.deepEqual([out[4].code, out[4].reason], [1001, "bye"]);
    // A server's frame must not be masked, and a message past the bound is refused at its header.
    assert.throws(() => new FrameReader(100).feed(Uint8Array.of(0x81, 0x81, 1, 2, 3, 4, 5)), /masked/);
    assert.throws(() => new FrameReader(100).feed(Uint8Array.of(0x82, 126, 1, 0)), /over 100 bytes/);
});

/** A WebSocket server on a raw socket: answers the handshake, then reads the client's frames (unmasking them,
 * and checking that they are masked) and writes what the test scripts. */
async function scriptedServer(script) {
    const failures = [];
    const server = net.createServer((socket) => {
        let buffer = Buffer.alloc(0);
        let wake = null;
        let upgraded = false;
        socket.on("data", (chunk) => {
            buffer = Buffer.concat([buffer, chunk]);
            if (!upgraded) {
                const end = buffer.indexOf("\r\n\r\n");
                if (end < 0) return;
                const key = /Sec-WebSocket-Key: (\S+)/i.exec(buffer.subarray(0, end).toString())[1];
                const accept = createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
                socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
                    + `Sec-WebSocket-Accept: ${accept}\r\n\r\n`);
                buffer = buffer.subarray(end + 4);
                upgraded = true;
                Promise.resolve(script(connection)).catch((error) => failures.push(error));
            }
            wake?.();
        });
        socket.on("error", () => undefined);
        socket.on("close", () => wake?.());
        const connection = {
            send: (bytes) => socket.write(bytes),
            /** The client's next frame, unmasked: { fin, opcode, payload }. */
            async next() {
                const deadline = Date.now() + 5000;
                for (;;) {
                    if (buffer.length >= 2) {
                        assert.ok(buffer[1] & 0x80, "a client frame is masked");
                        let length = buffer[1] & 0x7f;
                        let at = 2;
                        if (length === 126) [length, at] = [buffer.readUInt16BE(2), 4];
                        else if (length === 127) [length, at] = [Number(buffer.readBigUInt64BE(2)), 10];
                        if (buffer.length >= at + 4 + length) {
                            const mask = buffer.subarray(at, at + 4);
                            const payload = Buffer.from(buffer.subarray(at + 4, at + 4 + length))
                                .map((b, i) => b ^ mask[i & 3]);
                            const out = { fin: (buffer[0] & 0x80) !== 0, opcode: buffer[0] & 0x0f, payload };
                            buffer = buffer.subarray(at + 4 + length);
                            return out;
                        }
                    }
                    if (Date.now() > deadline) throw new Error("no frame from the client");
                    await new Promise((resolve) => {
                        wake = resolve;
                        setTimeout(resolve, 50);
                    });
                }
            },
        };
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        url: `ws://127.0.0.1:${server.address().port}/ws`,
        stop: async () => {
            server.close();
            if (failures.length) throw failures[0];
        },
    };
}

test("fragments, pings between them and the server's close are handled as RFC 6455 says",
    { timeout: 20000 }, async (t) => {
    const big = randomBytes(70000);
    let closeAnswer = null;
    const server = await scriptedServer(async (conn) => {
        // The greeting in two fragments with a ping between them; the client answers the ping at once.
        conn.send(frame(1, "+HELLO fanout/1 fake ", false));
        conn.send(frame(9, "are you there"));
        conn.send(frame(0, "auth=none epoch=E1"));
        const pong = await conn.next();
        assert.deepEqual([pong.opcode, pong.payload.toString()], [10, "are you there"]);
        const pub = await conn.next();
        assert.deepEqual([pub.fin, pub.opcode, pub.payload.toString()], [true, 1, "PUB a hello"]);
        conn.send(frame(1, "+OK 1"));
        const resume = await conn.next();
        assert.equal(resume.payload.toString(), "RESUME big");
        conn.send(frame(1, "+OK 1 epoch=E1 seq=0 replayed=0 missed=0"));
        // A binary message of 70,000 bytes in three fragments, a pong between two of them.
        const bmsg = Buffer.concat([Buffer.from(`BMSG big 1 ${big.length}\n`), big, Buffer.from("\n")]);
        conn.send(frame(2, bmsg.subarray(0, 1000), false));
        conn.send(frame(0, bmsg.subarray(1000, 50000), false));
        conn.send(frame(10, "unasked"));
        conn.send(frame(0, bmsg.subarray(50000)));
        // The server closes: the client answers with a close frame of the same code.
        await new Promise((resolve) => setTimeout(resolve, 100));
        conn.send(frame(8, Buffer.concat([Buffer.from([0x03, 0xe9]), Buffer.from("going away")])));
        closeAnswer = await conn.next();
    });
    t.after(() => server.stop());
    const events = recorder();
    const client = await connect(server.url, { reconnect: false, onEvent: events, logger: { info() {}, warn() {} } });
    t.after(() => client.close());
    assert.equal(await client.publish("a", "hello"), 1);
    const sub = client.subscribe("big");
    await sub.ready;
    const message = await sub.nextMessage();
    assert.ok(Buffer.from(message.payload).equals(big));
    const [lost] = await events.waitFor("disconnected");
    assert.match(lost.detail, /1001: going away/);
    await assert.rejects(sub.nextMessage(2000), ConnectionLost);
    for (let i = 0; i < 50 && !closeAnswer; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual([closeAnswer.opcode, closeAnswer.payload.readUInt16BE(0)], [8, 1001]);
});

test("over fanoutd's /ws: a megabyte each way, sent in fragments, and the server's close at shutdown",
    { timeout: 30000 }, async (t) => {
    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    const events = recorder();
    const options = { reconnect: false, onEvent: events, logger: { info() {}, warn() {} } };
    const ws = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`, options);
    t.after(() => ws.close());
    const tcp = await connect(daemon.address);
    t.after(() => tcp.close());
    const toTcp = tcp.subscribe("bulk.up");
    const toWs = ws.subscribe("bulk.down");
    await Promise.all([toTcp.ready, toWs.ready]);
    // A megabyte with LFs and bytes that are not UTF-8: BPUB from the client in 16 fragments of 64 KiB, and
    // one BMSG frame of a megabyte from the server, which reaches the client over many reads.
    const up = randomBytes(1 << 20);
    const down = randomBytes(1 << 20);
    const text = "é".repeat(30000);
    assert.equal(await ws.publish("bulk.up", up), 1);
    assert.equal(await ws.publish("bulk.up", text), 1);
    assert.equal(await tcp.publish("bulk.down", down), 1);
    assert.ok(Buffer.from((await toTcp.nextMessage()).payload).equals(up));
    assert.equal((await toTcp.nextMessage()).text, text);
    assert.ok(Buffer.from((await toWs.nextMessage()).payload).equals(down));
    assert.equal(await ws.ping("still here"), "PONG still here");

    // Shutdown: the farewell line, then a close frame with 1001 (going away).
    const exited = new Promise((resolve) => daemon.child.once("exit", resolve));
    daemon.child.kill("SIGTERM");
    const [closing] = await events.waitFor("server-closing");
    assert.match(closing.detail, /shutting-down/);
    const [lost] = await events.waitFor("disconnected");
    assert.match(lost.detail, /1001/);
    await assert.rejects(toWs.nextMessage(2000), ConnectionLost);
    await exited;
});
