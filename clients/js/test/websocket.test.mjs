// The same client over the WebSocket at /ws from Node, with no flag (Node 20 keeps its own WebSocket behind
// --experimental-websocket): one API on both transports.
import assert from "node:assert/strict";
import { test } from "node:test";
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
