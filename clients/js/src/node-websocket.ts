// The WebSocket at fanoutd's `/ws` from Node, on a plain `net` or `tls` socket: Node 20 has no WebSocket
// without a flag, and this one can also stop reading (backpressure) where a browser's cannot. The handshake
// (RFC 6455 §4), then one line per text frame each way and BPUB/BMSG as binary frames, as in browsers.

import { createHash, randomBytes } from "node:crypto";
import * as net from "node:net";
import * as tls from "node:tls";
import { DrainWaiter } from "./drain-waiter.js";
import { decode, encode } from "./protocol.js";
import { isJwt } from "./tokens.js";
import { Opener, Transport, TransportEvents } from "./transport.js";
import { messageFrame } from "./websocket-transport.js";
import { clientFrame, closeCodes, closePayload, FrameReader, FramingError, opcodes } from "./websocket-framing.js";
import type { TlsSettings } from "./node-transport.js";

const acceptSuffix = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** Most bytes of the server's handshake response read before giving up on it. */
const maxResponseHead = 16384;
/** Messages longer than this go out in fragments of this size: a server reads a huge message piece by piece. */
const fragmentSize = 65536;
/** How long a close handshake the client began may take before the socket is dropped. */
const closeWait = 1000;

/** Masking keys (§5.3: unpredictable, from a strong source), drawn 4 bytes at a time from a pool. */
let pool = new Uint8Array(0);
let poolOffset = 0;
function maskKey(): Uint8Array {
    if (poolOffset + 4 > pool.length) {
        pool = randomBytes(4096);
        poolOffset = 0;
    }
    poolOffset += 4;
    return pool.subarray(poolOffset - 4, poolOffset);
}

/** The frames of one message: one frame, or a first frame and continuations for a long one. */
function messageFrames(opcode: number, payload: Uint8Array): Uint8Array[] {
    if (payload.length <= fragmentSize) return [clientFrame(opcode, payload, maskKey())];
    const frames: Uint8Array[] = [];
    for (let offset = 0; offset < payload.length; offset += fragmentSize) {
        const end = Math.min(offset + fragmentSize, payload.length);
        frames.push(clientFrame(offset === 0 ? opcode : opcodes.continuation, payload.subarray(offset, end),
            maskKey(), end === payload.length));
    }
    return frames;
}

