// Node clients compared in one run: this package (fanout, over TCP) on fanoutd, against node-redis 4 on
// redis-server (Debian's `node-redis`, found in /usr/share/nodejs or wherever NODE_REDIS points; the npm
// registry, and with it ioredis and nats.js, is out of reach here).
//
// - publish: MESSAGES messages, WINDOW at a time issued at once and each window awaited whole. fanout: one
//   `publish` promise each, written in one send per window; node-redis: the same concurrent `publish` calls,
//   which it pipelines itself, and `multi().execAsPipeline()` of a window.
// - receive: one subscriber counts MESSAGES messages, first to last, that a raw socket publisher in another
//   process (raw_publishers.py) sends as fast as the server takes them. Both servers run with their default
//   settings: a subscriber that falls too far behind is dropped (fanoutd's max_pending_bytes, Redis's
//   client-output-buffer-limit for pub/sub), and then the run says so, with how many messages came, instead of
//   waiting for the rest. A receive that stalls for STALL_MS is reported the same way.
// Medians of RUNS runs, the clients taking turns within each run; CPU (user plus system) per message in µs, of
// this process for the client and of the server from /proc/<pid>/stat.
//
//     node Benchmarks/clients/bench_node.mjs [--messages 100000] [--runs 5] [--payload 16]
// Server settings reach fanoutd through its environment (FANOUTD_MAX_PENDING_BYTES=67108864 ...).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const { connect } = await import(join(repo, "clients", "js", "dist", "index.js"));
const nodeRedis = process.env.NODE_REDIS ?? "/usr/share/nodejs/redis";
if (!existsSync(nodeRedis)) {
    console.error(`no node-redis at ${nodeRedis}: apt-get install node-redis, or set NODE_REDIS`);
    process.exit(2);
}
// Debian's Node finds /usr/share/nodejs by itself; another Node needs it on NODE_PATH for node-redis's own
// dependencies (@redis/client, generic-pool ...).
process.env.NODE_PATH = [dirname(nodeRedis), process.env.NODE_PATH].filter(Boolean).join(":");
Module._initPaths();
const { createClient } = createRequire(import.meta.url)(nodeRedis);
const redisVersion = JSON.parse(readFileSync(join(nodeRedis, "package.json"), "utf8")).version;

const option = (name, fallback) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const messages = option("messages", 100000);
const runs = option("runs", 5);
const payloadSize = option("payload", 16);
const window = 1000;
const stallMs = 10000;
const ticks = Number(spawnSync("getconf", ["CLK_TCK"]).stdout.toString().trim()) || 100;

function serverCpu(pid) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
    return (Number(fields[11]) + Number(fields[12])) / ticks;
}

async function freePort() {
    const probe = net.createServer();
    await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address();
    await new Promise((resolve) => probe.close(resolve));
    return port;
}

