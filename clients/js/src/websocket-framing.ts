// RFC 6455 framing as a client speaks it, without I/O: the frames it sends (masked, §5.3) and a reader of the
// frames a server sends (unmasked, possibly fragmented, with control frames between fragments, §5.4-5.5), fed
// chunks in any split.

export const opcodes = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** Close codes the client sends (§7.4.1). */
export const closeCodes = { normal: 1000, protocolError: 1002, tooBig: 1009 } as const;

/** What a server's frames amount to: whole messages, and the control frames as they come. */
export type Incoming =
    | { kind: "text"; data: Uint8Array }
    | { kind: "binary"; data: Uint8Array }
    | { kind: "ping"; data: Uint8Array }
    | { kind: "pong"; data: Uint8Array }
    | { kind: "close"; code: number | null; reason: string };

/** A frame the server must not send; the client closes with `code`. */
export class FramingError extends Error {
    constructor(message: string, readonly code: number) {
        super(message);
    }
}

/** One masked frame. `mask` is the 4-byte key, taken from a strong random source by the caller. */
export function clientFrame(opcode: number, payload: Uint8Array, mask: Uint8Array, fin = true): Uint8Array {
    const length = payload.length;
    const extra = length < 126 ? 0 : length < 65536 ? 2 : 8;
    const frame = new Uint8Array(2 + extra + 4 + length);
    frame[0] = (fin ? 0x80 : 0) | opcode;
    if (extra === 0) {
        frame[1] = 0x80 | length;
    } else if (extra === 2) {
        frame[1] = 0x80 | 126;
        frame[2] = length >>> 8;
        frame[3] = length & 0xff;
    } else {
        frame[1] = 0x80 | 127;
        // Lengths here stay far below 2^53; the high word is what is above 2^32.
        const high = Math.floor(length / 0x100000000);
        new DataView(frame.buffer).setUint32(2, high);
        new DataView(frame.buffer).setUint32(6, length >>> 0);
    }
    const start = 2 + extra + 4;
    frame.set(mask, 2 + extra);
    for (let i = 0; i < length; i++) frame[start + i] = payload[i] ^ mask[i & 3];
    return frame;
}

/** The payload of a close frame: the code, then the reason's UTF-8 (at most 123 bytes, §5.5). */
export function closePayload(code: number, reason = ""): Uint8Array {
    const text = new TextEncoder().encode(reason).subarray(0, 123);
    const out = new Uint8Array(2 + text.length);
    out[0] = code >>> 8;
    out[1] = code & 0xff;
    out.set(text, 2);
    return out;
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a server's frames. Bound: holds at most one unfinished frame header and payload, and one message's
 * fragments, each refused (close 1009) past `maxMessage` bytes before its payload is read.
 */
export class FrameReader {
    /** Bytes of an unfinished frame, kept as they came: they are joined once, when `wanted` bytes are there, so
     * that a long frame arriving in many small reads costs one copy instead of one per read. */
    private held: Uint8Array[] = [];
    private heldBytes = 0;
    private wanted = 0;
    private fragments: Uint8Array[] = [];
    private fragmentBytes = 0;
    /** The opcode of the message whose fragments are being gathered, or null. */
    private messageOpcode: number | null = null;

    constructor(private readonly maxMessage: number) {}

    feed(chunk: Uint8Array): Incoming[] {
        if (this.heldBytes + chunk.length < this.wanted) {
            this.held.push(chunk.slice());
            this.heldBytes += chunk.length;
            return [];
        }
        let buffer = chunk;
        if (this.heldBytes) {
            buffer = new Uint8Array(this.heldBytes + chunk.length);
            let offset = 0;
            for (const part of [...this.held, chunk]) {
                buffer.set(part, offset);
                offset += part.length;
            }
        }
        this.wanted = 0;
        const out: Incoming[] = [];
        let start = 0;
        for (;;) {
            const available = buffer.length - start;
            if (available < 2) break;
            const first = buffer[start];
            const second = buffer[start + 1];
            const fin = (first & 0x80) !== 0;
            const opcode = first & 0x0f;
            if (first & 0x70) throw new FramingError("a frame with reserved bits set", closeCodes.protocolError);
            if (second & 0x80) throw new FramingError("a masked frame from the server", closeCodes.protocolError);
            let length = second & 0x7f;
            let header = 2;
            if (length === 126) {
                if (available < 4) break;
                length = (buffer[start + 2] << 8) | buffer[start + 3];
                header = 4;
            } else if (length === 127) {
                if (available < 10) break;
                const view = new DataView(buffer.buffer, buffer.byteOffset + start + 2, 8);
                length = view.getUint32(0) * 0x100000000 + view.getUint32(4);
                header = 10;
            }
            const control = opcode >= 8;
            if (control && (!fin || length > 125)) {
                throw new FramingError("a fragmented or long control frame", closeCodes.protocolError);
            }
            if (!control && this.fragmentBytes + length > this.maxMessage) {
                throw new FramingError(`a message over ${this.maxMessage} bytes`, closeCodes.tooBig);
            }
            if (available < header + length) {
                this.wanted = header + length;
                break;
            }
            const payload = buffer.slice(start + header, start + header + length);
            start += header + length;
            const message = this.frame(fin, opcode, payload);
            if (message) out.push(message);
        }
        this.held = start < buffer.length ? [buffer.slice(start)] : [];
        this.heldBytes = buffer.length - start;
        return out;
    }

    private frame(fin: boolean, opcode: number, payload: Uint8Array): Incoming | null {
        switch (opcode) {
        case opcodes.ping:
            return { kind: "ping", data: payload };
        case opcodes.pong:
            return { kind: "pong", data: payload };
        case opcodes.close: {
            if (payload.length === 1) throw new FramingError("a close frame of one byte", closeCodes.protocolError);
            const code = payload.length >= 2 ? (payload[0] << 8) | payload[1] : null;
            return { kind: "close", code, reason: new TextDecoder().decode(payload.subarray(2)) };
        }
        case opcodes.text:
        case opcodes.binary:
            if (this.messageOpcode !== null) {
                throw new FramingError("a new message before the last one's final fragment", closeCodes.protocolError);
            }
            if (fin) return this.message(opcode, payload);
            this.messageOpcode = opcode;
            this.fragments = [payload];
            this.fragmentBytes = payload.length;
            return null;
        case opcodes.continuation: {
            if (this.messageOpcode === null) {
                throw new FramingError("a continuation frame with no message begun", closeCodes.protocolError);
            }
            this.fragments.push(payload);
            this.fragmentBytes += payload.length;
            if (!fin) return null;
            const whole = new Uint8Array(this.fragmentBytes);
            let offset = 0;
            for (const part of this.fragments) {
                whole.set(part, offset);
                offset += part.length;
            }
            const kind = this.messageOpcode;
            this.messageOpcode = null;
            this.fragments = [];
            this.fragmentBytes = 0;
            return this.message(kind, whole);
        }
        default:
            throw new FramingError(`a frame of unknown opcode ${opcode}`, closeCodes.protocolError);
        }
    }

    private message(opcode: number, data: Uint8Array): Incoming {
        if (opcode === opcodes.binary) return { kind: "binary", data };
        // §8.1: a text message that is not UTF-8 fails the connection.
        try {
            strictDecoder.decode(data);
        } catch {
            throw new FramingError("a text message that is not UTF-8", 1007);
        }
        return { kind: "text", data };
    }
}
