// The one-file browser build in headless Chromium, driven by Selenium: over the WebSocket at /ws, a round
// trip, a resume through a proxy cut from the page (exact counts, no duplicate), a large payload and an error.
// A machine without Chromium, its driver, or Python's selenium skips this test.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { historyConfig, startDaemon, startProxy } from "./support.mjs";

const here = dirname(fileURLToPath(import.meta.url));

function browserMissing() {
    if (!existsSync("/usr/bin/chromium") || !existsSync(process.env.CHROMEDRIVER ?? "/usr/bin/chromedriver")) {
        return "chromium and chromium-driver are not installed";
    }
    try {
        execFileSync("python3", ["-c", "import selenium"], { stdio: "ignore" });
    } catch {
        return "python3 has no selenium module";
    }
    return false;
}

test("the browser build resumes over the WebSocket in headless Chromium", { timeout: 120000, skip: browserMissing() }, async (t) => {
    const daemon = await startDaemon({ config: historyConfig });
    t.after(() => daemon.stop());
    const proxy = await startProxy(daemon.httpPort);
    t.after(() => proxy.stop());
    const files = {
        "/": ["text/html", readFileSync(join(here, "browser", "page.html"))],
        "/fanout.browser.js": ["text/javascript", readFileSync(join(here, "..", "dist", "fanout.browser.js"))],
        "/config.json": ["application/json", JSON.stringify({
            proxied: `ws://127.0.0.1:${proxy.port}/ws`, direct: `ws://127.0.0.1:${daemon.httpPort}/ws`,
        })],
    };
    const server = http.createServer((request, response) => {
        if (request.url === "/cut") proxy.cut(true);
        if (request.url === "/release") proxy.release();
        const [type, body] = files[request.url] ?? ["text/plain", "ok"];
        response.writeHead(200, { "content-type": type });
        response.end(body);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(() => new Promise((resolve) => server.close(resolve)));

    const driver = spawn("python3", [join(here, "browser", "drive.py"), `http://127.0.0.1:${server.address().port}/`],
        { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    driver.stdout.on("data", (chunk) => (output += chunk));
    driver.stderr.on("data", (chunk) => (output += chunk));
    const status = await new Promise((resolve) => driver.on("exit", resolve));
    assert.equal(status, 0, output);
    const result = JSON.parse(output.trim().split("\n").pop());
    assert.deepEqual(result.seqs, [1, 2, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(result.report, { subject: "orders.web", recovered: 5, missed: 2, reason: "resume" });
    assert.equal(result.receivers, 1);
    assert.equal(result.bigIntact, true);
    assert.deepEqual(result.error, { isBadSubject: true, code: "bad-subject", text: result.error.text });
    assert.equal(result.pending, 0);
});
