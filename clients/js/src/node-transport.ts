// TCP, TLS and Unix-socket connections in Node, through `net` and `tls`.

import * as net from "node:net";
import * as tls from "node:tls";
import { DrainWaiter } from "./drain-waiter.js";
import { concat, encode, Framer } from "./protocol.js";
import { Opener, Transport, TransportEvents } from "./transport.js";

/** Bytes of commands gathered in one turn of the event loop before they are written without waiting for its end. */
const flushAt = 262144;

/** TLS settings for Node: `true` for the system's CAs, or the PEM texts to use. */
export type TlsSettings = boolean | { ca?: string | Uint8Array; cert?: string | Uint8Array; key?: string | Uint8Array; servername?: string };

/** `host:port`, `[v6]:port`, a bare host (port 7411), or `unix:/path`. */
export function parseAddress(text: string): { host?: string; port?: number; path?: string } {
    if (text.startsWith("unix:")) return { path: text.slice(5) };
    const bare = text.replace(/^(tcp|tls):\/\//, "");
    if (bare.startsWith("[")) {
        const end = bare.indexOf("]");
        const rest = bare.slice(end + 1);
        return { host: bare.slice(1, end), port: rest.startsWith(":") ? Number(rest.slice(1)) : 7411 };
    }
    const colon = bare.lastIndexOf(":");
    return colon < 0 ? { host: bare, port: 7411 } : { host: bare.slice(0, colon), port: Number(bare.slice(colon + 1)) };
}

export function nodeOpener(address: string, tlsSettings: TlsSettings | undefined, maxLine: number, maxPayload: number): Opener {
    const target = parseAddress(address);
    const secure = tlsSettings !== undefined && tlsSettings !== false || address.startsWith("tls://");
    return (events: TransportEvents, timeoutMs: number) => new Promise<Transport>((resolve, reject) => {
        const options = typeof tlsSettings === "object" ? tlsSettings : {};
        const socket: net.Socket = secure
            ? tls.connect({ host: target.host, port: target.port, servername: options.servername ?? target.host, ...options })
            : net.createConnection(target);
        const framer = new Framer(maxLine, maxPayload);
        let open = false;
        let closed = false;
        const timer = setTimeout(() => fail(new Error("timed out")), timeoutMs);
        function fail(error: Error): void {
            clearTimeout(timer);
            if (!open) reject(error);
            socket.destroy();
        }
        socket.once(secure ? "secureConnect" : "connect", () => {
            clearTimeout(timer);
            open = true;
            socket.setNoDelay(true);
            resolve(transport);
        });
        socket.on("data", (chunk: Uint8Array) => {
            if (closed) return;
            let frames;
            try {
                // A plain view: the framer's slices must copy, which a Buffer's do not.
                frames = framer.feed(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            } catch (error) {
                finish(`protocol violation: ${(error as Error).message}`);
                socket.destroy();
                return;
            }
            for (const frame of frames) {
                if (closed) return;
                events.frame(frame);
            }
        });
        socket.on("error", (error: Error) => {
            if (!open) fail(error);
            else finish(error.message);
        });
        socket.on("close", () => finish("closed by the server"));
        const drain = new DrainWaiter(socket);
        function finish(reason: string): void {
            if (closed || !open) return;
            closed = true;
            // Writers waiting for a drain go on, and find their replies failed with the connection.
            drain.release();
            events.closed(reason);
        }
        // Commands written in one turn of the event loop (a burst of pipelined publishes) are joined and go out
        // in one socket write at its end, instead of one stream write each. Bound: about `flushAt` bytes, past
        // which the batch is written at once.
        let batch: Array<string | Uint8Array> = [];
        let batchBytes = 0;
        let batchHasBytes = false;
        function flush(): boolean {
            if (batch.length === 0 || closed) return !socket.writableNeedDrain;
            const parts = batch;
            batch = [];
            batchBytes = 0;
            const joined = batchHasBytes
                ? concat(...parts.map((part) => typeof part === "string" ? encode(part) : part)) : parts.join("");
            batchHasBytes = false;
            return socket.write(joined);
        }
        const transport: Transport = {
            canPause: true,
            textOnly: false,
            write(command: Uint8Array | string): boolean {
                if (batch.length === 0) queueMicrotask(flush);
                batch.push(command);
                batchBytes += command.length;
                if (typeof command !== "string") batchHasBytes = true;
                return batchBytes >= flushAt ? flush() : !socket.writableNeedDrain;
            },
            drained: () => drain.wait(closed),
            pause: () => void socket.pause(),
            resume: () => void socket.resume(),
            close(): void {
                finish("closed by the client");
                socket.destroy();
            },
        };
    });
}
