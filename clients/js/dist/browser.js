// The browser entry point: the WebSocket at fanoutd's `/ws` is the only transport.
import { Client } from "./client.js";
import { webSocketOpener } from "./websocket-transport.js";
export * from "./exports.js";
/** Connects to a Fanout server's WebSocket: `"ws://host:7412/ws"` (or `wss://`). */
export async function connect(url, options = {}) {
    const client = new Client(url, webSocketOpener(url), options);
    try {
        await client.start();
    }
    catch (error) {
        await client.close();
        throw error;
    }
    client.markReady();
    return client;
}
