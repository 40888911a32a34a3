// The same client over the WebSocket at /ws from Node, with no flag (Node 20 keeps its own WebSocket behind
// --experimental-websocket): one API on both transports.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import net from "node:net";
import { dirname, join } from "node:path";
import { test } from "node:test";
import tls from "node:tls";
import { AuthRequired, connect } from "../dist/index.js";
import { authConfig, historyConfig, sensorsToken, startDaemon } from "./support.mjs";

test("a WebSocket client and a TCP client share subjects", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon({ config: historyConfig });
    t.after(() => daemon.stop());
    const browserLike = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`);
    t.after(() => browserLike.close());
    const tcp = await connect(daemon.address);
    t.after(() => tcp.close());
    const sub = browserLike.subscribe("news.*");
    await sub.ready;
    assert.equal(await tcp.publish("news.uk", "from tcp"), 1);
    const message = await sub.nextMessage();
    assert.deepEqual([message.subject, message.seq, message.text], ["news.uk", 1, "from tcp"]);
    const back = tcp.subscribe("replies");
    await back.ready;
    assert.equal(await browserLike.publish("replies", "from ws"), 1);
    assert.equal((await back.nextMessage()).text, "from ws");
});

test("a token is sent with AUTH after the WebSocket greeting", { timeout: 20000 }, async (t) => {
    const daemon = await startDaemon({ config: authConfig });
    t.after(() => daemon.stop());
    const anonymous = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`);
    t.after(() => anonymous.close());
    await assert.rejects(anonymous.publish("sensors.kitchen", "1"), AuthRequired);
    const sensors = await connect(`ws://127.0.0.1:${daemon.httpPort}/ws`, { token: sensorsToken });
    t.after(() => sensors.close());
    assert.equal(await sensors.publish("sensors.kitchen", "21.5"), 0);
});

test("wss:// goes through TLS (here a terminating proxy in front of /ws) with the CA given in tls", { timeout: 30000 },
    async (t) => {
    const daemon = await startDaemon({ tls: true });
    t.after(() => daemon.stop());
    const ca = readFileSync(daemon.certificate, "utf8");
    const proxy = tls.createServer({ cert: ca, key: readFileSync(join(dirname(daemon.certificate), "key.pem")) },
        (secure) => {
            const plain = net.createConnection({ host: "127.0.0.1", port: daemon.httpPort });
            secure.pipe(plain).pipe(secure);
            secure.on("error", () => plain.destroy());
            plain.on("error", () => secure.destroy());
        });
    await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    t.after(() => proxy.close());
    const url = `wss://127.0.0.1:${proxy.address().port}/ws`;
    // Without the CA the certificate is not trusted; with it the client speaks as over ws://.
    await assert.rejects(connect(url, { reconnect: false }), /cannot connect/);
    const client = await connect(url, { tls: { ca } });
    t.after(() => client.close());
    const sub = client.subscribe("secure.news");
    await sub.ready;
    assert.equal(await client.publish("secure.news", "over wss"), 1);
    assert.equal((await sub.nextMessage()).text, "over wss");
});
