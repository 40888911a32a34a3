export declare type Payload = Uint8Array | string;
/** What the client assumes the server's max_line is when choosing between PUB and BPUB. */
export declare const defaultMaxLine = 65536;
/** What a push line may hold beyond a payload of maxLine bytes, which the server pushes as MSG (PROTOCOL.md, Any
 * bytes): `MSG `, a subject of up to 255 bytes, a seq of up to 20 digits and two spaces are 281 bytes; the rest
 * is room for an ANSWER's id and responder. */
export declare const pushHeaderRoom = 512;
export declare function encode(text: string): Uint8Array;
export declare function decode(bytes: Uint8Array): string;
export declare function toBytes(payload: Payload): Uint8Array;
export declare function isWildcard(pattern: string): boolean;
/** Whether the concrete `subject` falls under `pattern`: `*` is one token, a last `>` one or more. */
export declare function matches(pattern: string, subject: string): boolean;
/** Whether `PUB <subject> <payload>` can carry the payload: no LF, no CR at its end (the server strips a CR
 * before the LF), and the line within max_line. */
export declare function fitsLine(payload: Uint8Array, subject: string, maxLine?: number): boolean;
export declare function concat(...parts: Uint8Array[]): Uint8Array;
/** A command that carries a payload, as what goes on the wire: either one line (`binary` false, the LF
 * included) or a BPUB header with its bytes (1.2). */
export interface Command {
    bytes: Uint8Array;
    binary: boolean;
}
/** `PUB <subject> <payload>` as one string, when the payload is text a line can surely carry (its UTF-8 is at
 * most three bytes per character); null otherwise. Sockets take strings without a separate encoding step. */
export declare function publishLine(subject: string, payload: string, maxLine?: number): string | null;
export declare function publishCommand(subject: string, payload: Uint8Array, maxLine?: number): Command;
export declare const NEWLINE: Uint8Array;
/** `key=value` words as an object; words without `=` are skipped (later versions may add fields). */
export declare function parseFields(words: string[]): Record<string, string>;
/** `+HELLO fanout/1 <server-name> <auth> [key=value ...]`. `epoch` is null before 1.1. */
export interface Greeting {
    serverName: string;
    authRequired: boolean;
    epoch: string | null;
}
export declare function parseGreeting(line: string): Greeting;
/** The reply to RESUME and LAST after `+OK `: `<n> epoch=<e> seq=<s> replayed=<k> missed=<m|unknown>`. */
export interface ResumeReply {
    subscriptions: number;
    epoch: string;
    seq: number;
    replayed: number;
    /** null for `unknown`. */
    missed: number | null;
}
export declare function parseResumeReply(text: string): ResumeReply;
/** The push `RESET <subject> epoch=<e> seq=<s> missed=<m|unknown>` (several nodes). */
export interface Reset {
    subject: string;
    epoch: string;
    seq: number;
    missed: number | null;
}
export declare function parseReset(line: string): Reset;
/** A line without its LF, or a BMSG header with its payload. */
export declare type Frame = Uint8Array | {
    header: Uint8Array;
    payload: Uint8Array;
};
/** Splits the server's byte stream into lines, and a `BMSG <subject> <seq> <length>` header with the bytes
 * after it into one frame. Pure: fed chunks as they come, in any split.
 * Bound: holds at most one unfinished line (refused past maxLine) or one BMSG payload (refused past
 * maxPayload) beyond the chunk being fed. */
export declare class Framer {
    private readonly maxLine;
    private readonly maxPayload;
    /** Bytes not framed yet, kept as they came while a BMSG payload is incomplete: joined once all of it is
     * there, so that a large payload arriving in many small reads costs one copy instead of one per read. */
    private held;
    private heldBytes;
    private header;
    private due;
    constructor(maxLine: number, maxPayload: number);
    feed(chunk: Uint8Array): Frame[];
}
export declare function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean;
/** The `<length>` of a `BMSG <subject> <seq> <length>` header. */
export declare function bmsgLength(header: Uint8Array): number;
