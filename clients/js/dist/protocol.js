// The wire format, without I/O: subjects, command encoding, and parsing of server lines (PROTOCOL.md).
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
export function encode(text) {
    return encoder.encode(text);
}
export function decode(bytes) {
    return decoder.decode(bytes);
}
export function toBytes(payload) {
    return typeof payload === "string" ? encoder.encode(payload) : payload;
}
export function isWildcard(pattern) {
    return pattern.split(".").some((token) => token === "*" || token === ">");
}
/** Whether the concrete `subject` falls under `pattern`: `*` is one token, a last `>` one or more. */
export function matches(pattern, subject) {
    if (pattern === subject)
        return true;
    const wanted = pattern.split(".");
    const tokens = subject.split(".");
    for (let i = 0; i < wanted.length; i++) {
        if (wanted[i] === ">" && i === wanted.length - 1)
            return tokens.length > i;
        if (i >= tokens.length || (wanted[i] !== "*" && wanted[i] !== tokens[i]))
            return false;
    }
    return tokens.length === wanted.length;
}
/** Whether `PUB <subject> <payload>` can carry the payload: no LF, no CR at its end (the server strips a CR
 * before the LF), and the line within max_line. */
export function fitsLine(payload, subject, maxLine = defaultMaxLine) {
    if (payload.includes(LF) || (payload.length > 0 && payload[payload.length - 1] === CR))
        return false;
    return 5 + subject.length + payload.length <= maxLine;
}
export function concat(...parts) {
    let length = 0;
    for (const part of parts)
        length += part.length;
    const out = new Uint8Array(length);
    let offset = 0;
    for (const part of parts) {
        out.set(part, offset);
        offset += part.length;
    }
    return out;
}
/** `PUB <subject> <payload>` as one string, when the payload is text a line can surely carry (its UTF-8 is at
 * most three bytes per character); null otherwise. Sockets take strings without a separate encoding step. */
export function publishLine(subject, payload, maxLine = defaultMaxLine) {
    if (payload.includes("\n") || payload.endsWith("\r") || 5 + subject.length + 3 * payload.length > maxLine)
        return null;
    return `PUB ${subject} ${payload}\n`;
}
export function publishCommand(subject, payload, maxLine = defaultMaxLine) {
    if (fitsLine(payload, subject, maxLine)) {
        return { bytes: concat(encoder.encode(`PUB ${subject} `), payload, NEWLINE), binary: false };
    }
    return { bytes: concat(encoder.encode(`BPUB ${subject} ${payload.length}\n`), payload, NEWLINE), binary: true };
}
export const NEWLINE = new Uint8Array([LF]);
/** `key=value` words as an object; words without `=` are skipped (later versions may add fields). */
export function parseFields(words) {
    const out = {};
    for (const word of words) {
        const equals = word.indexOf("=");
        if (equals > 0)
            out[word.slice(0, equals)] = word.slice(equals + 1);
    }
    return out;
}
export function parseGreeting(line) {
    const words = line.split(" ").filter(Boolean);
    if (words.length < 3 || words[0] !== "+HELLO" || !words[1].startsWith("fanout/1")) {
        throw new Error(`not a Fanout greeting: ${line.slice(0, 80)}`);
    }
    const fields = parseFields(words.slice(3));
    return { serverName: words[2], authRequired: fields.auth === "required", epoch: fields.epoch || null };
}
export function parseResumeReply(text) {
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
export function parseReset(line) {
    const words = line.split(" ").filter(Boolean);
    const fields = parseFields(words.slice(2));
    return {
        subject: words[1],
        epoch: fields.epoch,
        seq: Number(fields.seq),
        missed: fields.missed === "unknown" ? null : Number(fields.missed),
    };
}
/** Splits the server's byte stream into lines, and a `BMSG <subject> <seq> <length>` header with the bytes
 * after it into one frame. Pure: fed chunks as they come, in any split.
 * Bound: holds at most one unfinished line (refused past maxLine) or one BMSG payload (refused past
 * maxPayload) beyond the chunk being fed. */
export class Framer {
    constructor(maxLine, maxPayload) {
        this.maxLine = maxLine;
        this.maxPayload = maxPayload;
        /** Bytes not framed yet, kept as they came while a BMSG payload is incomplete: joined once all of it is
         * there, so that a large payload arriving in many small reads costs one copy instead of one per read. */
        this.held = [];
        this.heldBytes = 0;
        this.header = null;
        this.due = 0;
    }
    feed(chunk) {
        if (this.header && this.heldBytes + chunk.length < this.due) {
            this.held.push(chunk.slice());
            this.heldBytes += chunk.length;
            return [];
        }
        const buffer = this.heldBytes ? concat(...this.held, chunk) : chunk;
        const frames = [];
        let start = 0;
        for (;;) {
            if (this.header) {
                if (buffer.length - start < this.due)
                    break;
                const end = start + this.due - 1;
                if (buffer[end] !== LF)
                    throw new Error("a BMSG payload is not followed by LF");
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
export function startsWith(bytes, prefix) {
    if (bytes.length < prefix.length)
        return false;
    for (let i = 0; i < prefix.length; i++)
        if (bytes[i] !== prefix[i])
            return false;
    return true;
}
/** The `<length>` of a `BMSG <subject> <seq> <length>` header. */
export function bmsgLength(header) {
    const text = decode(header);
    const length = Number(text.slice(text.lastIndexOf(" ") + 1));
    if (!Number.isSafeInteger(length) || length < 0)
        throw new Error(`bad BMSG header: ${text.slice(0, 80)}`);
    return length;
}