export function nodeWebSocketOpener(url: string, tlsSettings: TlsSettings | undefined, maxMessage: number): Opener {
    const target = new URL(url);
    const secure = target.protocol === "wss:";
    const port = Number(target.port || (secure ? 443 : 80));
    const host = target.hostname.replace(/^\[(.*)\]$/, "$1");
    return (events: TransportEvents, timeoutMs: number, token?: string) => new Promise<Transport>((resolve, reject) => {
        // A JWT goes in the handshake's Authorization header; a static token as AUTH after the greeting.
        const tokenSent = token !== undefined && isJwt(token);
        const options = typeof tlsSettings === "object" ? tlsSettings : {};
        const socket: net.Socket = secure
            ? tls.connect({ host, port, servername: options.servername ?? host, ...options })
            : net.createConnection({ host, port });
        const key = btoa(String.fromCharCode(...randomBytes(16)));
        const accept = createHash("sha1").update(key + acceptSuffix).digest("base64");
        const reader = new FrameReader(maxMessage);
        let head: Uint8Array | null = new Uint8Array(0);
        let open = false;
        let closed = false;
        let closeSent = false;
        let paused = false;
        let closeTimer: ReturnType<typeof setTimeout> | undefined;
        const timer = setTimeout(() => fail(new Error("timed out")), timeoutMs);

        function fail(error: Error): void {
            clearTimeout(timer);
            if (!open) reject(error);
            socket.destroy();
        }
        function finish(reason: string): void {
            clearTimeout(closeTimer);
            if (closed || !open) return;
            closed = true;
            drain.release();
            events.closed(reason);
        }
        function sendClose(code: number, reason = ""): void {
            if (closeSent) return;
            closeSent = true;
            socket.write(clientFrame(opcodes.close, closePayload(code, reason), maskKey()));
            socket.end();
            closeTimer = setTimeout(() => socket.destroy(), closeWait);
        }

        socket.once(secure ? "secureConnect" : "connect", () => {
            socket.setNoDelay(true);
            socket.write(`GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n`
                + "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                + (tokenSent ? `Authorization: Bearer ${token}\r\n` : "")
                + `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
        });
        socket.on("data", (chunk: Uint8Array) => {
            const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
            if (head !== null) {
                const joined = new Uint8Array(head.length + bytes.length);
                joined.set(head);
                joined.set(bytes, head.length);
                const end = indexOfHeadEnd(joined);
                if (end < 0) {
                    if (joined.length > maxResponseHead) fail(new Error("no WebSocket handshake response"));
                    head = joined;
                    return;
                }
                const problem = handshakeProblem(decode(joined.subarray(0, end)), accept);
                if (problem) {
                    fail(new Error(problem));
                    return;
                }
                head = null;
                clearTimeout(timer);
                open = true;
                resolve(transport);
                // The greeting often comes in the same read: it is handed over once the client holds the
                // transport, in a later task, with reading paused until then so that the order stays.
                const rest = joined.slice(end + 4);
                socket.pause();
                setTimeout(() => {
                    received(rest);
                    if (!paused) socket.resume();
                }, 0);
                return;
            }
            received(bytes);
        });

        function received(bytes: Uint8Array): void {
            if (closed || bytes.length === 0) return;
            let incoming;
            try {
                incoming = reader.feed(bytes);
            } catch (error) {
                const code = error instanceof FramingError ? error.code : closeCodes.protocolError;
                sendClose(code);
                finish(`protocol violation: ${(error as Error).message}`);
                return;
            }
            for (const message of incoming) {
                if (closed) return;
                switch (message.kind) {
                case "text":
                case "binary":
                    events.frame(messageFrame(message.data, message.kind === "text"));
                    break;
                case "ping":
                    if (!closeSent) socket.write(clientFrame(opcodes.pong, message.data, maskKey()));
                    break;
                case "pong":
                    break;
                case "close":
                    // §5.5.1: answer with the same code, then the server closes the TCP connection.
                    sendClose(message.code ?? closeCodes.normal);
                    const why = message.reason ? `: ${message.reason}` : "";
                    finish(`closed by the server (${message.code ?? "no code"}${why})`);
                    return;
                }
            }
        }
        socket.on("error", (error: Error) => {
            if (!open) fail(error);
            else finish(error.message);
        });
        socket.on("close", () => {
            clearTimeout(closeTimer);
            if (!open) fail(new Error(`the connection closed before the WebSocket handshake ended`));
            finish("closed by the server");
        });

        const drain = new DrainWaiter(socket);
        let corked = false;
        const transport: Transport = {
            canPause: true,
            textOnly: true,
            tokenSent,
            write(command: Uint8Array | string, binary: boolean): boolean {
                if (closeSent) return true;
                if (!corked) {
                    corked = true;
                    socket.cork();
                    queueMicrotask(() => {
                        corked = false;
                        socket.uncork();
                    });
                }
                // A line travels without its LF, as in browsers; a BPUB whole.
                const bytes = typeof command === "string" ? encode(command) : command;
                const payload = binary ? bytes : bytes.subarray(0, bytes.length - 1);
                let flowing = true;
                for (const frame of messageFrames(binary ? opcodes.binary : opcodes.text, payload)) {
                    flowing = socket.write(frame);
                }
                return flowing;
            },
            drained: () => drain.wait(closed),
            pause(): void {
                paused = true;
                socket.pause();
            },
            resume(): void {
                paused = false;
                socket.resume();
            },
            close(): void {
                finish("closed by the client");
                if (open) sendClose(closeCodes.normal);
                else socket.destroy();
            },
        };
    });
}

function indexOfHeadEnd(bytes: Uint8Array): number {
    for (let i = 0; i + 3 < bytes.length; i++) {
        if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i;
    }
    return -1;
}

/** Why a handshake response does not open the WebSocket, or null when it does (§4.1, the client's checks). */
function handshakeProblem(head: string, accept: string): string | null {
    const [status, ...lines] = head.split("\r\n");
    if (!/^HTTP\/1\.1 101\b/.test(status)) return `the server refused the WebSocket: ${status.slice(0, 80)}`;
    const headers = new Map<string, string>();
    for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    if (headers.get("upgrade")?.toLowerCase() !== "websocket") return "the server's response has no Upgrade: websocket";
    if (!/\bupgrade\b/i.test(headers.get("connection") ?? "")) {
        return "the server's response has no Connection: Upgrade";
    }
    if (headers.get("sec-websocket-accept") !== accept) {
        return "the server's Sec-WebSocket-Accept does not match the key";
    }
    return null;
}
