// `npm pack` ships dist/, which is build output and not kept in git: it is built here from src/ every time, so
// that the tarball is what src/ says. Without `tsc` there is nothing to ship, and the packer is told the one
// command that installs it and packs (rather than a bare "tsc: not found" from the build script).
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = spawnSync("tsc", ["--version"], { stdio: "ignore" });
if (tsc.error || tsc.status !== 0) {
    console.error("fanout: cannot pack: no TypeScript compiler (tsc) on PATH to build dist/ from src/.\n"
        + "Run clients/js/scripts/pack.sh instead: it installs Debian's node-typescript (apt-get) and packs.");
    process.exit(1);
}
const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
process.exit(build.status ?? 1);
