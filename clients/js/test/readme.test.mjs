// The README's examples are programs a user copies: every ```js block in it runs, as written, against a real
// fanoutd (its 127.0.0.1:7411 and :7412 pointed at the test's ports), importing the package as installed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { appFolder, jsBlocks, startDaemon } from "./support.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function run(file, cwd) {
    return new Promise((resolve) => {
        const child = spawn(process.execPath, [file], { cwd, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (chunk) => (stdout += chunk));
        child.stderr.on("data", (chunk) => (stderr += chunk));
        const timer = setTimeout(() => child.kill("SIGKILL"), 20000);
        child.on("exit", (code, signal) => {
            clearTimeout(timer);
            resolve({ code, signal, stdout, stderr });
        });
    });
}

// What each example prints, in README order: the promise it shows.
const expected = [
    [/^delivered to 1\nnews\.uk 1 hello\n$/],
    // Four receivers counts of 1 and four jobs, each handled once, interleaved as they come.
    [/^(1\n|worker [12] resizes image-\d\.png\n){8}$/, /image-1[^]*image-2[^]*image-3[^]*image-4/],
    [/^asked 1, answered 1\n\S+ utc: \d{4}-\d\d-\d\dT/],
    [/^join 1\n1 true\nleave closed\n$/],
    [/^cannot connect: /, /\npublished to lobby\nrefused: .*"chat\.chat room".*\nrefused: .*"chat\.a\\nPUB admin x"/],
    [/^PONG over the WebSocket\n$/],
];

test("every example in the README runs as written", { timeout: 120000 }, async (t) => {
    const blocks = jsBlocks(join(root, "README.md"));
    assert.equal(blocks.length, expected.length, "an example without its expectation here, or one gone");
    // Presence kept for the presence example's chat.room1.
    const daemon = await startDaemon({ config: 'presence: ["chat.>"]\n' });
    t.after(() => daemon.stop());
    const app = appFolder();
    t.after(() => rmSync(app, { recursive: true, force: true }));
    for (const [index, block] of blocks.entries()) {
        const file = join(app, `example-${index + 1}.mjs`);
        writeFileSync(file, block.replaceAll("127.0.0.1:7411", daemon.address)
            .replaceAll("127.0.0.1:7412", `127.0.0.1:${daemon.httpPort}`));
        const result = await run(file, app);
        assert.deepEqual([result.code, result.stderr], [0, ""], `example ${index + 1}:\n${block}\n${result.stdout}`);
        for (const pattern of expected[index]) assert.match(result.stdout, pattern, `example ${index + 1}`);
    }
    // The examples left nothing behind on the server.
    assert.match(await (await import("../dist/index.js")).connect(daemon.address)
        .then(async (c) => [await c.request("CHANNELS"), await c.close()][0]), /^0/);
});
