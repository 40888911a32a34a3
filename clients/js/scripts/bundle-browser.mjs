// Joins the compiled browser modules (dist/browser.js and what it imports) into one classic script,
// dist/fanout.browser.js, that sets `globalThis.Fanout`: for pages that load one file without a module
// loader, such as the console fanoutd serves. Each module becomes a function returning its exports; it
// understands exactly the import and export forms tsc emits for this package.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// The folder tsc built into: dist/, or the one given (test/shipped-build.test.mjs builds elsewhere to compare).
const dist = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
const order = [];
const seen = new Set();

function visit(name) {
    if (seen.has(name)) return;
    seen.add(name);
    const source = readFileSync(join(dist, name), "utf8");
    for (const match of source.matchAll(/^(?:import|export) .* from "\.\/([\w-]+\.js)";$/gm)) visit(match[1]);
    order.push(name);
}
visit("browser.js");

const variable = (name) => "module_" + name.replace(/\W/g, "_");
const parts = order.map((name) => {
    const exported = [];
    const spreads = [];
    const body = readFileSync(join(dist, name), "utf8")
        .replace(/^\/\/# sourceMappingURL=.*$/gm, "")
        .replace(/^import \{([^}]*)\} from "\.\/([\w-]+\.js)";$/gm,
            (_, names, from) => `const {${names}} = ${variable(from)};`)
        .replace(/^export \{([^}]*)\} from "\.\/([\w-]+\.js)";$/gm, (_, names, from) => {
            exported.push(...names.split(",").map((n) => n.trim()).filter(Boolean));
            return `const {${names}} = ${variable(from)};`;
        })
        .replace(/^export \* from "\.\/([\w-]+\.js)";$/gm, (_, from) => {
            spreads.push(variable(from));
            return "";
        })
        .replace(/^export (async function|function|class|const|let) (\w+)/gm, (_, kind, id) => {
            exported.push(id);
            return `${kind} ${id}`;
        });
    if (/^\s*(import|export) /m.test(body)) throw new Error(`${name}: an import or export this script cannot join`);
    const result = [...spreads.map((s) => `...${s}`), ...exported].join(", ");
    return `const ${variable(name)} = (() => {\n${body}\nreturn { ${result} };\n})();`;
});

const header = "// The Fanout client for browsers, as one script: sets globalThis.Fanout (connect, Client, errors ...).\n";
const script = `${header}(() => {\n"use strict";\n${parts.join("\n")}\nglobalThis.Fanout = ${variable("browser.js")};\n})();\n`;
writeFileSync(join(dist, "fanout.browser.js"), script);
