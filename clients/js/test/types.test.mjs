// `tsc --strict` is clean on the package and on small programs of each shape a user writes (test/types/*.ts,
// and the README's examples as checked JavaScript), compiled against the package as it is installed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { appFolder, jsBlocks } from "./support.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const noTsc = spawnSync("tsc", ["--version"]).status !== 0 && "no tsc";

function tsc(args, cwd) {
    const run = spawnSync("tsc", args, { cwd, encoding: "utf8" });
    return { status: run.status, output: run.stdout + run.stderr };
}

test("the package compiles under tsc --strict", { timeout: 120000, skip: noTsc }, () => {
    const { status, output } = tsc(["-p", "tsconfig.json", "--strict", "--noEmit"], root);
    assert.equal(status, 0, output);
});

test("users' programs of each shape compile under tsc --strict against the installed package",
    { timeout: 120000, skip: noTsc }, (t) => {
    const app = appFolder();
    t.after(() => rmSync(app, { recursive: true, force: true }));
    const programs = readdirSync(join(root, "test", "types")).filter((name) => name.endsWith(".ts"));
    for (const name of programs) cpSync(join(root, "test", "types", name), join(app, name));
    const blocks = jsBlocks(join(root, "README.md"));
    blocks.forEach((block, index) => writeFileSync(join(app, `readme-${index + 1}.mjs`), block));
    // Node's module rules (package exports, ESM), no @types/node: the package's types must stand alone.
    const common = ["--strict", "--noEmit", "--target", "es2022", "--module", "node16", "--moduleResolution", "node16",
        "--lib", "es2022,dom"];
    const typed = tsc([...common, ...programs], app);
    assert.equal(typed.status, 0, typed.output);
    const readme = readdirSync(app).filter((name) => name.startsWith("readme-"));
    const checked = tsc([...common, "--allowJs", "--checkJs", ...readme], app);
    assert.equal(checked.status, 0, checked.output);
    assert.ok(programs.length >= 4 && readme.length >= 4);
});
