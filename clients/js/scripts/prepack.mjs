// `npm pack` ships dist/ as it is in the repository, built from src/ and checked against it by
// test/shipped-build.test.mjs: a user needs no TypeScript compiler to pack or install the package. Where `tsc`
// is on PATH the build is made again first, so that a packer who changed src/ ships what src/ says.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = spawnSync("tsc", ["--version"], { stdio: "ignore" });
if (tsc.status === 0 && existsSync(join(root, "src"))) {
    const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
    process.exit(build.status ?? 1);
}
for (const file of ["index.js", "index.d.ts", "browser.js", "fanout.browser.js"]) {
    if (!existsSync(join(root, "dist", file))) {
        console.error(`fanout: dist/${file} is missing, and there is no tsc to build it`
            + " (apt-get install node-typescript)");
        process.exit(1);
    }
}
console.error("fanout: no tsc on PATH; packing the build shipped in dist/");
