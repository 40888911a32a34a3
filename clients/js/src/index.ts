// The Node entry point: TCP, TLS or a Unix socket for "host:port", "tls://host:port" and "unix:/path", and the
// WebSocket for "ws://" and "wss://" URLs.

import { Client, ClientOptions } from "./client.js";
import { defaultMaxLine, pushHeaderRoom } from "./protocol.js";
import { webSocketOpener } from "./websocket-transport.js";
import type { TlsSettings } from "./node-transport.js";

export * from "./exports.js";
export type { TlsSettings } from "./node-transport.js";

export interface ConnectOptions extends ClientOptions {
    /** TLS for a TCP address: true for the system's CAs, or PEM texts. */
    tls?: TlsSettings;
}

/** Connects to a Fanout server; `url` picks the transport: `"127.0.0.1:7411"` or `"ws://host:7412/ws"`. */
export async function connect(url = "127.0.0.1:7411", options: ConnectOptions = {}): Promise<Client> {
    let opener;
    if (/^wss?:\/\//.test(url)) {
        opener = webSocketOpener(url);
    } else {
        // Loaded only here, so that bundles for browsers never meet `net` and `tls`.
        const { nodeOpener } = await import("./node-transport.js");
        const longestLine = Math.max(options.maxLine ?? defaultMaxLine, defaultMaxLine) + pushHeaderRoom;
        opener = nodeOpener(url, options.tls, longestLine, options.maxPayload ?? 1 << 20);
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
