// HTTPS and wss:// from Node against a running fanoutd's https_listen, with node:tls and a few lines of
// WebSocket framing (RFC 6455), trusting only the test CA and checking that the certificate names 127.0.0.1.
//
// Usage: node https_listener_checks.mjs HTTPS_PORT TCP_PORT CA_PEM
// Prints "ok node" and exits 0 when every expectation holds; otherwise prints what failed and exits 1.
// Every wait is bounded (TIMEOUT milliseconds).
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";

const TIMEOUT = 10_000;
const [port, tcpPort, caPath] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
const ca = readFileSync(caPath);

function expect(condition, what) {
  if (!condition) throw new Error(what);
}

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), TIMEOUT);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function get(path) {
  return bounded(new Promise((resolve, reject) => {
    https.get({ host: "127.0.0.1", port, path, ca }, (response) => {
      let body = "";
      response.on("data", (chunk) => { body += chunk; });
      response.on("end", () => resolve({ status: response.statusCode, body }));
    }).on("error", reject);
  }), `GET ${path}`);
}

/** Bytes arriving on a socket, taken as they are needed. */
class Reader {
  constructor(socket) {
    this.buffer = Buffer.alloc(0);
    this.waiting = null;
    socket.on("data", (chunk) => { this.buffer = Buffer.concat([this.buffer, chunk]); this.waiting?.(); });
    socket.on("close", () => { this.closed = true; this.waiting?.(); });
  }

  async take(count) {
    while (this.buffer.length < count) {
      expect(!this.closed, "the connection closed");
      await new Promise((resolve) => { this.waiting = resolve; });
    }
    const taken = this.buffer.subarray(0, count);
    this.buffer = this.buffer.subarray(count);
    return taken;
  }

  async until(marker) {
    while (this.buffer.indexOf(marker) < 0) {
      expect(!this.closed, "the connection closed");
      await new Promise((resolve) => { this.waiting = resolve; });
    }
    return (await this.take(this.buffer.indexOf(marker) + marker.length)).toString();
  }
}

/** A masked text frame (a client masks every frame). */
function textFrame(text) {
  const payload = Buffer.from(text);
  expect(payload.length < 126, "short frames only");
  const mask = randomBytes(4);
  const body = payload.map((byte, i) => byte ^ mask[i % 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, body]);
}

/** The next text frame's payload (the server sends unmasked, unfragmented text frames for lines). */
async function readText(reader) {
  const [first, second] = await reader.take(2);
  expect((first & 0x0f) === 0x1, `a text frame, opcode ${first & 0x0f}`);
  let length = second & 0x7f;
  if (length === 126) length = (await reader.take(2)).readUInt16BE(0);
  else if (length === 127) length = Number((await reader.take(8)).readBigUInt64BE(0));
  return (await reader.take(length)).toString();
}

async function wss() {
  const socket = tls.connect({ host: "127.0.0.1", port, ca });
  await bounded(new Promise((resolve, reject) => {
    socket.once("secureConnect", resolve);
    socket.once("error", reject);
  }), "TLS handshake");
  expect(socket.authorized, `certificate verified: ${socket.authorizationError}`);
  const reader = new Reader(socket);
  const key = randomBytes(16).toString("base64");
  socket.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  const head = await bounded(reader.until("\r\n\r\n"), "upgrade response");
  expect(head.startsWith("HTTP/1.1 101 "), `upgrade: ${head}`);
  const next = () => bounded(readText(reader), "a frame");
  expect((await next()).startsWith("+HELLO fanout/1 "), "wss greeting");
  socket.write(textFrame("SUB node.>"));
  expect((await next()) === "+OK 1", "SUB reply");
  return { socket, next };
}

function tcpPublish(line) {
  return bounded(new Promise((resolve, reject) => {
    const socket = net.connect(tcpPort, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
      const lines = text.split("\n");
      if (lines.length === 2) socket.write(`${line}\n`);
      if (lines.length === 3) { socket.end(); resolve(lines[1]); }
    });
    socket.on("error", reject);
  }), "TCP publish");
}

async function main() {
  const health = await get("/healthz");
  expect(health.status === 200 && health.body.trim() === "ok", `/healthz: ${health.status} ${health.body}`);
  const { socket, next } = await wss();
  expect((await tcpPublish("PUB node.tcp from-tcp")) === "+OK 1", "TCP PUB reply");
  expect((await next()) === "MSG node.tcp 1 from-tcp", "wss got the TCP message");
  socket.destroy();
  console.log("ok node");
}

main().catch((error) => {
  console.log(`failed: ${error.message}`);
  process.exit(1);
});
