// dist/ is build output and not kept in git: the README's one pack command must give a package on a machine
// without tsc (installing it as ./dev installs what it needs), and the tarball must install offline into a
// fresh folder and import. A bare `npm pack` without tsc must say which command to run instead.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync,
    writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { startDaemon } from "./support.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const packCommand = "clients/js/scripts/pack.sh";
const which = (tool) => spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
const hasTsc = which("tsc") !== "";

/** A folder as a fresh clone has it (clients/js without dist/ or node_modules/), and a PATH of `tools` only. */
function freshMachine(t, tools) {
    const work = mkdtempSync(join(tmpdir(), "fanout-pack-"));
    t.after(() => rmSync(work, { recursive: true, force: true }));
    const copy = join(work, "repo", "clients", "js");
    for (const part of ["package.json", "README.md", "scripts", "src", "tsconfig.json"]) {
        cpSync(join(root, part), join(copy, part), { recursive: true });
    }
    const bin = join(work, "bin");
    mkdirSync(bin);
    for (const tool of tools) symlinkSync(which(tool), join(bin, tool));
    const env = { ...process.env, PATH: bin, npm_config_cache: join(work, "cache"), npm_config_offline: "true",
        npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
    return { work, copy, bin, env };
}

test("npm pack without tsc fails, naming the command that installs it", { timeout: 60000 }, (t) => {
    const { copy, env } = freshMachine(t, ["node", "npm", "sh"]);
    const pack = spawnSync("npm", ["pack"], { cwd: copy, env, encoding: "utf8" });
    assert.notEqual(pack.status, 0, pack.stdout);
    assert.match(pack.stderr, /no TypeScript compiler \(tsc\) on PATH/);
    assert.ok(pack.stderr.includes(`Run ${packCommand} instead`), pack.stderr);
    assert.doesNotMatch(pack.stderr, /tsc: not found/);
    assert.equal(existsSync(join(copy, "fanout-0.1.0.tgz")), false);
});

test("the README's pack command, with no tsc, installs it and gives a tarball that installs offline and imports",
    { timeout: 180000, skip: !hasTsc && "no tsc here for the stand-in apt-get to install" }, async (t) => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    assert.ok(readme.includes("`" + packCommand + "`"), "the README gives the pack command");
    const { work, bin, env } = freshMachine(t, ["node", "npm", "sh", "id", "dirname"]);
    // apt-get and sudo stand-ins: they note what they were asked, and "installing" node-typescript puts tsc on PATH.
    const asked = join(work, "apt-get.log");
    const install = `${which("ln")} -s ${which("tsc")} ${join(bin, "tsc")}`;
    writeFileSync(join(bin, "apt-get"), `#!/bin/sh\necho "$*" >> ${asked}\n`
        + `case " $* " in *" install "*node-typescript*) ${install};; esac\n`);
    writeFileSync(join(bin, "sudo"), "#!/bin/sh\nexec \"$@\"\n");
    symlinkSync(which("env"), join(bin, "env"));
    chmodSync(join(bin, "apt-get"), 0o755);
    chmodSync(join(bin, "sudo"), 0o755);
    const pack = spawnSync(packCommand, [], { cwd: join(work, "repo"), env, encoding: "utf8" });
    assert.equal(pack.status, 0, pack.stdout + pack.stderr);
    assert.match(readFileSync(asked, "utf8"), /^update -qq\ninstall -y -qq node-typescript\n$/);
    const tarball = join(work, "repo", "clients", "js", pack.stdout.trim().split("\n").pop());
    assert.ok(existsSync(tarball), pack.stdout);

    const app = join(work, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true }));
    const added = spawnSync("npm", ["install", "--offline", tarball], { cwd: app, env, encoding: "utf8" });
    assert.equal(added.status, 0, added.stdout + added.stderr);

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
    assert.match(packed, /package\/dist\/index\.d\.ts/);
    assert.doesNotMatch(packed, /package\/src\//);
});
