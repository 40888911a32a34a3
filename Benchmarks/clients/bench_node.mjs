// Node clients compared in one run: this package (fanout, over TCP) on fanoutd, against a stand-in for
// ioredis on redis-server: a minimal RESP client on a raw `net` socket (resp-stand-in.mjs). ioredis and the
// npm `nats` package could not be installed where this was written (no npm registry), so they are not here;
// the stand-in does less work per message than ioredis would (no command objects, no reply parsing beyond
// counting), which favours it.
//
// - publish: MESSAGES messages pipelined, WINDOW at a time, each window awaited whole.
// - receive: one subscriber counts MESSAGES messages, first to last, that a raw socket publisher in another
//   process (raw_publishers.py) sends as fast as the server takes them.
// Medians of RUNS runs, the clients taking turns within each run; CPU (user plus system) per message in µs, of
// this process for the client and of the server from /proc/<pid>/stat.
//
//     node Benchmarks/clients/bench_node.mjs [--messages 100000] [--runs 5] [--payload 16]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { RespClient } from "./resp-stand-in.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const { connect } = await import(join(repo, "clients", "js", "dist", "index.js"));

const option = (name, fallback) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const messages = option("messages", 100000);
const runs = option("runs", 5);
const payloadSize = option("payload", 16);
const window = 1000;
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

async function measure(server, count, work) {
    const clientBefore = process.cpuUsage();
    const serverBefore = server.cpu();
    const seconds = await work();
    const client = process.cpuUsage(clientBefore);
    return [count / seconds, (client.user + client.system) / count, (server.cpu() - serverBefore) * 1e6 / count];
}

const payload = "x".repeat(payloadSize);

async function publishFanout(server) {
    const client = await connect(`127.0.0.1:${server.port}`);
    try {
        return await measure(server, messages, async () => {
            const start = performance.now();
            for (let i = 0; i < messages / window; i++) {
                const replies = [];
                for (let j = 0; j < window; j++) replies.push(client.publish("bench.pub", payload));
                await Promise.all(replies);
            }
            return (performance.now() - start) / 1000;
        });
    } finally {
        await client.close();
    }
}

async function publishResp(server) {
    const client = await RespClient.connect(server.port);
    try {
        return await measure(server, messages, async () => {
            const start = performance.now();
            for (let i = 0; i < messages / window; i++) {
                const replies = [];
                for (let j = 0; j < window; j++) replies.push(client.publish("bench.pub", payload));
                await Promise.all(replies);
            }
            return (performance.now() - start) / 1000;
        });
    } finally {
        client.close();
    }
}

function startPublisher(kind, server) {
    return spawn("python3", [join(here, "raw_publishers.py"), kind, String(server.port), "bench.recv",
        String(payloadSize), String(messages)], { stdio: "ignore" });
}

async function receiveFanout(server) {
    const client = await connect(`127.0.0.1:${server.port}`);
    const sub = client.subscribe("bench.recv");
    await sub.ready;
    try {
        return await measure(server, messages - 1, async () => {
            const publisher = startPublisher("fanoutd", server);
            let received = 0;
            let start = 0;
            for await (const _ of sub) {
                if (++received === 1) start = performance.now();
                if (received === messages) break;
            }
            publisher.kill();
            return (performance.now() - start) / 1000;
        });
    } finally {
        await client.close();
    }
}

async function receiveResp(server) {
    const client = await RespClient.connect(server.port);
    try {
        return await measure(server, messages - 1, async () => {
            let start = 0;
            const done = client.subscribe("bench.recv", messages, () => (start = performance.now()));
            await client.subscribed;
            const publisher = startPublisher("redis", server);
            await done;
            publisher.kill();
            return (performance.now() - start) / 1000;
        });
    } finally {
        client.close();
    }
}

const cases = [
    ["publish", "fanout", "fanoutd", publishFanout],
    ["publish", "RESP stand-in", "redis", publishResp],
    ["receive", "fanout", "fanoutd", receiveFanout],
    ["receive", "RESP stand-in", "redis", receiveResp],
];
const servers = { fanoutd: await startServer("fanoutd"), redis: await startServer("redis") };
const results = new Map();
try {
    for (let run = 0; run < runs; run++) {
        for (const [kind, client, server, work] of cases) {
            const key = `${kind}|${client}`;
            if (!results.has(key)) results.set(key, []);
            results.get(key).push(await work(servers[server]));
        }
        console.error(`run ${run + 1} of ${runs} done`);
    }
} finally {
    for (const server of Object.values(servers)) server.stop();
}
const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`Node ${process.version}, ${messages} messages of ${payloadSize} bytes, median of ${runs} runs; CPU in µs per message`);
console.log("| case | client | messages/s | client CPU | server CPU | range of messages/s |");
console.log("|---|---|---|---|---|---|");
for (const [key, values] of results) {
    const [kind, client] = key.split("|");
    const rates = values.map((v) => v[0]);
    console.log(`| ${kind} | ${client} | ${Math.round(median(rates)).toLocaleString("en")} | ${median(values.map((v) => v[1])).toFixed(2)} | `
        + `${median(values.map((v) => v[2])).toFixed(2)} | ${Math.round(Math.min(...rates)).toLocaleString("en")}–${Math.round(Math.max(...rates)).toLocaleString("en")} |`);
}
process.exit(0);
