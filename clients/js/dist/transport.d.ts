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
    pause(): void;
    resume(): void;
    close(): void;
}
/** Opens a connection that reports to `events`; rejects when it cannot be made within `timeoutMs`. */
export declare type Opener = (events: TransportEvents, timeoutMs: number) => Promise<Transport>;