async function startServer(name) {
    const port = await freePort();
    const fanoutd = process.env.FANOUTD
        ?? ["release", "debug"].map((f) => join(repo, ".build", f, "fanoutd")).find((p) => existsSync(p));
    const [command, args] = name === "fanoutd"
        ? [fanoutd, ["--listen", `127.0.0.1:${port}`, "--log-level", "warning"]]
        : ["redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]];
    const child = spawn(command, args, { stdio: "ignore" });
    for (const deadline = Date.now() + 20000; ;) {
        const up = await new Promise((resolve) => {
            const socket = net.createConnection({ host: "127.0.0.1", port }, () => {
                socket.destroy();
                resolve(true);
            });
            socket.on("error", () => resolve(false));
        });
        if (up) break;
        if (Date.now() > deadline) throw new Error(`${name} did not start`);
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { name, port, child, cpu: () => serverCpu(child.pid), stop: () => child.kill() };
}

/** One run of a case: { rate, clientCpu, serverCpu, note }; `work` resolves to { seconds, count, note }, count
 * being the messages the figures are per (fewer than asked when a receive was cut short, with a note why). */
async function measure(server, work) {
    const clientBefore = process.cpuUsage();
    const serverBefore = server.cpu();
    const { seconds, count, note = null } = await work();
    const client = process.cpuUsage(clientBefore);
    return { rate: count / seconds, clientCpu: (client.user + client.system) / count,
        serverCpu: (server.cpu() - serverBefore) * 1e6 / count, note };
}

const payload = "x".repeat(payloadSize);

async function windows(issue) {
    const start = performance.now();
    for (let i = 0; i < messages / window; i++) await issue();
    return { seconds: (performance.now() - start) / 1000, count: messages };
}

async function publishFanout(server) {
    const client = await connect(`127.0.0.1:${server.port}`);
    try {
        return await measure(server, () => windows(() => {
            const replies = [];
            for (let j = 0; j < window; j++) replies.push(client.publish("bench.pub", payload));
            return Promise.all(replies);
        }));
    } finally {
        await client.close();
    }
}

async function redisClient(server) {
    const client = createClient({ socket: { host: "127.0.0.1", port: server.port } });
    client.on("error", () => undefined);
    await client.connect();
    return client;
}

async function publishRedis(server) {
    const client = await redisClient(server);
    try {
        return await measure(server, () => windows(() => {
            const replies = [];
            for (let j = 0; j < window; j++) replies.push(client.publish("bench.pub", payload));
            return Promise.all(replies);
        }));
    } finally {
        await client.quit();
    }
}

async function publishRedisPipeline(server) {
    const client = await redisClient(server);
    try {
        return await measure(server, () => windows(() => {
            const pipeline = client.multi();
            for (let j = 0; j < window; j++) pipeline.publish("bench.pub", payload);
            return pipeline.execAsPipeline();
        }));
    } finally {
        await client.quit();
    }
}

function startPublisher(kind, server) {
    return spawn("python3", [join(here, "raw_publishers.py"), kind, String(server.port), "bench.recv",
        String(payloadSize), String(messages)], { stdio: "ignore" });
}

/** Counts messages until `messages` came, the subscriber was dropped (`fail` called), or none came for
 * stallMs: resolves to what the run measured, with a note when it was cut short. */
function counter() {
    let received = 0;
    let start = 0;
    let last = 0;
    let settle;
    const done = new Promise((resolve) => (settle = resolve));
    const watchStart = performance.now();
    const finish = (note = null) => {
        clearInterval(watch);
        const end = received === 1 || !start ? performance.now() : last;
        settle({ seconds: Math.max(end - start, 1) / 1000, count: Math.max(received - 1, 1), note, received });
    };
    const watch = setInterval(() => {
        if (performance.now() - (last || start || watchStart) > stallMs) {
            finish(`stalled after ${received.toLocaleString("en")} of ${messages.toLocaleString("en")}`);
        }
    }, 500);
    return {
        done,
        one() {
            last = performance.now();
            if (++received === 1) start = last;
            if (received === messages) finish();
        },
        fail(why) {
            finish(`${why} after ${received.toLocaleString("en")} of ${messages.toLocaleString("en")}`);
        },
    };
}

async function receiveFanout(server) {
    // No reconnect: a subscriber the server drops ends here, and the run reports it.
    let dropped = "dropped";
    const client = await connect(`127.0.0.1:${server.port}`, {
        reconnect: false,
        onEvent: (event) => {
            if (event.kind === "server-closing") dropped = event.detail.split(" ")[0];
        },
        logger: { info() {}, warn() {} },
    });
    const sub = client.subscribe("bench.recv");
    await sub.ready;
    let publisher;
    try {
        return await measure(server, async () => {
            const count = counter();
            publisher = startPublisher("fanoutd", server);
            (async () => {
                try {
                    for await (const _ of sub) count.one();
                } catch {
                    count.fail(dropped);
                }
            })();
            return count.done;
        });
    } finally {
        publisher?.kill();
        await client.close();
    }
}

async function receiveRedis(server) {
    const client = await redisClient(server);
    const subscriber = client.duplicate();
    subscriber.on("error", () => undefined);
    await subscriber.connect();
    let publisher;
    try {
        return await measure(server, async () => {
            const count = counter();
            // Redis closes a pub/sub client past its output limit; node-redis then reconnects, quietly.
            subscriber.on("reconnecting", () => count.fail("dropped (reconnecting)"));
            subscriber.on("end", () => count.fail("dropped"));
            await subscriber.subscribe("bench.recv", () => count.one());
            publisher = startPublisher("redis", server);
            return count.done;
        });
    } finally {
        publisher?.kill();
        await subscriber.disconnect().catch(() => undefined);
        await client.quit().catch(() => undefined);
    }
}

const cases = [
    ["publish", "fanout", "fanoutd", publishFanout],
    ["publish", "node-redis", "redis", publishRedis],
    ["publish", "node-redis execAsPipeline", "redis", publishRedisPipeline],
    ["receive", "fanout", "fanoutd", receiveFanout],
    ["receive", "node-redis", "redis", receiveRedis],
];
const servers = { fanoutd: await startServer("fanoutd"), redis: await startServer("redis") };
// Stopped from outside (a timeout, ^C): the servers go too, rather than outliving the run.
for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
        for (const server of Object.values(servers)) server.stop();
        process.exit(1);
    });
}
const results = new Map();
try {
    for (let run = 0; run < runs; run++) {
        for (const [kind, client, server, work] of cases) {
            const key = `${kind}|${client}`;
            if (!results.has(key)) results.set(key, []);
            const result = await work(servers[server]);
            results.get(key).push(result);
            if (result.note) console.error(`run ${run + 1}: ${kind} ${client}: ${result.note}`);
        }
        console.error(`run ${run + 1} of ${runs} done`);
    }
} finally {
    for (const server of Object.values(servers)) server.stop();
}
const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
const settings = Object.entries(process.env).filter(([k]) => k.startsWith("FANOUTD_")).map(([k, v]) => `${k}=${v}`);
console.log(`Node ${process.version}, node-redis ${redisVersion}, ${messages} messages of ${payloadSize} bytes, `
    + `median of ${runs} runs; CPU in µs per message; fanoutd ${settings.length ? settings.join(" ") : "defaults"}`);
console.log("| case | client | messages/s | client CPU | server CPU | range of messages/s | complete runs |");
console.log("|---|---|---|---|---|---|---|");
for (const [key, values] of results) {
    const [kind, client] = key.split("|");
    // Figures from complete runs only; a case with none says so.
    const complete = values.filter((v) => v.note === null);
    const rates = complete.map((v) => v.rate);
    const figures = complete.length === 0 ? "— | — | — | —"
        : `${Math.round(median(rates)).toLocaleString("en")} | ${median(complete.map((v) => v.clientCpu)).toFixed(2)} | `
            + `${median(complete.map((v) => v.serverCpu)).toFixed(2)} | `
            + `${Math.round(Math.min(...rates)).toLocaleString("en")}–${Math.round(Math.max(...rates)).toLocaleString("en")}`;
    const notes = values.filter((v) => v.note).map((v) => v.note);
    console.log(`| ${kind} | ${client} | ${figures} | ${complete.length} of ${values.length}`
        + `${notes.length ? ` (${notes.join("; ")})` : ""} |`);
}
process.exit(0);
