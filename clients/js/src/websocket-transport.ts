// The WebSocket at fanoutd's `/ws`: one line per text frame each way; BPUB and BMSG as binary frames (1.2).

import { bmsgLength, decode, encode, Frame, startsWith } from "./protocol.js";
import { isJwt } from "./tokens.js";
import { Opener, Transport, TransportEvents } from "./transport.js";

const BMSG = encode("BMSG ");
/** Output queued in the browser past which `write` asks the caller to wait. */
const highWater = 1 << 20;

/** What one WebSocket message from fanoutd holds: a text message is one line (its LF, if any, dropped); a
 * binary one a BMSG push (header, LF, bytes, LF) or a line a text frame could not carry. */
export function messageFrame(bytes: Uint8Array, text: boolean): Frame {
    if (text) return bytes.length && bytes[bytes.length - 1] === 10 ? bytes.subarray(0, bytes.length - 1) : bytes;
    const newline = bytes.indexOf(10);
    const header = bytes.slice(0, newline < 0 ? bytes.length : newline);
    if (!startsWith(header, BMSG)) return header;
    const length = bmsgLength(header);
    return { header, payload: bytes.slice(newline + 1, newline + 1 + length) };
}

export function webSocketOpener(url: string): Opener {
    return (events: TransportEvents, timeoutMs: number, token?: string) => new Promise<Transport>((resolve, reject) => {
        const WebSocketClass = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
        if (!WebSocketClass) {
            reject(new Error("this runtime has no WebSocket"));
            return;
        }
        // A browser can set no header on a WebSocket: a JWT goes as the subprotocol `bearer.<jwt>` beside
        // `fanout`, which the server names in its answer. A static token goes as AUTH after the greeting.
        const tokenSent = token !== undefined && isJwt(token);
        const socket = tokenSent ? new WebSocketClass(url, ["fanout", `bearer.${token}`]) : new WebSocketClass(url);
        socket.binaryType = "arraybuffer";
        let open = false;
        let closed = false;
        const timer = setTimeout(() => {
            reject(new Error("timed out"));
            socket.close();
        }, timeoutMs);
        function finish(reason: string): void {
            if (closed || !open) return;
            closed = true;
            events.closed(reason);
        }
        socket.onopen = () => {
            clearTimeout(timer);
            open = true;
            resolve(transport);
        };
        socket.onerror = () => {
            if (!open) {
                clearTimeout(timer);
                reject(new Error(`WebSocket to ${url} failed`));
            }
        };
        socket.onclose = (event: CloseEvent) => {
            clearTimeout(timer);
            if (!open) reject(new Error(`WebSocket to ${url} closed (${event.code})`));
            finish(`closed by the server (${event.code}${event.reason ? ": " + event.reason : ""})`);
        };
        socket.onmessage = (event: MessageEvent) => {
            if (closed) return;
            const text = typeof event.data === "string";
            events.frame(messageFrame(text ? encode(event.data) : new Uint8Array(event.data as ArrayBuffer), text));
        };
        const transport: Transport = {
            // A browser gives no way to stop reading a WebSocket.
            canPause: false,
            textOnly: true,
            tokenSent,
            write(command: Uint8Array | string, binary: boolean): boolean {
                if (typeof command === "string") socket.send(command.slice(0, -1));
                else if (binary) socket.send(command);
                else socket.send(decode(command.subarray(0, command.length - 1)));
                return socket.bufferedAmount < highWater;
            },
            async drained(): Promise<void> {
                // WebSocket has no drain event: look again every few milliseconds.
                while (!closed && socket.bufferedAmount >= highWater / 2) {
                    await new Promise((done) => setTimeout(done, 5));
                }
            },
            pause: () => undefined,
            resume: () => undefined,
            close(): void {
                finish("closed by the client");
                socket.close(1000);
            },
        };
    });
}
