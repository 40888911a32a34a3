// The Node entry point: TCP, TLS or a Unix socket for "host:port", "tls://host:port" and "unix:/path", and the
// WebSocket for "ws://" and "wss://" URLs.

import { Client, ClientOptions } from "./client.js";
import { defaultMaxLine, pushHeaderRoom } from "./protocol.js";
import type { TlsSettings } from "./node-transport.js";

export * from "./exports.js";
export type { TlsSettings } from "./node-transport.js";

export interface ConnectOptions extends ClientOptions {
    /** TLS for a TCP address: true for the system's CAs, or PEM texts. */
    tls?: TlsSettings;
}

/** Connects to a Fanout server; `url` picks the transport: `"127.0.0.1:7411"` (TCP), `"tls://host:7411"`,
 * `"unix:/path"`, or `"ws://host:7412/ws"` (the WebSocket, `wss://` with TLS; no flag needed in Node 20). */
export async function connect(url = "127.0.0.1:7411", options: ConnectOptions = {}): Promise<Client> {
    let opener;
    const longestLine = Math.max(options.maxLine ?? defaultMaxLine, defaultMaxLine) + pushHeaderRoom;
    const maxPayload = options.maxPayload ?? 1 << 20;
    // Loaded only here, so that bundles for browsers never meet `net` and `tls`.
    if (/^wss?:\/\//.test(url)) {
        // Node's own WebSocket (behind a flag in Node 20) cannot stop reading; this one can.
        const { nodeWebSocketOpener } = await import("./node-websocket.js");
        opener = nodeWebSocketOpener(url, options.tls, Math.max(longestLine, maxPayload + pushHeaderRoom));
    } else {
        const { nodeOpener } = await import("./node-transport.js");
        opener = nodeOpener(url, options.tls, longestLine, maxPayload);
    }
    const client = new Client(url, opener, options);
    try {
        await client.start();
    } catch (error) {
        await client.close();
        throw error;
    }
    client.markReady();
    return client;
}
