// The Node client benchmark finishes and says what happened at any payload size: a subscriber the server drops
// as a slow consumer is reported in the table, not waited for.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fanoutdBinary, repo } from "./support.mjs";

const missing = !existsSync(process.env.NODE_REDIS ?? "/usr/share/nodejs/redis")
    ? "no node-redis (apt-get install node-redis)"
    : spawnSync("redis-server", ["--version"]).status !== 0 ? "no redis-server" : false;

const bench = join(repo, "Benchmarks", "clients", "bench_node.mjs");

test("bench_node.mjs reports a receive cut short by the server instead of hanging",
    { timeout: 120000, skip: missing }, () => {
    // A fanoutd that drops any subscriber about 70 kB behind (the least it allows): the receive cannot complete.
    const env = { ...process.env, FANOUTD: fanoutdBinary(), FANOUTD_MAX_PENDING_BYTES: "70000" };
    const run = spawnSync(process.execPath, [bench, "--messages", "20000", "--runs", "1", "--payload", "100"],
        { env, encoding: "utf8", timeout: 90000 });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /FANOUTD_MAX_PENDING_BYTES=70000/);
    const cut =
        /\| receive \| fanout \| — \| — \| — \| — \| 0 of 1 \(slow-consumer after [\d,]+ of 20,000\) \|/;
    assert.match(run.stdout, cut);
    assert.match(run.stdout, /\| publish \| fanout \| [\d,]+ \| [\d.]+ \| [\d.]+ \| [\d,]+–[\d,]+ \| 1 of 1 \|/);
    assert.match(run.stdout, /\| receive \| node-redis \| /);
});
