// The wire format, without I/O: subjects, command encoding, and parsing of server lines (PROTOCOL.md).

export type Payload = Uint8Array | string;

/** What the client assumes the server's max_line is when choosing between PUB and BPUB. */
export const defaultMaxLine = 65536;

/** What a push line may hold beyond a payload of maxLine bytes, which the server pushes as MSG (PROTOCOL.md, Any
 * bytes): `MSG `, a subject of up to 255 bytes, a seq of up to 20 digits and two spaces are 281 bytes; the rest
 * is room for an ANSWER's id and responder. */
export const pushHeaderRoom = 512;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const LF = 10;
const CR = 13;

export function encode(text: string): Uint8Array {
    return encoder.encode(text);
}

export function decode(bytes: Uint8Array): string {
    return decoder.decode(bytes);
}

export function toBytes(payload: Payload): Uint8Array {
    return typeof payload === "string" ? encoder.encode(payload) : payload;
}

export function isWildcard(pattern: string): boolean {
    return pattern.split(".").some((token) => token === "*" || token === ">");
}

/** Whether the concrete `subject` falls under `pattern`: `*` is one token, a last `>` one or more. */
export function matches(pattern: string, subject: string): boolean {
    if (pattern === subject) return true;
    const wanted = pattern.split(".");
    const tokens = subject.split(".");
    for (let i = 0; i < wanted.length; i++) {
        if (wanted[i] === ">" && i === wanted.length - 1) return tokens.length > i;
        if (i >= tokens.length || (wanted[i] !== "*" && wanted[i] !== tokens[i])) return false;
    }
    return tokens.length === wanted.length;
}

/** Whether `PUB <subject> <payload>` can carry the payload: no LF, no CR at its end (the server strips a CR
 * before the LF), and the line within max_line. */
export function fitsLine(payload: Uint8Array, subject: string, maxLine = defaultMaxLine): boolean {
    if (payload.includes(LF) || (payload.length > 0 && payload[payload.length - 1] === CR)) return false;
    return 5 + subject.length + payload.length <= maxLine;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
    let length = 0;
    for (const part of parts) length += part.length;
    const out = new Uint8Array(length);
    let offset = 0;
    for (const part of parts) {
        out.set(part, offset);
        offset += part.length;
    }
    return out;
}

/** A command that carries a payload, as what goes on the wire: either one line (`binary` false, the LF
 * included) or a BPUB header with its bytes (1.2). */
export interface Command {
    bytes: Uint8Array;
    binary: boolean;
}

/** `PUB <subject> <payload>` as one string, when the payload is text a line can surely carry (its UTF-8 is at
 * most three bytes per character); null otherwise. Sockets take strings without a separate encoding step. */
export function publishLine(subject: string, payload: string, maxLine = defaultMaxLine): string | null {
    if (payload.includes("\n") || payload.endsWith("\r") || 5 + subject.length + 3 * payload.length > maxLine) return null;
    return `PUB ${subject} ${payload}\n`;
}

export function publishCommand(subject: string, payload: Uint8Array, maxLine = defaultMaxLine): Command {
    if (fitsLine(payload, subject, maxLine)) {
        return { bytes: concat(encoder.encode(`PUB ${subject} `), payload, NEWLINE), binary: false };
    }
    return { bytes: concat(encoder.encode(`BPUB ${subject} ${payload.length}\n`), payload, NEWLINE), binary: true };
}

export const NEWLINE = new Uint8Array([LF]);

/** `key=value` words as an object; words without `=` are skipped (later versions may add fields). */
export function parseFields(words: string[]): Record<string, string> {
    const out: Record<string, string> = {};
    for (const word of words) {
        const equals = word.indexOf("=");
        if (equals > 0) out[word.slice(0, equals)] = word.slice(equals + 1);
    }
    return out;
}

/** `+HELLO fanout/1 <server-name> <auth> [key=value ...]`. `epoch` is null before 1.1. */
export interface Greeting {
    serverName: string;
    authRequired: boolean;
    epoch: string | null;
}

export function parseGreeting(line: string): Greeting {
    const words = line.split(" ").filter(Boolean);
    if (words.length < 3 || words[0] !== "+HELLO" || !words[1].startsWith("fanout/1")) {
        throw new Error(`not a Fanout greeting: ${line.slice(0, 80)}`);
    }
    const fields = parseFields(words.slice(3));
    return { serverName: words[2], authRequired: fields.auth === "required", epoch: fields.epoch || null };
}

