// Puts the one-file browser build (dist/fanout.browser.js, from `npm run build`) into the console page that
// fanoutd compiles into its binary (ConsoleClientScript.swift, which the page interpolates), between its
// `<script id="fanout-client">` tags, so that the page speaks the protocol through this package. `--check` changes nothing and exits 1 when the page's copy is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = join(root, "..", "..", "Sources", "FanoutServer", "Console", "ConsoleClientScript.swift");
const open = '<script id="fanout-client">\n';
const close = "</script>\n";

export function embedded(source, script) {
    const start = source.indexOf(open);
    const end = source.indexOf(close, start);
    if (start < 0 || end < 0) throw new Error(`${page}: no <script id="fanout-client"> block`);
    // The page is a Swift raw string (#"""...."""#): the script must not end it or interpolate into it.
    if (script.includes('"""#') || script.includes("\\#(") || script.includes("</script")) {
        throw new Error("the browser build holds text that cannot sit in the console page");
    }
    return source.slice(0, start + open.length) + script + source.slice(end);
}

const source = readFileSync(page, "utf8");
const wanted = embedded(source, readFileSync(join(root, "dist", "fanout.browser.js"), "utf8"));
if (process.argv.includes("--check")) {
    if (wanted !== source) {
        console.error("the console page's copy of the client is stale: run node clients/js/scripts/embed-console.mjs");
        process.exit(1);
    }
} else if (wanted !== source) {
    writeFileSync(page, wanted);
    console.log(`updated ${page}`);
}
