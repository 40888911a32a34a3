// What the client needs from a connection, whatever carries it: TCP and TLS in Node, a WebSocket in browsers.

import { Frame } from "./protocol.js";

export interface TransportEvents {
    /** A line (without its LF) or a BMSG, in arrival order. */
    frame(frame: Frame): void;
    /** Called once, when the connection is gone. */
    closed(reason: string): void;
}

export interface Transport {
    /** Writes one command: a line with its LF, or (`binary`) a BPUB header with its bytes. Returns false when
     * the caller should wait for `drained()` before writing more. */
    write(command: Uint8Array | string, binary: boolean): boolean;
    drained(): Promise<void>;
    /** Whether reading can be paused: a socket can, a browser WebSocket cannot. */
    readonly canPause: boolean;
    /** Whether lines travel as text (WebSocket text frames must be UTF-8: other payloads go as BPUB). */
    readonly textOnly: boolean;
    /** Whether the token went with the handshake (a WebSocket's `Authorization: Bearer` header or its
     * `bearer.<jwt>` subprotocol), so that no AUTH follows the greeting; later tokens still go as AUTH. */
    readonly tokenSent?: boolean;
    pause(): void;
    resume(): void;
    close(): void;
}

/** Opens a connection that reports to `events`; rejects when it cannot be made within `timeoutMs`. `token`, when
 * given, is the one the client is about to send: a WebSocket may present it in its handshake instead. */
export type Opener = (events: TransportEvents, timeoutMs: number, token?: string) => Promise<Transport>;
