// What the tests run against: a real fanoutd on a loopback port the kernel picks, a proxy the test can cut,
// and a scripted fake server for the exact lines of the 1.2 verbs and for the RESET push.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

// History for the resume tests: orders keep 5 messages, feeds keep 100, news keep none. Pages served from
// another port (the browser test's) may open the WebSocket.
export const historyConfig = `
http_allowed_origins: ["*"]
history:
  - subjects: "orders.>"
    max_messages: 5
  - subjects: "feeds.>"
    max_messages: 100
`;

// The user of the error tests: may publish only to sensors.> (its token hashed by fanoutd --hash-token).
export const authConfig = `
users:
  sensors:
    token_hash: "sha256$cd52f5e7bcf1b2d265d016db5bc6e951$b90552b89e3564c3b944cbe7645234227c6158afd425b4a399ef73ba1145c7b0"
    publish: ["sensors.>"]
`;
export const sensorsToken = "sensor-secret-token";

/** $FANOUTD, else the repository's debug build, else its release build. */
export function fanoutdBinary() {
    if (process.env.FANOUTD) return process.env.FANOUTD;
    for (const flavour of ["debug", "release"]) {
        const candidate = join(repo, ".build", flavour, "fanoutd");
        if (existsSync(candidate)) return candidate;
    }
    throw new Error("no fanoutd: build it with `swift build` or set FANOUTD");
}

/** Starts fanoutd on 127.0.0.1:0 (TCP and HTTP); resolves once both ports are read from its log. */
export async function startDaemon({ config = "", env = {}, tls = false } = {}) {
    const directory = mkdtempSync(join(tmpdir(), "fanout-js-"));
    const args = ["--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"];
    // With tls: a self-signed certificate for 127.0.0.1, which clients trust as their CA.
    const certificate = join(directory, "cert.pem");
    if (tls) {
        const key = join(directory, "key.pem");
        const made = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
            certificate, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]);
        if (made.status !== 0) throw new Error("openssl failed: " + made.stderr);
        config += `\ntls_listen: ["127.0.0.1:0"]\ntls_cert: "${certificate}"\ntls_key: "${key}"\n`;
    }
    if (config) {
        writeFileSync(join(directory, "fanoutd.yaml"), config);
        args.push("--config", join(directory, "fanoutd.yaml"));
    }
    const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FANOUTD_")));
    const child = spawn(fanoutdBinary(), args, { env: { ...cleanEnv, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    const daemon = { port: 0, httpPort: 0, tlsPort: 0, certificate, log: "", child };
    await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("fanoutd did not start:\n" + daemon.log)), 20000);
        child.stderr.on("data", (chunk) => {
            daemon.log += chunk;
            const tcp = /listening on 127\.0\.0\.1:(\d+)\n/.exec(daemon.log);
            const secure = /listening on 127\.0\.0\.1:(\d+) \(tls\)/.exec(daemon.log);
            const http = /serving HTTP on http:\/\/127\.0\.0\.1:(\d+)/.exec(daemon.log);
            if (tcp && http && (secure || !tls) && !daemon.port) {
                daemon.port = Number(tcp[1]);
                daemon.httpPort = Number(http[1]);
                daemon.tlsPort = secure ? Number(secure[1]) : 0;
                clearTimeout(timer);
                resolve();
            }
        });
        child.on("exit", () => reject(new Error("fanoutd exited:\n" + daemon.log)));
    });
    daemon.address = `127.0.0.1:${daemon.port}`;
    daemon.stop = async () => {
        if (child.exitCode === null) {
            const exited = new Promise((resolve) => child.once("exit", resolve));
            child.kill("SIGKILL");
            await exited;
        }
        rmSync(directory, { recursive: true, force: true });
    };
    return daemon;
}

/** Forwards a port of its own to `target`. cut() drops every open connection; while holding, new ones are
 * closed at once, so a client cannot come back until release(). */
