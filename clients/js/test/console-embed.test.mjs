// The console page fanoutd serves carries this package's browser build: the copy must be the current one.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

test("the console page embeds the current browser build", () => {
    const script = join(dirname(fileURLToPath(import.meta.url)), "..", "scripts", "embed-console.mjs");
    const check = spawnSync(process.execPath, [script, "--check"], { encoding: "utf8" });
    assert.equal(check.status, 0, check.stderr);
});
