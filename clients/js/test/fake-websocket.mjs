// A JWT maker and a scripted WebSocket server for the token tests. The server keeps the upgrade request's
// headers, answers the `fanout` subprotocol when asked for it (as fanoutd does for `fanout, bearer.<jwt>`),
// greets, and then speaks one line per text frame each way. Small frames only (what the tests send), unfragmented.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";

const acceptSuffix = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** A certificate for 127.0.0.1 made here, self-signed: the client trusts it as its CA (`{ tls: { ca } }`). */
export function testCertificate() {
    const directory = mkdtempSync(join(tmpdir(), "fanout-wss-"));
    try {
        const made = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
            join(directory, "key.pem"), "-out", join(directory, "cert.pem"), "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]);
        if (made.status !== 0) throw new Error("openssl failed: " + made.stderr);
        return { cert: readFileSync(join(directory, "cert.pem")), key: readFileSync(join(directory, "key.pem")) };
    } finally {
        rmSync(directory, { recursive: true, force: true });
    }
}

/** `secure`: `{ cert, key }` to serve wss:// instead of ws://. */
export async function startFakeWebSocketServer(script, secure = null) {
    const sockets = [];
    const accept = (socket) => {
        sockets.push(socket);
        socket.on("error", () => undefined);
        let buffer = Buffer.alloc(0);
        let head = null;
        const lines = [];
        let wake = null;
        socket.on("data", (chunk) => {
            buffer = Buffer.concat([buffer, chunk]);
            if (head === null) {
                const end = buffer.indexOf("\r\n\r\n");
                if (end < 0) return;
                head = buffer.subarray(0, end).toString();
                buffer = buffer.subarray(end + 4);
                const headers = Object.fromEntries(head.split("\r\n").slice(1).map((line) => {
                    const colon = line.indexOf(":");
                    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
                }));
                const accept = createHash("sha1").update(headers["sec-websocket-key"] + acceptSuffix).digest("base64");
                const protocols = (headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim());
                socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + `Sec-WebSocket-Accept: ${accept}\r\n`
                    + (protocols.includes("fanout") ? "Sec-WebSocket-Protocol: fanout\r\n" : "") + "\r\n");
                const conn = {
                    request: head.split("\r\n")[0],
                    headers,
                    send: (line) => socket.write(textFrame(line)),
                    async line() {
                        const deadline = Date.now() + 10000;
                        while (lines.length === 0) {
                            if (Date.now() > deadline || socket.destroyed) throw new Error("fake server: nothing came");
                            await new Promise((resolve) => {
                                wake = resolve;
                                setTimeout(resolve, 100);
                            });
                        }
                        return lines.shift();
                    },
                };
                conn.send("+HELLO fanout/1 fake auth=required");
                Promise.resolve(script(conn)).catch(() => undefined);
            }
            for (;;) {
                if (buffer.length < 2) return;
                const opcode = buffer[0] & 0x0f;
                let length = buffer[1] & 0x7f;
                let offset = 2;
                if (length === 126) {
                    if (buffer.length < 4) return;
                    length = buffer.readUInt16BE(2);
                    offset = 4;
                }
                if (buffer.length < offset + 4 + length) return;
                const mask = buffer.subarray(offset, offset + 4);
                const payload = Buffer.from(buffer.subarray(offset + 4, offset + 4 + length).map((b, i) => b ^ mask[i % 4]));
                buffer = buffer.subarray(offset + 4 + length);
                if (opcode === 1) lines.push(payload.toString().replace(/\n$/, ""));
                wake?.();
            }
        });
    };
    const server = secure ? tls.createServer(secure, accept) : net.createServer(accept);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        url: `${secure ? "wss" : "ws"}://127.0.0.1:${server.address().port}/ws`,
        stop: async () => {
            const closed = new Promise((resolve) => server.close(resolve));
            for (const socket of sockets) socket.destroy();
            await closed;
        },
    };
}

function textFrame(line) {
    const payload = Buffer.from(line);
    const header = payload.length < 126 ? Buffer.from([0x81, payload.length])
        : Buffer.from([0x81, 126, payload.length >> 8, payload.length & 0xff]);
    return Buffer.concat([header, payload]);
}

/** A JWT with the claims the client reads (the client never verifies a signature). */
export function jwt(sub, lifetimeSeconds, serial = 0) {
    const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const now = Date.now() / 1000;
    return [part({ alg: "HS256", typ: "JWT" }), part({ sub, iat: now, exp: now + lifetimeSeconds, n: serial }), "c2ln"]
        .join(".");
}
