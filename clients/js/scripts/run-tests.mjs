// Runs every test/*.test.mjs with Node's test runner, one file at a time (they start daemons), with no flag:
// the package must work on a plain Node. runtime-*.test.mjs test the browser entry point on the runtime's own
// WebSocket, which Node 20 keeps behind a flag: they run with it when this Node has that flag (and skip
// themselves otherwise).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const files = readdirSync(join(root, "test")).filter((name) => name.endsWith(".test.mjs"))
    .map((name) => join("test", name));
const plain = files.filter((name) => !name.includes("runtime-"));
const runtime = files.filter((name) => name.includes("runtime-"));
const flag = typeof WebSocket === "undefined"
    && spawnSync(process.execPath, ["--experimental-websocket", "-e", "0"]).status === 0
    ? ["--experimental-websocket"] : [];
let status = 0;
for (const [extra, group] of [[[], plain], [flag, runtime]]) {
    if (group.length === 0) continue;
    const run = spawnSync(process.execPath, [...extra, "--test", "--test-concurrency=1", ...group],
        { cwd: root, stdio: "inherit" });
    status ||= run.status ?? 1;
}
process.exit(status);