export async function startProxy(target) {
    const sockets = new Set();
    const proxy = { target, holding: false, accepted: 0, port: 0 };
    let onConnect = null;
    const server = net.createServer((client) => {
        if (proxy.holding) {
            client.destroy();
            return;
        }
        const upstream = net.createConnection({ host: "127.0.0.1", port: proxy.target });
        proxy.accepted++;
        sockets.add(client);
        sockets.add(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        const drop = () => {
            client.destroy();
            upstream.destroy();
        };
        client.on("error", drop);
        upstream.on("error", drop);
        client.on("close", drop);
        upstream.on("close", drop);
        upstream.once("connect", () => onConnect?.());
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy.port = server.address().port;
    proxy.address = `127.0.0.1:${proxy.port}`;
    proxy.cut = (holding = true) => {
        proxy.holding = holding;
        for (const socket of sockets) socket.destroy();
        sockets.clear();
    };
    proxy.release = () => {
        proxy.holding = false;
    };
    proxy.stop = async () => {
        proxy.cut();
        await new Promise((resolve) => server.close(resolve));
    };
    return proxy;
}

/** A scripted server: `script(conn, index)` runs for each connection after the greeting (with `epoch` when
 * one is given, as a 1.1 server greets). */
export async function startFakeServer(script, epoch = "E1") {
    const connections = [];
    const failures = [];
    let stopped = false;
    const server = net.createServer((socket) => {
        if (stopped) {
            socket.destroy();
            return;
        }
        const conn = fakeConnection(socket);
        connections.push(conn);
        conn.send(`+HELLO fanout/1 fake auth=none${epoch ? ` epoch=${epoch}` : ""}`);
        Promise.resolve(script(conn, connections.length - 1))
            .catch((error) => {
                // A script's own check that failed fails the test in stop(); a closed client just ends it.
                if (error instanceof assert.AssertionError) failures.push(error);
            })
            .finally(() => socket.end());
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        address: `127.0.0.1:${server.address().port}`,
        connections,
        stop: async () => {
            stopped = true;
            const closed = new Promise((resolve) => server.close(resolve));
            for (const conn of connections) conn.socket.destroy();
            await closed;
            if (failures.length) throw failures[0];
        },
    };
}

function fakeConnection(socket) {
    let buffer = Buffer.alloc(0);
    let wake = null;
    let ended = false;
    const received = [];
    socket.on("data", (chunk) => {
        buffer = Buffer.concat([buffer, chunk]);
        wake?.();
    });
    socket.on("close", () => {
        ended = true;
        wake?.();
    });
    socket.on("error", () => undefined);
    async function until(ready) {
        const deadline = Date.now() + 10000;
        while (!ready()) {
            if (ended) throw new Error("client closed");
            if (Date.now() > deadline) throw new Error("fake server: nothing came");
            await new Promise((resolve) => {
                wake = resolve;
                setTimeout(resolve, 100);
            });
        }
    }
    return {
        socket,
        received,
        send: (line) => socket.write(line + "\n"),
        sendBytes: (bytes) => socket.write(bytes),
        async line() {
            await until(() => buffer.includes(10));
            const end = buffer.indexOf(10);
            const line = buffer.subarray(0, end).toString();
            received.push(line);
            buffer = buffer.subarray(end + 1);
            return line;
        },
        async exactly(count) {
            await until(() => buffer.length >= count);
            const out = buffer.subarray(0, count);
            buffer = buffer.subarray(count);
            return out;
        },
        closed: () => until(() => false).catch(() => undefined),
    };
}

/** Collects a client's events; `waitFor(kind, count)` resolves once that many of a kind came. */
export function recorder() {
    const events = [];
    let wake = null;
    const record = (event) => {
        events.push(event);
        wake?.();
    };
    record.events = events;
    record.of = (kind) => events.filter((e) => e.kind === kind);
    record.waitFor = async (kind, count = 1, timeout = 10000) => {
        const deadline = Date.now() + timeout;
        while (record.of(kind).length < count) {
            if (Date.now() > deadline) throw new Error(`no ${kind} event within ${timeout} ms`);
            await new Promise((resolve) => {
                wake = resolve;
                setTimeout(resolve, 100);
            });
        }
        return record.of(kind);
    };
    return record;
}

/** A logger that keeps the lines, for checking the report wording. */
export function lineLogger() {
    const lines = [];
    return { lines, info: (line) => lines.push(line), warn: (line) => lines.push(line) };
}

export const fast = { initial: 20, maximum: 100, jitter: 0.5 };

/** Sends one command on a fresh connection of its own and resolves to the reply line. */
export function rawCommand(port, line) {
    return new Promise((resolve, reject) => {
        const socket = net.createConnection({ host: "127.0.0.1", port });
        let text = "";
        socket.on("data", (chunk) => {
            text += chunk;
            const lines = text.split("\n");
            if (lines.length === 2) socket.write(line + "\n");
            if (lines.length >= 3) {
                socket.destroy();
                resolve(lines[1]);
            }
        });
        socket.on("error", reject);
    });
}

/** The ```js blocks of a markdown file, in order. */
export function jsBlocks(path) {
    return [...readFileSync(path, "utf8").matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** A folder where `import "fanout"` finds this package as npm would install it. */
export function appFolder() {
    const app = mkdtempSync(join(tmpdir(), "fanout-app-"));
    mkdirSync(join(app, "node_modules"));
    symlinkSync(join(repo, "clients", "js"), join(app, "node_modules", "fanout"));
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    return app;
}
