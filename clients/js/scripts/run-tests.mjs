// Runs every test/*.test.mjs with Node's test runner, one file at a time (they start daemons), turning on
// the WebSocket that Node 20 keeps behind a flag when this Node has that flag (the WebSocket tests skip
// themselves otherwise).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const files = readdirSync(join(root, "test")).filter((name) => name.endsWith(".test.mjs")).map((name) => join("test", name));
const flag = typeof WebSocket === "undefined"
    && spawnSync(process.execPath, ["--experimental-websocket", "-e", "0"]).status === 0 ? ["--experimental-websocket"] : [];
const run = spawnSync(process.execPath, [...flag, "--test", "--test-concurrency=1", ...files], { cwd: root, stdio: "inherit" });
process.exit(run.status ?? 1);
