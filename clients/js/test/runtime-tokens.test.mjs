// The browser entry point presents a JWT in the WebSocket handshake as the subprotocol `bearer.<jwt>` beside
// `fanout` (a browser can set no Authorization header), on the runtime's own WebSocket (Node 20:
// --experimental-websocket, which scripts/run-tests.mjs passes to runtime-* files).
import assert from "node:assert/strict";
import { test } from "node:test";
import { connect as connectBrowser } from "../dist/browser.js";
import { jwt, startFakeWebSocketServer } from "./fake-websocket.mjs";

test("the browser build presents a JWT as the subprotocol bearer.<jwt> beside fanout",
    { timeout: 20000, skip: typeof WebSocket === "undefined" && "no WebSocket in this Node" }, async (t) => {
    const token = jwt("alice", 3600);
    let seen;
    const handshake = new Promise((resolve) => (seen = resolve));
    const server = await startFakeWebSocketServer(async (conn) => {
        for (let i = 0; i < 2; i++) {
            assert.equal(await conn.line(), "PING"); // the one after the greeting (see tokens.test.mjs), then ours
            conn.send("+PONG");
        }
        seen(conn.headers["sec-websocket-protocol"]);
    });
    t.after(() => server.stop());
    const client = await connectBrowser(server.url, { token });
    t.after(() => client.close());
    assert.equal(await client.ping(), "PONG");
    assert.equal(await handshake, `fanout, bearer.${token}`);
});
