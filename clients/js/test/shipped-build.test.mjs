// dist/ is shipped in the repository, so that `npm pack` and an install need no TypeScript compiler: it must be
// what src/ builds to. And the packed tarball installs offline into a fresh folder and imports, with no tsc.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { startDaemon } from "./support.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const hasTsc = spawnSync("tsc", ["--version"]).status === 0;

test("dist/ is what src/ builds to (after changing src/, run npm run build)",
    { timeout: 120000, skip: !hasTsc && "no tsc" }, (t) => {
    const out = mkdtempSync(join(tmpdir(), "fanout-build-"));
    t.after(() => rmSync(out, { recursive: true, force: true }));
    const built = spawnSync("tsc", ["-p", "tsconfig.json", "--outDir", out], { cwd: root, encoding: "utf8" });
    assert.equal(built.status, 0, built.stdout + built.stderr);
    const bundled = spawnSync(process.execPath, ["scripts/bundle-browser.mjs", out], { cwd: root, encoding: "utf8" });
    assert.equal(bundled.status, 0, bundled.stderr);
    const shipped = readdirSync(join(root, "dist")).sort();
    assert.deepEqual(shipped, readdirSync(out).sort());
    for (const name of shipped) {
        const same = readFileSync(join(root, "dist", name)).equals(readFileSync(join(out, name)));
        assert.ok(same, `dist/${name} is stale`);
    }
});

test("npm pack works with no tsc, and the tarball installs offline and imports", { timeout: 120000 }, async (t) => {
    const work = mkdtempSync(join(tmpdir(), "fanout-pack-"));
    t.after(() => rmSync(work, { recursive: true, force: true }));
    // The package as a user has it, on a PATH with node, npm and a shell only.
    const copy = join(work, "fanout");
    for (const part of ["package.json", "README.md", "dist", "scripts", "src", "tsconfig.json"]) {
        cpSync(join(root, part), join(copy, part), { recursive: true });
    }
    const bin = join(work, "bin");
    mkdirSync(bin);
    for (const tool of ["node", "npm", "sh"]) {
        const found = spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
        symlinkSync(found, join(bin, tool));
    }
    const env = { ...process.env, PATH: bin, npm_config_cache: join(work, "cache"), npm_config_offline: "true",
        npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
    const pack = spawnSync("npm", ["pack", "--pack-destination", work], { cwd: copy, env, encoding: "utf8" });
    assert.equal(pack.status, 0, pack.stdout + pack.stderr);
    assert.match(pack.stderr, /no tsc on PATH/);
    const tarball = join(work, pack.stdout.trim().split("\n").pop());

    const app = join(work, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true }));
    const install = spawnSync("npm", ["install", "--offline", tarball], { cwd: app, env, encoding: "utf8" });
    assert.equal(install.status, 0, install.stdout + install.stderr);

    const daemon = await startDaemon();
    t.after(() => daemon.stop());
    writeFileSync(join(app, "main.mjs"), `
import { connect, BadSubject } from "fanout";
import { connect as connectBrowser } from "fanout/browser";
if (typeof connectBrowser !== "function") throw new Error("no fanout/browser");
const client = await connect(process.argv[2]);
const sub = client.subscribe("news.*");
await sub.ready;
const receivers = await client.publish("news.uk", "hello");
const msg = await sub.nextMessage();
console.log(receivers, msg.subject, msg.text, BadSubject.name);
await client.close();
`);
    const inApp = { cwd: app, encoding: "utf8", timeout: 20000 };
    const esm = spawnSync(process.execPath, ["main.mjs", daemon.address], inApp);
    assert.equal(esm.stderr, "");
    assert.equal(esm.stdout, "1 news.uk hello BadSubject\n");
    // The package declares no CommonJS entry of its own. A Node that can require() an ES module (20.19 and
    // later) loads it from CommonJS as it is; an older one says ERR_REQUIRE_ESM, and import() is the way there.
    writeFileSync(join(app, "main.cjs"), `
const { connect } = require("fanout");
connect(process.argv[2]).then(async (client) => {
    console.log(await client.publish("news.uk", "from require"));
    await client.close();
});
`);
    const cjs = spawnSync(process.execPath, ["main.cjs", daemon.address], inApp);
    if (process.features.require_module) assert.equal(cjs.stdout, "0\n", cjs.stderr);
    else assert.match(cjs.stderr, /ERR_REQUIRE_ESM/);
    const packed = spawnSync("tar", ["-tzf", tarball], { encoding: "utf8" }).stdout;
    assert.match(packed, /package\/dist\/fanout\.browser\.js/);
    assert.doesNotMatch(packed, /package\/src\//);
});
