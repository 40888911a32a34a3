// A large payload that arrives in many small reads (a slow link) is gathered in linear time: the bytes of an
// unfinished BMSG or WebSocket frame are joined once, not copied again with every read.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { Framer } from "../dist/protocol.js";
import { FrameReader } from "../dist/websocket-framing.js";

const size = 8 << 20;
const read = 1024;

function feedInReads(stream, feed) {
    const out = [];
    const started = performance.now();
    for (let offset = 0; offset < stream.length; offset += read) out.push(...feed(stream.subarray(offset, offset + read)));
    return { out, ms: performance.now() - started };
}

test("a BMSG of 8 MiB in reads of 1 KiB is framed in linear time", { timeout: 60000 }, () => {
    const payload = randomBytes(size);
    const stream = Buffer.concat([Buffer.from(`BMSG big 1 ${size}\n`), payload, Buffer.from("\nMSG a 2 after\n")]);
    const framer = new Framer(65536 + 512, size);
    const { out, ms } = feedInReads(stream, (chunk) => framer.feed(chunk));
    assert.equal(out.length, 2);
    assert.ok(Buffer.from(out[0].payload).equals(payload));
    assert.equal(Buffer.from(out[1]).toString(), "MSG a 2 after");
    // Copying the held bytes at every read would move 32 GB here: seconds, not milliseconds.
    assert.ok(ms < 3000, `${Math.round(ms)} ms`);
});

test("a WebSocket frame of 8 MiB in reads of 1 KiB is read in linear time", { timeout: 60000 }, () => {
    const payload = randomBytes(size);
    const head = Buffer.alloc(10);
    head[0] = 0x82;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(size), 2);
    const stream = Buffer.concat([head, payload, Buffer.from([0x81, 5]), Buffer.from("after")]);
    const reader = new FrameReader(size);
    const { out, ms } = feedInReads(stream, (chunk) => reader.feed(chunk));
    assert.deepEqual(out.map((m) => m.kind), ["binary", "text"]);
    assert.ok(Buffer.from(out[0].data).equals(payload));
    assert.equal(Buffer.from(out[1].data).toString(), "after");
    assert.ok(ms < 3000, `${Math.round(ms)} ms`);
});