/** The reply to RESUME and LAST after `+OK `: `<n> epoch=<e> seq=<s> replayed=<k> missed=<m|unknown>`. */
export interface ResumeReply {
    subscriptions: number;
    epoch: string;
    seq: number;
    replayed: number;
    /** null for `unknown`. */
    missed: number | null;
}

export function parseResumeReply(text: string): ResumeReply {
    const words = text.split(" ").filter(Boolean);
    const fields = parseFields(words.slice(1));
    if (!fields.epoch || fields.seq === undefined || fields.replayed === undefined || fields.missed === undefined) {
        throw new Error(`not a RESUME reply: ${text.slice(0, 80)}`);
    }
    return {
        subscriptions: Number(words[0]),
        epoch: fields.epoch,
        seq: Number(fields.seq),
        replayed: Number(fields.replayed),
        missed: fields.missed === "unknown" ? null : Number(fields.missed),
    };
}

/** The push `RESET <subject> epoch=<e> seq=<s> missed=<m|unknown>` (several nodes). */
export interface Reset {
    subject: string;
    epoch: string;
    seq: number;
    missed: number | null;
}

export function parseReset(line: string): Reset {
    const words = line.split(" ").filter(Boolean);
    const fields = parseFields(words.slice(2));
    return {
        subject: words[1],
        epoch: fields.epoch,
        seq: Number(fields.seq),
        missed: fields.missed === "unknown" ? null : Number(fields.missed),
    };
}

/** A line without its LF, or a BMSG header with its payload. */
export type Frame = Uint8Array | { header: Uint8Array; payload: Uint8Array };

/** Splits the server's byte stream into lines, and a `BMSG <subject> <seq> <length>` header with the bytes
 * after it into one frame. Pure: fed chunks as they come, in any split.
 * Bound: holds at most one unfinished line (refused past maxLine) or one BMSG payload (refused past
 * maxPayload) beyond the chunk being fed. */
export class Framer {
    /** Bytes not framed yet, kept as they came while a BMSG payload is incomplete: joined once all of it is
     * there, so that a large payload arriving in many small reads costs one copy instead of one per read. */
    private held: Uint8Array[] = [];
    private heldBytes = 0;
    private header: Uint8Array | null = null;
    private due = 0;

    constructor(private readonly maxLine: number, private readonly maxPayload: number) {}

    feed(chunk: Uint8Array): Frame[] {
        if (this.header && this.heldBytes + chunk.length < this.due) {
            this.held.push(chunk.slice());
            this.heldBytes += chunk.length;
            return [];
        }
        const buffer = this.heldBytes ? concat(...this.held, chunk) : chunk;
        const frames: Frame[] = [];
        let start = 0;
        for (;;) {
            if (this.header) {
                if (buffer.length - start < this.due) break;
                const end = start + this.due - 1;
                if (buffer[end] !== LF) throw new Error("a BMSG payload is not followed by LF");
                frames.push({ header: this.header, payload: buffer.slice(start, end) });
                this.header = null;
                start = end + 1;
                continue;
            }
            const newline = buffer.indexOf(LF, start);
            if (newline < 0) {
                if (buffer.length - start > this.maxLine + 1) {
                    throw new Error(`a server line is longer than ${this.maxLine} bytes`);
                }
                break;
            }
            // No CR is stripped: the server ends its lines in LF alone, and a CR before it is payload. A view, not
            // a copy: whoever keeps bytes of a line (a message's payload) copies them.
            const line = buffer.subarray(start, newline);
            start = newline + 1;
            if (startsWith(line, BMSG)) {
                const length = bmsgLength(line);
                if (length > this.maxPayload) {
                    throw new Error(`a BMSG of ${length} bytes is over max_payload (${this.maxPayload})`);
                }
                this.header = line.slice();
                this.due = length + 1;
                continue;
            }
            frames.push(line);
        }
        this.held = start < buffer.length ? [buffer.slice(start)] : [];
        this.heldBytes = buffer.length - start;
        return frames;
    }
}

const BMSG = encoder.encode("BMSG ");

export function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
    if (bytes.length < prefix.length) return false;
    for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
    return true;
}

/** The `<length>` of a `BMSG <subject> <seq> <length>` header. */
export function bmsgLength(header: Uint8Array): number {
    const text = decode(header);
    const length = Number(text.slice(text.lastIndexOf(" ") + 1));
    if (!Number.isSafeInteger(length) || length < 0) throw new Error(`bad BMSG header: ${text.slice(0, 80)}`);
    return length;
}
