export declare const opcodes: {
    readonly continuation: 0;
    readonly text: 1;
    readonly binary: 2;
    readonly close: 8;
    readonly ping: 9;
    readonly pong: 10;
};
/** Close codes the client sends (§7.4.1). */
export declare const closeCodes: {
    readonly normal: 1000;
    readonly protocolError: 1002;
    readonly tooBig: 1009;
};
/** What a server's frames amount to: whole messages, and the control frames as they come. */
export declare type Incoming = {
    kind: "text";
    data: Uint8Array;
} | {
    kind: "binary";
    data: Uint8Array;
} | {
    kind: "ping";
    data: Uint8Array;
} | {
    kind: "pong";
    data: Uint8Array;
} | {
    kind: "close";
    code: number | null;
    reason: string;
};
/** A frame the server must not send; the client closes with `code`. */
export declare class FramingError extends Error {
    readonly code: number;
    constructor(message: string, code: number);
}
/** One masked frame. `mask` is the 4-byte key, taken from a strong random source by the caller. */
export declare function clientFrame(opcode: number, payload: Uint8Array, mask: Uint8Array, fin?: boolean): Uint8Array;
/** The payload of a close frame: the code, then the reason's UTF-8 (at most 123 bytes, §5.5). */
export declare function closePayload(code: number, reason?: string): Uint8Array;
/**
 * Reads a server's frames. Bound: holds at most one unfinished frame header and payload, and one message's
 * fragments, each refused (close 1009) past `maxMessage` bytes before its payload is read.
 */
export declare class FrameReader {
    private readonly maxMessage;
    /** Bytes of an unfinished frame, kept as they came: they are joined once, when `wanted` bytes are there, so
     * that a long frame arriving in many small reads costs one copy instead of one per read. */
    private held;
    private heldBytes;
    private wanted;
    private fragments;
    private fragmentBytes;
    /** The opcode of the message whose fragments are being gathered, or null. */
    private messageOpcode;
    constructor(maxMessage: number);
    feed(chunk: Uint8Array): Incoming[];
    private frame;
    private message;
}
