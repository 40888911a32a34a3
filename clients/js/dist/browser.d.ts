import { Client, ClientOptions } from "./client.js";
export * from "./exports.js";
/** Connects to a Fanout server's WebSocket: `"ws://host:7412/ws"` (or `wss://`). */
export declare function connect(url: string, options?: ClientOptions): Promise<Client>;
