import { Client, ClientOptions } from "./client.js";
import type { TlsSettings } from "./node-transport.js";
export * from "./exports.js";
export type { TlsSettings } from "./node-transport.js";
export interface ConnectOptions extends ClientOptions {
    /** TLS for a TCP address: true for the system's CAs, or PEM texts. */
    tls?: TlsSettings;
}
/** Connects to a Fanout server; `url` picks the transport: `"127.0.0.1:7411"` (TCP), `"tls://host:7411"`,
 * `"unix:/path"`, or `"ws://host:7412/ws"` (the WebSocket, `wss://` with TLS; no flag needed in Node 20). */
export declare function connect(url?: string, options?: ConnectOptions): Promise<Client>;
