// Copies the one-file browser build (dist/fanout.browser.js, from `npm run build`) into the console's target,
// Sources/FanoutConsole/Page/fanout.browser.js, which fanoutd embeds at build time and inlines into the page
// at the `fanout-client` script tag. The copy is the build byte for byte. `--check` changes nothing and exits
// 1 when the copy is stale.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// The line-count test (SourceFileLengthTests) leaves out this one path, as a copy of a build.
const copyPath = "Sources/FanoutConsole/Page/fanout.browser.js";
const copy = join(root, "..", "..", copyPath);

// dist/ is build output, not kept in git: it must have been built from the current src/ first.
const built = join(root, "dist", "fanout.browser.js");
if (!existsSync(built)) {
    console.error("no clients/js/dist/fanout.browser.js: run `npm run build` in clients/js first");
    process.exit(1);
}
const wanted = readFileSync(built, "utf8");
// The build sits inside the page's <script> element, which the first `</script` would end.
if (wanted.includes("</script")) {
    throw new Error("the browser build holds text that cannot sit in the console page");
}
const current = existsSync(copy) ? readFileSync(copy, "utf8") : null;
if (process.argv.includes("--check")) {
    if (current !== wanted) {
        console.error("the console page's copy of the client is stale: run node clients/js/scripts/embed-console.mjs");
        process.exit(1);
    }
} else if (current !== wanted) {
    writeFileSync(copy, wanted);
    console.log(`updated ${copy}`);
}
