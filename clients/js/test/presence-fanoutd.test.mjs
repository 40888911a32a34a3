// Presence (1.3) against a real fanoutd that keeps presence for chat.>: what the scripted server of
// presence.test.mjs cannot show, that the daemon and the client agree on WHO and on the joins and leaves, with
// their seqs, over TCP and the WebSocket; and that docs/shapes.md's member list runs as written.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { connect, Syntax } from "../dist/index.js";
import { appFolder, repo, startDaemon } from "./support.mjs";

let daemon;
before(async () => (daemon = await startDaemon({ config: 'presence: ["chat.>"]\n' })));
after(async () => daemon.stop());

for (const transport of ["tcp", "websocket"]) {
    test(`joins and leaves come with their seqs and WHO counts the members (${transport})`, { timeout: 30000 },
        async (t) => {
            const room = `chat.${transport}`;
            const url = transport === "tcp" ? daemon.address : `ws://127.0.0.1:${daemon.httpPort}/ws`;
            const watcher = await connect(url);
            t.after(() => watcher.close());
            const events = watcher.presence(room);
            await events.ready;
            assert.deepEqual(await watcher.who(room), { count: 0, members: [] });

            const first = await connect(url);
            t.after(() => first.close());
            const sub = first.subscribe(room);
            await sub.ready;
            const joined = await events.nextEvent(5000);
            assert.deepEqual([joined.kind, joined.subject, joined.seq, joined.reason], ["join", room, 1, null]);
            assert.deepEqual([joined.member.user, joined.member.sinceSeconds, joined.member.group], [null, 0, null]);
            const who = await watcher.who(room);
            assert.deepEqual([who.count, who.members.map((m) => m.client)], [1, [joined.member.client]]);

            const second = await connect(url);
            await second.subscribe(room, { group: "pool" }).ready;
            const grouped = await events.nextEvent(5000);
            assert.deepEqual([grouped.kind, grouped.seq, grouped.member.group], ["join", 2, "pool"]);
            // Oldest first, the limit listing fewer than the count.
            const one = await watcher.who(room, 1);
            assert.deepEqual([one.count, one.members.map((m) => m.client)], [2, [joined.member.client]]);

            await sub.unsubscribe();
            const left = await events.nextEvent(5000);
            assert.deepEqual([left.kind, left.seq, left.reason, left.member.client],
                ["leave", 3, "unsub", joined.member.client]);
            await second.close();
            const closed = await events.nextEvent(5000);
            assert.deepEqual([closed.kind, closed.seq, closed.reason, closed.member.client, closed.member.group],
                ["leave", 4, "closed", grouped.member.client, "pool"]);
            assert.deepEqual(await watcher.who(room), { count: 0, members: [] });
        });
}

test("WHO of a subject the server keeps no presence for rejects with Syntax", { timeout: 30000 }, async (t) => {
    const client = await connect(daemon.address);
    t.after(() => client.close());
    await assert.rejects(client.who("news.uk"), (e) => e instanceof Syntax && e.text === "no presence kept for news.uk");
});

/** The ```js block of docs/shapes.md's Presence section. */
function shapesExample() {
    const text = readFileSync(join(repo, "docs", "shapes.md"), "utf8");
    const section = text.slice(text.indexOf("## Presence"));
    return /^```js\n([\s\S]*?)^```$/m.exec(section)[1];
}

test("docs/shapes.md's member list runs as written and follows joins and leaves", { timeout: 30000 }, async (t) => {
    const app = appFolder();
    t.after(() => rmSync(app, { recursive: true, force: true }));
    // The page's render(), as a function declaration (hoisted, so the example's loop can call it): one line
    // per change, the members' client ids.
    const program = shapesExample().replaceAll("127.0.0.1:7412", `127.0.0.1:${daemon.httpPort}`)
        + "\nfunction render(members) { console.log([...members.keys()].join(\",\")); }\n";
    writeFileSync(join(app, "shape.mjs"), program);
    const present = await connect(daemon.address);
    await present.subscribe("chat.room1").ready;
    const observer = await connect(daemon.address);
    t.after(() => observer.close());
    const [{ client: firstId }] = (await observer.who("chat.room1")).members;

    const child = spawn(process.execPath, ["shape.mjs"], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    t.after(() => child.kill("SIGKILL"));
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const lines = [];
    let wake = null;
    let buffered = "";
    child.stdout.on("data", (chunk) => {
        buffered += chunk;
        const parts = buffered.split("\n");
        buffered = parts.pop();
        lines.push(...parts);
        wake?.();
    });
    const nextLine = async () => {
        const deadline = Date.now() + 10000;
        while (lines.length === 0) {
            if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no line from the example: ${stderr}`);
            await new Promise((resolve) => {
                wake = resolve;
                setTimeout(resolve, 100);
            });
        }
        return lines.shift();
    };
    // The WHO list, then the join of a second member, then the first one's leave.
    assert.equal(await nextLine(), firstId);
    const second = await connect(daemon.address);
    t.after(() => second.close());
    await second.subscribe("chat.room1").ready;
    const [, { client: secondId }] = (await observer.who("chat.room1")).members;
    assert.equal(await nextLine(), `${firstId},${secondId}`);
    await present.close();
    assert.equal(await nextLine(), secondId);
});
