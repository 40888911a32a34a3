/// The operator's console at `GET /`: one self-contained page (HTML, CSS and JS, no CDN, no framework)
/// compiled into the binary, so that it works offline and always matches the server it comes from.
///
/// It speaks the protocol over the WebSocket at `/ws` through the Fanout JavaScript client (clients/js), whose
/// one-file browser build is embedded below between the `fanout-client` script tags: the browser side of the
/// protocol is written once. `node clients/js/scripts/embed-console.mjs` refreshes that copy after a change to
/// the client, and the client's tests fail while it is stale. The page shows INFO every second for the
/// counters and the messages-per-second chart (the last five minutes), CHANNELS every two seconds, CLIENTS
/// every five (admins only on a server with users); the subscribe box subscribes (concrete subjects resume
/// after a reconnect, and resumes and `RESET` pushes are shown among the messages), and the publish form
/// publishes. It asks for a token when the greeting says `auth=required`, keeps it for the tab's session only,
/// and reconnects by itself. The event-stream panel opens an `EventSource` on `/events`, which resumes by
/// itself after a drop.
enum ConsolePage {
    static let html: [UInt8] = Array(text.utf8)

    private static let text = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fanout console</title>
<style>
:root { --bg:#0f1419; --panel:#171d24; --line:#27313c; --text:#d7dde4; --dim:#8593a3; --accent:#4fb3ff; --good:#5fd38d; --bad:#ff6b6b; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--text); font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { display:flex; align-items:center; gap:16px; padding:12px 20px; border-bottom:1px solid var(--line); }
header h1 { font-size:17px; margin:0; font-weight:600; letter-spacing:.02em; }
#status { font-size:12px; padding:2px 10px; border-radius:10px; background:var(--line); color:var(--dim); }
#status.up { background:#173d2a; color:var(--good); }
#status.down { background:#47201f; color:var(--bad); }
#server { color:var(--dim); font-size:12px; margin-left:auto; }
main { display:grid; grid-template-columns:repeat(12, 1fr); gap:14px; padding:14px 20px 24px; }
section { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:12px 14px; min-width:0; }
section h2 { font-size:12px; text-transform:uppercase; letter-spacing:.08em; color:var(--dim); margin:0 0 10px; font-weight:600; }
.wide { grid-column:span 12; } .half { grid-column:span 6; } .third { grid-column:span 4; } .two-thirds { grid-column:span 8; }
@media (max-width: 900px) { .half, .third, .two-thirds { grid-column:span 12; } }
#counters { display:grid; grid-template-columns:repeat(auto-fit, minmax(120px, 1fr)); gap:10px; }
.counter { background:var(--bg); border:1px solid var(--line); border-radius:6px; padding:8px 10px; }
.counter b { display:block; font-size:20px; font-variant-numeric:tabular-nums; font-weight:600; }
.counter span { color:var(--dim); font-size:12px; }
canvas { width:100%; height:160px; display:block; }
table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
th, td { text-align:left; padding:4px 6px; border-bottom:1px solid var(--line); white-space:nowrap; overflow:hidden; text-overflow:ellipsis; max-width:260px; }
th { color:var(--dim); font-weight:500; font-size:12px; }
.scroll { max-height:260px; overflow:auto; }
form { display:flex; gap:8px; flex-wrap:wrap; margin-bottom:10px; }
input { background:var(--bg); color:var(--text); border:1px solid var(--line); border-radius:5px; padding:6px 8px; font:inherit; min-width:0; flex:1; }
input:focus { outline:none; border-color:var(--accent); }
button { background:var(--accent); color:#04121f; border:0; border-radius:5px; padding:6px 14px; font:inherit; font-weight:600; cursor:pointer; }
button.quiet { background:var(--line); color:var(--text); }
ol { list-style:none; margin:0; padding:0; font:12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; }
ol li { padding:2px 4px; border-bottom:1px solid var(--line); word-break:break-all; }
ol li .subject { color:var(--accent); } ol li .seq { color:var(--dim); } ol li .time { color:var(--dim); float:right; }
.note { color:var(--dim); font-size:12px; }
.error { color:var(--bad); }
#auth { position:fixed; inset:0; background:rgba(5,8,12,.8); display:none; align-items:center; justify-content:center; }
#auth.shown { display:flex; }
#auth form { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:18px; width:min(420px, 92vw); flex-direction:column; }
</style>
</head>
<body>
<header>
  <h1>Fanout</h1><span id="status">connecting…</span><span id="server"></span>
</header>
<main>
  <section class="wide"><h2>Server</h2><div id="counters"></div></section>
  <section class="two-thirds"><h2>Messages per second, last 5 minutes</h2><canvas id="chart" width="800" height="160"></canvas></section>
  <section class="third"><h2>Subjects</h2><div class="scroll"><table><thead><tr><th>subject</th><th>subscribers</th></tr></thead><tbody id="channels"></tbody></table></div><p class="note" id="channels-note"></p></section>
  <section class="half"><h2>Subscribe</h2>
    <form id="sub-form"><input id="sub-pattern" placeholder="pattern, e.g. news.>" autocomplete="off"><button id="sub-button">Subscribe</button><button type="button" class="quiet" id="sub-clear">Clear</button></form>
    <p class="note" id="sub-note">Messages of the patterns you subscribe to appear here as they arrive.</p>
    <div class="scroll"><ol id="messages"></ol></div>
  </section>
  <section class="half"><h2>Publish</h2>
    <form id="pub-form"><input id="pub-subject" placeholder="subject" autocomplete="off"><input id="pub-payload" placeholder="payload" autocomplete="off"><button id="pub-button">Publish</button></form>
    <p class="note" id="pub-result"></p>
    <h2 style="margin-top:16px">Event stream (Server-Sent Events, resumes by itself)</h2>
    <form id="es-form"><input id="es-subject" placeholder="subject or pattern" autocomplete="off"><button id="es-open">Open</button></form>
    <p class="note" id="es-note"></p>
    <div class="scroll"><ol id="es-log"></ol></div>
  </section>
  <section class="wide"><h2>Clients</h2><div class="scroll"><table><thead><tr><th>id</th><th>address</th><th>transport</th><th>subscriptions</th><th>pending bytes</th><th>age</th></tr></thead><tbody id="clients"></tbody></table></div><p class="note" id="clients-note"></p></section>
</main>
<div id="auth"><form id="auth-form"><h2>This server needs a token</h2><input id="auth-token" type="password" placeholder="token" autocomplete="off"><p class="note error" id="auth-error"></p><button>Sign in</button></form></div>
<script id="fanout-client">
// The Fanout client for browsers, as one script: sets globalThis.Fanout (connect, Client, errors ...).
(() => {
"use strict";
const module_errors_js = (() => {
/** Base of every error this package throws. */
class FanoutError extends Error {
    constructor(message) {
        super(message);
        this.name = new.target.name;
    }
}
/** The server answered `-ERR <code> <text>`; `code` and `text` are the server's words. */
class ServerError extends FanoutError {
    constructor(code, text) {
        super(`${code} ${text}`.trim());
        this.code = code;
        this.text = text;
    }
}
class UnknownCommand extends ServerError {
}
class Syntax extends ServerError {
}
class BadSubject extends ServerError {
}
class TooLong extends ServerError {
}
class Limit extends ServerError {
}
class Denied extends ServerError {
}
class AuthRequired extends ServerError {
}
class Unavailable extends ServerError {
}
class SlowConsumer extends ServerError {
}
class ShuttingDown extends ServerError {
}
class IdleTimeout extends ServerError {
}
const byCode = {
    "unknown-command": UnknownCommand,
    syntax: Syntax,
    "bad-subject": BadSubject,
    "too-long": TooLong,
    limit: Limit,
    denied: Denied,
    "auth-required": AuthRequired,
    unavailable: Unavailable,
    "slow-consumer": SlowConsumer,
    "shutting-down": ShuttingDown,
    "idle-timeout": IdleTimeout,
};
/** Codes the server sends only when it closes the connection on its own, never as a reply. */
const closingCodes = new Set(["slow-consumer", "shutting-down", "idle-timeout"]);
/** The error for `-ERR <code> <text>`; an unknown code still gives a ServerError. */
function serverError(code, text) {
    const Kind = byCode[code] ?? ServerError;
    return new Kind(code, text);
}
/** The server could not be reached, or refused the connection before greeting it. */
class CannotConnect extends FanoutError {
}
/** The connection dropped before this command's reply came. The command may or may not have taken effect (a
 * PUB may have been delivered), so the client never sends it again. */
class ConnectionLost extends FanoutError {
}
/** The client was closed by its owner. */
class Closed extends FanoutError {
}
/** The server sent something that is not Fanout protocol version 1. */
class ProtocolViolation extends FanoutError {
}

return { FanoutError, ServerError, UnknownCommand, Syntax, BadSubject, TooLong, Limit, Denied, AuthRequired, Unavailable, SlowConsumer, ShuttingDown, IdleTimeout, closingCodes, serverError, CannotConnect, ConnectionLost, Closed, ProtocolViolation };
})();
const module_protocol_js = (() => {
// The wire format, without I/O: subjects, command encoding, and parsing of server lines (PROTOCOL.md).
/** What the client assumes the server's max_line is when choosing between PUB and BPUB. */
const defaultMaxLine = 65536;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const LF = 10;
const CR = 13;
function encode(text) {
    return encoder.encode(text);
}
function decode(bytes) {
    return decoder.decode(bytes);
}
function toBytes(payload) {
    return typeof payload === "string" ? encoder.encode(payload) : payload;
}
function isWildcard(pattern) {
    return pattern.split(".").some((token) => token === "*" || token === ">");
}
/** Whether the concrete `subject` falls under `pattern`: `*` is one token, a last `>` one or more. */
function matches(pattern, subject) {
    if (pattern === subject)
        return true;
    const wanted = pattern.split(".");
    const tokens = subject.split(".");
    for (let i = 0; i < wanted.length; i++) {
        if (wanted[i] === ">" && i === wanted.length - 1)
            return tokens.length > i;
        if (i >= tokens.length || (wanted[i] !== "*" && wanted[i] !== tokens[i]))
            return false;
    }
    return tokens.length === wanted.length;
}
/** Whether `PUB <subject> <payload>` can carry the payload: no LF, no CR at its end (the server strips a CR
 * before the LF), and the line within max_line. */
function fitsLine(payload, subject, maxLine = defaultMaxLine) {
    if (payload.includes(LF) || (payload.length > 0 && payload[payload.length - 1] === CR))
        return false;
    return 5 + subject.length + payload.length <= maxLine;
}
function concat(...parts) {
    let length = 0;
    for (const part of parts)
        length += part.length;
    const out = new Uint8Array(length);
    let offset = 0;
    for (const part of parts) {
        out.set(part, offset);
        offset += part.length;
    }
    return out;
}
/** `PUB <subject> <payload>` as one string, when the payload is text a line can surely carry (its UTF-8 is at
 * most three bytes per character); null otherwise. Sockets take strings without a separate encoding step. */
function publishLine(subject, payload, maxLine = defaultMaxLine) {
    if (payload.includes("\n") || payload.endsWith("\r") || 5 + subject.length + 3 * payload.length > maxLine)
        return null;
    return `PUB ${subject} ${payload}\n`;
}
function publishCommand(subject, payload, maxLine = defaultMaxLine) {
    if (fitsLine(payload, subject, maxLine)) {
        return { bytes: concat(encoder.encode(`PUB ${subject} `), payload, NEWLINE), binary: false };
    }
    return { bytes: concat(encoder.encode(`BPUB ${subject} ${payload.length}\n`), payload, NEWLINE), binary: true };
}
const NEWLINE = new Uint8Array([LF]);
/** `key=value` words as an object; words without `=` are skipped (later versions may add fields). */
function parseFields(words) {
    const out = {};
    for (const word of words) {
        const equals = word.indexOf("=");
        if (equals > 0)
            out[word.slice(0, equals)] = word.slice(equals + 1);
    }
    return out;
}
function parseGreeting(line) {
    const words = line.split(" ").filter(Boolean);
    if (words.length < 3 || words[0] !== "+HELLO" || !words[1].startsWith("fanout/1")) {
        throw new Error(`not a Fanout greeting: ${line.slice(0, 80)}`);
    }
    const fields = parseFields(words.slice(3));
    return { serverName: words[2], authRequired: fields.auth === "required", epoch: fields.epoch || null };
}
function parseResumeReply(text) {
    const words = text.split(" ").filter(Boolean);
    const fields = parseFields(words.slice(1));
    if (!fields.epoch || fields.seq === undefined || fields.replayed === undefined || fields.missed === undefined) {
        throw new Error(`not a RESUME reply: ${text.slice(0, 80)}`);
    }
    return {
        subscriptions: Number(words[0]),
        epoch: fields.epoch,
        seq: Number(fields.seq),
        replayed: Number(fields.replayed),
        missed: fields.missed === "unknown" ? null : Number(fields.missed),
    };
}
function parseReset(line) {
    const words = line.split(" ").filter(Boolean);
    const fields = parseFields(words.slice(2));
    return {
        subject: words[1],
        epoch: fields.epoch,
        seq: Number(fields.seq),
        missed: fields.missed === "unknown" ? null : Number(fields.missed),
    };
}
/** Splits the server's byte stream into lines, and a `BMSG <subject> <seq> <length>` header with the bytes
 * after it into one frame. Pure: fed chunks as they come, in any split.
 * Bound: holds at most one unfinished line (refused past maxLine) or one BMSG payload (refused past
 * maxPayload) beyond the chunk being fed. */
class Framer {
    constructor(maxLine, maxPayload) {
        this.maxLine = maxLine;
        this.maxPayload = maxPayload;
        this.buffer = new Uint8Array(0);
        this.header = null;
        this.due = 0;
    }
    feed(chunk) {
        const buffer = this.buffer.length ? concat(this.buffer, chunk) : chunk;
        const frames = [];
        let start = 0;
        for (;;) {
            if (this.header) {
                if (buffer.length - start < this.due)
                    break;
                const end = start + this.due - 1;
                if (buffer[end] !== LF)
                    throw new Error("a BMSG payload is not followed by LF");
                frames.push({ header: this.header, payload: buffer.slice(start, end) });
                this.header = null;
                start = end + 1;
                continue;
            }
            const newline = buffer.indexOf(LF, start);
            if (newline < 0) {
                if (buffer.length - start > this.maxLine + 1) {
                    throw new Error(`a server line is longer than ${this.maxLine} bytes`);
                }
                break;
            }
            // No CR is stripped: the server ends its lines in LF alone, and a CR before it is payload. A view, not
            // a copy: whoever keeps bytes of a line (a message's payload) copies them.
            const line = buffer.subarray(start, newline);
            start = newline + 1;
            if (startsWith(line, BMSG)) {
                const length = bmsgLength(line);
                if (length > this.maxPayload) {
                    throw new Error(`a BMSG of ${length} bytes is over max_payload (${this.maxPayload})`);
                }
                this.header = line.slice();
                this.due = length + 1;
                continue;
            }
            frames.push(line);
        }
        this.buffer = start < buffer.length ? buffer.slice(start) : new Uint8Array(0);
        return frames;
    }
}
const BMSG = encoder.encode("BMSG ");
function startsWith(bytes, prefix) {
    if (bytes.length < prefix.length)
        return false;
    for (let i = 0; i < prefix.length; i++)
        if (bytes[i] !== prefix[i])
            return false;
    return true;
}
/** The `<length>` of a `BMSG <subject> <seq> <length>` header. */
function bmsgLength(header) {
    const text = decode(header);
    const length = Number(text.slice(text.lastIndexOf(" ") + 1));
    if (!Number.isSafeInteger(length) || length < 0)
        throw new Error(`bad BMSG header: ${text.slice(0, 80)}`);
    return length;
}

return { defaultMaxLine, encode, decode, toBytes, isWildcard, matches, fitsLine, concat, publishLine, publishCommand, NEWLINE, parseFields, parseGreeting, parseResumeReply, parseReset, Framer, startsWith, bmsgLength };
})();
const module_messages_js = (() => {
// What the client hands to the application: messages, questions, answers, and connection events.
const { decode } = module_protocol_js;
/** One message as delivered: its concrete subject, that subject's seq, and the payload's bytes. */
class Message {
    constructor(subject, seq, payload) {
        this.subject = subject;
        this.seq = seq;
        this.payload = payload;
    }
    /** The payload as text (invalid UTF-8 replaced). */
    get text() {
        return decode(this.payload);
    }
}
/** A question put to this client by ASK (1.2); the responder's return value is the answer. */
class Question {
    constructor(subject, id, payload) {
        this.subject = subject;
        this.id = id;
        this.payload = payload;
    }
    get text() {
        return decode(this.payload);
    }
}

return { Message, Question };
})();
const module_questions_js = (() => {
// Questions (1.2): the ones this client asks, open until their DONE, and the responders answering the ones
// put to it. Owned by the client, which hands over the ASK, ANSWER and DONE pushes and a lost connection.
const { Question } = module_messages_js;
const { concat, decode, encode, matches, NEWLINE, parseFields, toBytes } = module_protocol_js;
/** The command that subscribes a responder: plainly, or as a member of its group. */
function responderLine(responder) {
    return responder.group !== null ? `QSUB ${responder.group} ${responder.subject}` : `SUB ${responder.subject}`;
}
/** Bound: one open question per ASK awaiting its DONE (the server allows `max_asks` per connection), and one
 * responder per `respond` call. */
class Questions {
    constructor(owner) {
        this.owner = owner;
        this.responders = [];
        this.open = new Map();
    }
    async ask(subject, payload, options) {
        const bytes = toBytes(payload);
        if (bytes.includes(10) || bytes[bytes.length - 1] === 13)
            throw new TypeError("a question's payload must fit on one line");
        let done;
        const timeout = Math.max(1, Math.round(options.timeout ?? 500));
        const line = concat(encode(`ASK ${subject} ${timeout} ${options.max ?? 0} `), bytes, NEWLINE);
        await this.owner.command(line, (text) => {
            // Registered as the reply is read, so the ANSWER and DONE pushes right behind it find it.
            const [id, asked] = text.split(" ");
            const result = { id, asked: Number(asked), answered: 0, gone: 0, answers: [] };
            done = new Promise((resolve, reject) => this.open.set(id, { result, resolve, reject }));
            return result;
        });
        return done;
    }
    /** `ANSWER <id> <responder> <payload>`. */
    answerPushed(line, frame) {
        const [, id, responder] = line.split(" ", 3);
        const payload = frame.slice(8 + id.length + responder.length + 1);
        this.open.get(id)?.result.answers.push({ responder, payload, text: decode(payload) });
    }
    /** `DONE <id> asked=<a> answered=<b> gone=<g>`. */
    donePushed(line) {
        const words = line.split(" ");
        const ask = this.open.get(words[1]);
        if (!ask)
            return;
        this.open.delete(words[1]);
        const fields = parseFields(words.slice(2));
        ask.result.asked = Number(fields.asked ?? ask.result.asked);
        ask.result.answered = Number(fields.answered ?? ask.result.answers.length);
        ask.result.gone = Number(fields.gone ?? 0);
        ask.resolve(ask.result);
    }
    /** The connection is gone: open questions fail (the server closed them with it). */
    lost(error) {
        for (const ask of this.open.values())
            ask.reject(error);
        this.open.clear();
    }
    respond(subject, handler, group) {
        const responder = {
            subject,
            group,
            handler,
            stop: async () => {
                const index = this.responders.indexOf(responder);
                if (index < 0)
                    return;
                this.responders.splice(index, 1);
                if (!this.responders.some((r) => r.subject === subject))
                    await this.owner.release([subject]);
            },
        };
        this.responders.push(responder);
        this.owner.command(responderLine(responder), "int").catch((error) => this.owner.warn(`fanout: ${error.message}`));
        return responder;
    }
    /** `ASK <subject> <id> <payload>`: the first responder whose subject covers it answers. */
    questionPushed(line, frame) {
        const [, subject, id] = line.split(" ", 3);
        const question = new Question(subject, id, frame.slice(5 + subject.length + id.length + 1));
        const responder = this.responders.find((r) => matches(r.subject, question.subject));
        if (!responder)
            return;
        void (async () => {
            try {
                const answer = toBytes(await responder.handler(question));
                if (answer.includes(10))
                    throw new TypeError("an answer must fit on one line");
                // `+OK 0` (a late answer) is normal, and a lost connection says nothing the asker would not learn.
                this.owner.sendQuietly(concat(encode(`ANSWER ${question.id} `), answer, NEWLINE));
            }
            catch (error) {
                this.owner.warn(`fanout: answering ${question.subject}: ${error.message}`);
            }
        })();
    }
}

return { responderLine, Questions };
})();
const module_resume_js = (() => {
// What the client knows of each concrete subject it receives, so that a reconnect repeats nothing and loses
// nothing the server still has. Pure bookkeeping, no I/O: the client reports greetings, RESUME/LAST replies,
// RESET pushes and messages, and sends what restorePlan says. It follows the Swift client's ResumeState.
//
// Seqs are only compared within one epoch. A server without epochs (before 1.1) gets no duplicate dropping,
// and any seq other than the next one is a gap.
//
// Bound: one entry per concrete subject subscribed to or delivered under a live subscription; forget() drops
// the entries no subscription covers any more.
const { isWildcard, matches } = module_protocol_js;
/** The lines the `fanout` CLI prints for the same report. */
function reportLines(report) {
    const out = [];
    const { subject, recovered, missed } = report;
    if (recovered)
        out.push(`recovered ${recovered} message${recovered === 1 ? "" : "s"} on ${subject}`);
    const why = report.reason === "resume" ? "history too short" : "reset by the server";
    if (missed === null)
        out.push(`missed messages on ${subject} (unknown: the server's numbering restarted)`);
    else if (missed)
        out.push(`missed ${missed} message${missed === 1 ? "" : "s"} on ${subject} (${why})`);
    return out;
}
class ResumeState {
    constructor() {
        this.entries = new Map();
        this.epoch = null;
        this.connection = 0;
    }
    get canResume() {
        return this.epoch !== null;
    }
    connected(epoch) {
        this.connection++;
        this.epoch = epoch;
    }
    /** After a reconnect: the RESUME lines to send first (one per concrete subject), then the patterns to SUB
     * (only the wildcards when the server resumes, everything when it does not). */
    restorePlan(patterns) {
        if (!this.canResume)
            return { resumes: [], patterns };
        const wildcards = patterns.filter(isWildcard);
        const subjects = new Set(patterns.filter((p) => !isWildcard(p)));
        for (const subject of this.entries.keys())
            if (covers(wildcards, subject))
                subjects.add(subject);
        const resumes = [...subjects].sort().map((subject) => ({ subject, position: this.position(subject) }));
        return { resumes, patterns: wildcards };
    }
    position(subject) {
        const entry = this.entries.get(subject);
        return entry && entry.epoch !== null ? { epoch: entry.epoch, seq: entry.last } : null;
    }
    /** What to do with a message, and the seq that was expected. */
    observe(subject, seq) {
        const entry = this.entries.get(subject);
        if (!entry) {
            // Joining mid-stream: the first seq is taken as given, in the greeting's epoch.
            this.entries.set(subject, { epoch: this.epoch, last: seq, seenOn: this.connection, subscribedOn: null });
            return ["deliver", seq];
        }
        if (entry.seenOn !== this.connection) {
            // Not resumed on this connection (its RESUME failed, or the server has no epochs).
            entry.seenOn = this.connection;
            if (this.epoch !== null && entry.epoch !== this.epoch) {
                this.entries.set(subject, { epoch: this.epoch, last: seq, seenOn: this.connection, subscribedOn: null });
                return ["restarted", seq];
            }
            entry.epoch = this.epoch;
        }
        const last = entry.last;
        if (seq <= last && entry.epoch !== null)
            return ["duplicate", last + 1];
        entry.last = seq;
        return [seq === last + 1 ? "deliver" : "gap", last + 1];
    }
    /** Takes in a RESUME or LAST reply; `asked` is the position a RESUME gave (null for a RESUME without one,
     * and for LAST). Returns the report for a RESUME that gave a position. */
    answered(subject, asked, reply) {
        const start = Math.max(reply.seq - reply.replayed, 0);
        const fresh = { epoch: reply.epoch, last: start, seenOn: this.connection, subscribedOn: this.connection };
        let known = this.entries.get(subject);
        if (known && !(known.epoch === reply.epoch && known.last <= reply.seq))
            known = undefined;
        const entry = { ...fresh, last: known ? Math.max(known.last, start) : start };
        if (asked === null) {
            this.entries.set(subject, entry);
            return null;
        }
        if (reply.missed === null || reply.epoch !== asked.epoch || !known) {
            this.entries.set(subject, fresh);
            return { subject, recovered: reply.replayed, missed: null, reason: "resume" };
        }
        this.entries.set(subject, entry);
        return { subject, recovered: reply.replayed, missed: reply.missed, reason: "resume" };
    }
    /** A RESET push: the subject's next message is `seq + 1` in `epoch`. */
    reset(push) {
        const subscribedOn = this.entries.get(push.subject)?.subscribedOn ?? null;
        this.entries.set(push.subject, { epoch: push.epoch, last: push.seq, seenOn: this.connection, subscribedOn });
        return { subject: push.subject, recovered: 0, missed: push.missed, reason: "reset" };
    }
    /** Subjects subscribed on this connection only because a restore resumed them under a wildcard now
     * dropped: they are unsubscribed along with it. */
    implicitSubscriptions(dropped, remaining) {
        const out = [];
        for (const [subject, entry] of this.entries) {
            if (entry.subscribedOn === this.connection && !remaining.includes(subject) && !dropped.includes(subject)
                && covers(dropped, subject) && !covers(remaining, subject))
                out.push(subject);
        }
        return out.sort();
    }
    forget(remaining) {
        for (const subject of [...this.entries.keys()])
            if (!covers(remaining, subject))
                this.entries.delete(subject);
    }
}
function covers(patterns, subject) {
    return patterns.some((pattern) => matches(pattern, subject));
}

return { reportLines, ResumeState };
})();
const module_subscription_js = (() => {
// A subscription: the patterns it holds, and the bounded queue between the connection and `for await`.
const { Closed, SlowConsumer } = module_errors_js;
/**
 * Iterate with `for await (const msg of sub)`; leaving the loop (break, return, throw) unsubscribes.
 * The queue holds at most `maxPending` messages plus what one read brings: once it is full, a socket stops
 * being read until the consumer has taken half, so a slow consumer slows the server's sending instead of
 * growing memory here. Replies queued behind those messages wait too: do not await a command on the same
 * client from inside a full subscription's loop. A browser WebSocket cannot be paused: there a subscription
 * that falls twice `maxPending` behind ends with SlowConsumer.
 */
class Subscription {
    constructor(owner, patterns, group, maxPending, canPause, confirmed) {
        this.owner = owner;
        this.patterns = patterns;
        this.group = group;
        this.maxPending = maxPending;
        this.canPause = canPause;
        this.full = false;
        this.queue = [];
        this.head = 0;
        this.waiter = null;
        this.ended = null;
        this.ready = confirmed.catch((error) => {
            this.end(error);
            throw error;
        });
        // A failure is also seen through the iteration: no unhandled rejection for a caller that only iterates.
        this.ready.catch(() => undefined);
    }
    get pending() {
        return this.queue.length - this.head;
    }
    /** @internal */
    push(message) {
        if (this.ended)
            return;
        this.queue.push(message);
        this.wake();
        if (this.full) {
            if (!this.canPause() && this.pending >= 2 * this.maxPending) {
                this.end(new SlowConsumer("slow-consumer", `subscription fell ${this.pending} messages behind`));
                void this.owner.unsubscribe(this);
            }
        }
        else if (this.pending >= this.maxPending) {
            this.full = true;
            this.owner.subscriptionFull(this);
        }
    }
    /** @internal No more messages: closed, unsubscribed, or the connection lost for good. */
    end(error) {
        this.ended ?? (this.ended = error);
        this.wake();
    }
    async next() {
        while (this.pending === 0) {
            if (this.ended) {
                if (this.ended instanceof Closed || this.ended === unsubscribed)
                    return { value: undefined, done: true };
                throw this.ended;
            }
            await new Promise((resolve) => (this.waiter = resolve));
        }
        const message = this.queue[this.head++];
        if (this.head > 1024 && this.head * 2 > this.queue.length) {
            this.queue = this.queue.slice(this.head);
            this.head = 0;
        }
        if (this.full && this.pending <= this.maxPending / 2) {
            this.full = false;
            this.owner.subscriptionDrained(this);
        }
        return { value: message, done: false };
    }
    /** The next message, or an error after `timeoutMs`. */
    async nextMessage(timeoutMs = 5000) {
        let timer;
        const timeout = new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs} ms`)), timeoutMs);
        });
        try {
            const result = await Promise.race([this.next(), timeout]);
            if (result.done)
                throw new Closed("subscription ended");
            return result.value;
        }
        finally {
            clearTimeout(timer);
        }
    }
    async return() {
        await this.unsubscribe();
        return { value: undefined, done: true };
    }
    [Symbol.asyncIterator]() {
        return this;
    }
    /** Drops this subscription's patterns (those no other subscription holds); iteration ends once the queued
     * messages are taken. */
    async unsubscribe() {
        this.end(unsubscribed);
        await this.owner.unsubscribe(this);
    }
    wake() {
        const waiter = this.waiter;
        this.waiter = null;
        waiter?.();
    }
}
const unsubscribed = new Closed("unsubscribed");

return { Subscription };
})();
const module_client_js = (() => {
// The client: one connection at a time to a Fanout server, over any transport, reconnected with backoff, whose
// subscriptions resume after a reconnect with no duplicate and with exact counts of what was missed.
const { CannotConnect, Closed, closingCodes, ConnectionLost, ProtocolViolation, ServerError, serverError, } = module_errors_js;
const { Message } = module_messages_js;
const { Questions, responderLine } = module_questions_js;
const { concat, decode, defaultMaxLine, encode, isWildcard, matches, NEWLINE, parseFields, parseGreeting, parseReset, parseResumeReply, publishCommand, publishLine, toBytes, } = module_protocol_js;
const { reportLines, ResumeState } = module_resume_js;
const { Subscription } = module_subscription_js;
const routesKept = 4096;
const silentLogger = { info: () => undefined, warn: (line) => console.warn(line) };
class Client {
    /** Use `connect()`. */
    constructor(address, open, options) {
        this.address = address;
        this.open = open;
        this.options = options;
        this.greeting = null;
        this.transport = null;
        this.greeted = null;
        /** One entry per command sent and not yet answered, in sending order. Bound: the commands the application
         * has in flight. */
        this.pending = [];
        this.pendingHead = 0;
        this.ready = false;
        this.readyWaiters = [];
        this.closed = false;
        this.reconnecting = false;
        this.reconnectTimer = null;
        this.resume = new ResumeState();
        this.subscriptions = [];
        /** Which subscriptions each subject reaches; cleared whenever a subscription comes or goes, and when it holds
         * routesKept subjects (a wildcard can reach any number). */
        this.routes = new Map();
        this.fullCount = 0;
        /** The transport whose last write went over its high-water mark, until it drains. */
        this.blocked = null;
        /** LAST replays being gathered. */
        this.collectors = new Map();
        this.questions = new Questions({
            command: (line, read) => this.command(line, read),
            sendQuietly: (line) => {
                if (this.transport)
                    this.send(line, "int", true).catch(() => undefined);
            },
            release: async (patterns) => {
                const held = this.plainPatterns();
                const dropped = patterns.filter((p) => !held.includes(p));
                if (dropped.length && this.ready)
                    await this.send(`UNSUB ${dropped.join(" ")}`, "int");
            },
            warn: (line) => this.logger.warn(line),
        });
        this.timeout = options.timeout ?? 5000;
        this.maxLine = options.maxLine ?? defaultMaxLine;
        this.maxPending = options.maxPending ?? 1024;
        this.logger = options.logger ?? silentLogger;
        const reconnect = options.reconnect ?? true;
        this.backoff = reconnect === false ? null
            : { initial: 100, maximum: 5000, jitter: 0.5, ...(reconnect === true ? {} : reconnect) };
    }
    // Connecting
    /** @internal Connects, reads the greeting and authenticates; the connection becomes the client's. */
    async start() {
        const greeting = new Promise((resolve, reject) => (this.greeted = { resolve, reject, reader: "text" }));
        let transport;
        try {
            transport = await this.open({
                frame: (frame) => {
                    if (this.transport === transport)
                        this.onFrame(frame);
                },
                closed: (reason) => {
                    if (this.transport === transport)
                        this.onLost(reason);
                },
            }, this.timeout);
        }
        catch (error) {
            throw new CannotConnect(`cannot connect to ${this.address}: ${error.message}`);
        }
        this.transport = transport;
        // Frames that came before `open` resolved were dropped above; a transport hands none over before then.
        let timer;
        try {
            this.greeting = await Promise.race([greeting, new Promise((_, reject) => {
                    timer = setTimeout(() => reject(new ConnectionLost("no greeting")), this.timeout);
                })]);
        }
        catch (error) {
            transport.close();
            this.transport = null;
            throw error instanceof ServerError || error instanceof ConnectionLost
                ? new CannotConnect(`cannot connect to ${this.address}: ${error.message}`)
                : error;
        }
        finally {
            clearTimeout(timer);
        }
        this.resume.connected(this.greeting.epoch);
        if (this.options.token !== undefined)
            await this.send(`AUTH ${this.options.token}`, "text", true);
    }
    /** @internal */
    markReady() {
        this.ready = true;
        const waiters = this.readyWaiters;
        this.readyWaiters = [];
        for (const wake of waiters)
            wake();
    }
    onLost(reason) {
        this.transport = null;
        this.ready = false;
        this.greeted?.reject(new ConnectionLost(`connection lost: ${reason}`));
        this.greeted = null;
        const error = this.closed ? new Closed("client closed") : new ConnectionLost(`connection to ${this.address} lost before the reply (${reason}); the command is not sent again, `
            + "and may or may not have taken effect");
        const pending = this.pending.slice(this.pendingHead);
        this.pending = [];
        this.pendingHead = 0;
        for (const entry of pending)
            entry.reject(error);
        for (const collector of this.collectors.values())
            collector.reject(error);
        this.collectors.clear();
        this.questions.lost(error);
        if (this.closed || this.greeting === null || this.reconnecting)
            return;
        this.emit({ kind: "disconnected", detail: reason });
        if (this.backoff === null) {
            for (const subscription of this.subscriptions) {
                subscription.end(new ConnectionLost(`connection to ${this.address} lost: ${reason}`));
            }
            this.wakeWaiters();
        }
        else {
            void this.reconnect();
        }
    }
    wakeWaiters() {
        const waiters = this.readyWaiters;
        this.readyWaiters = [];
        for (const wake of waiters)
            wake();
    }
    async reconnect() {
        const backoff = this.backoff;
        this.reconnecting = true;
        try {
            for (let attempt = 1; !this.closed; attempt++) {
                const base = Math.min(backoff.initial * 2 ** Math.min(attempt - 1, 30), backoff.maximum);
                const delay = base * (1 - backoff.jitter + 2 * backoff.jitter * Math.random());
                this.emit({ kind: "reconnecting", detail: `attempt ${attempt} in ${Math.round(delay)} ms` });
                await new Promise((resolve) => (this.reconnectTimer = setTimeout(resolve, delay)));
                if (this.closed)
                    return;
                try {
                    await this.start();
                    await this.restore();
                }
                catch (error) {
                    this.transport?.close();
                    this.transport = null;
                    this.logger.info(`fanout: reconnect attempt ${attempt} failed: ${error.message}`);
                    continue;
                }
                this.emit({ kind: "connected", detail: `reconnected to ${this.address}` });
                return;
            }
        }
        finally {
            this.reconnecting = false;
        }
    }
    /** Resubscribes after a reconnect: each concrete subject with RESUME from its last delivered seq (nothing
     * repeated, what is gone counted), then the wildcards, the groups and the responders. */
    async restore() {
        const plan = this.resume.restorePlan(this.plainPatterns());
        const replies = [];
        for (const { subject, position } of plan.resumes) {
            replies.push(this.send(resumeLine(subject, position), this.resumeReader(subject, position, true), true));
        }
        if (plan.patterns.length)
            replies.push(this.send(`SUB ${plan.patterns.join(" ")}`, "int", true));
        for (const [group, patterns] of this.groupPatterns()) {
            replies.push(this.send(`QSUB ${group} ${patterns.join(" ")}`, "int", true));
        }
        for (const responder of this.questions.responders)
            replies.push(this.send(responderLine(responder), "int", true));
        this.markReady();
        const results = await Promise.allSettled(replies);
        for (const result of results) {
            if (result.status === "rejected")
                this.emit({ kind: "resubscribe-failed", detail: String(result.reason) });
        }
        if (this.fullCount > 0)
            this.transport?.pause();
    }
    // Sending
    /** Writes one command now; the promise settles with its reply. */
    send(line, reader, internal = false, binary = false) {
        if (this.closed)
            return Promise.reject(new Closed("client closed"));
        const transport = this.transport;
        if (!transport || (!internal && !this.ready)) {
            return Promise.reject(new ConnectionLost(`not connected to ${this.address}`));
        }
        return new Promise((resolve, reject) => {
            this.pending.push({ resolve, reject, reader });
            transport.write(typeof line === "string" ? encode(line + "\n") : line, binary);
        });
    }
    /** Waits, up to the timeout, for a connection that is restored and ready for commands. */
    async connected() {
        if (this.closed)
            throw new Closed("client closed");
        if (this.ready)
            return;
        if (!this.transport && !this.reconnecting)
            throw new ConnectionLost(`not connected to ${this.address}`);
        let timer;
        await new Promise((resolve, reject) => {
            this.readyWaiters.push(resolve);
            timer = setTimeout(() => reject(new ConnectionLost(`not connected to ${this.address}`)), this.timeout);
        }).finally(() => clearTimeout(timer));
        if (!this.ready)
            throw this.closed ? new Closed("client closed") : new ConnectionLost(`not connected to ${this.address}`);
    }
    async command(line, reader = "text") {
        await this.connected();
        return this.send(line, reader);
    }
    // Reading
    onFrame(frame) {
        if (!(frame instanceof Uint8Array)) {
            const words = decode(frame.header).split(" ");
            this.deliver(words[1], Number(words[2]), frame.payload);
            return;
        }
        const first = frame[0];
        if (first === 77 /* M */ && frame[1] === 83 && frame[2] === 71 && frame[3] === 32) {
            const subjectEnd = frame.indexOf(32, 4);
            // Subjects are printable ASCII: no UTF-8 decoding needed, and seqs are plain digits.
            const subject = String.fromCharCode(...frame.subarray(4, subjectEnd));
            let seq = 0;
            let index = subjectEnd + 1;
            for (; index < frame.length && frame[index] !== 32; index++)
                seq = seq * 10 + frame[index] - 48;
            this.deliver(subject, seq, frame.slice(index + 1));
            return;
        }
        const line = decode(frame);
        if (first === 43 /* + */) {
            if (this.greeted) {
                const greeted = this.greeted;
                this.greeted = null;
                try {
                    greeted.resolve(parseGreeting(line));
                }
                catch (error) {
                    greeted.reject(new ProtocolViolation(error.message));
                    this.transport?.close();
                }
                return;
            }
            this.reply(line.startsWith("+OK ") ? line.slice(4) : line.slice(1), null);
        }
        else if (line.startsWith("-ERR ")) {
            this.error(line.slice(5));
        }
        else if (line.startsWith("ASK ")) {
            this.questions.questionPushed(line, frame);
        }
        else if (line.startsWith("ANSWER ")) {
            this.questions.answerPushed(line, frame);
        }
        else if (line.startsWith("DONE ")) {
            this.questions.donePushed(line);
        }
        else if (line.startsWith("RESET ")) {
            this.report(this.resume.reset(parseReset(line)));
        }
    }
    reply(text, error) {
        if (this.pendingHead >= this.pending.length) {
            this.logger.warn(`fanout: reply with no command waiting: ${text.slice(0, 80)}`);
            return;
        }
        const entry = this.pending[this.pendingHead];
        this.pending[this.pendingHead++] = undefined;
        if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pending.length) {
            this.pending = this.pending.slice(this.pendingHead);
            this.pendingHead = 0;
        }
        if (error) {
            entry.reject(error);
        }
        else if (entry.reader === "int") {
            entry.resolve(parseInt(text, 10));
        }
        else if (entry.reader === "text") {
            entry.resolve(text);
        }
        else {
            try {
                entry.resolve(entry.reader(text));
            }
            catch (failure) {
                entry.reject(new ProtocolViolation(`bad reply ${text.slice(0, 80)}: ${failure.message}`));
            }
        }
    }
    error(text) {
        const space = text.indexOf(" ");
        const code = space < 0 ? text : text.slice(0, space);
        const words = space < 0 ? "" : text.slice(space + 1);
        const error = serverError(code, words);
        if (this.greeted) {
            this.greeted.reject(error);
            this.greeted = null;
        }
        else if (closingCodes.has(code)) {
            this.emit({ kind: "server-closing", detail: error.message });
        }
        else if (code === "denied" && words.startsWith("revoked")) {
            this.emit({ kind: "revoked", detail: error.message });
        }
        else {
            this.reply("", error);
        }
    }
    deliver(subject, seq, payload) {
        const collector = this.collectors.size ? this.collectors.get(subject) : undefined;
        let routes = this.routes.get(subject);
        if (!routes) {
            routes = this.subscriptions.filter((s) => s.patterns.some((p) => matches(p, subject)));
            if (this.routes.size >= routesKept)
                this.routes.clear();
            this.routes.set(subject, routes);
        }
        if (!collector && routes.length === 0)
            return;
        const message = new Message(subject, seq, payload);
        if (collector) {
            collector.messages.push(message);
            if (--collector.due <= 0) {
                this.collectors.delete(subject);
                collector.resolve(collector.messages);
            }
        }
        if (collector || routes.some((s) => s.group === null)) {
            const [verdict, expected] = this.resume.observe(subject, seq);
            if (verdict === "duplicate")
                return;
            if (verdict === "gap")
                this.emit({ kind: "gap", detail: `gap on ${subject}: expected seq ${expected}, got ${seq}` });
            else if (verdict === "restarted")
                this.report({ subject, recovered: 0, missed: null, reason: "resume" });
        }
        for (const subscription of routes)
            subscription.push(message);
    }
    // Subscriptions
    /**
     * Subscribes to subjects and patterns (`news.*`, `alerts.>`), or with `{ group }` as a member of that queue
     * group (1.2). Returns at once; `sub.ready` settles when the server has confirmed. Concrete subjects are
     * subscribed with RESUME, from the position `last` left if any.
     */
    subscribe(...args) {
        const patterns = [];
        let options = {};
        for (const arg of args) {
            if (typeof arg === "string")
                patterns.push(arg);
            else if (Array.isArray(arg))
                patterns.push(...arg);
            else
                options = arg;
        }
        if (patterns.length === 0)
            throw new TypeError("subscribe needs at least one subject");
        const group = options.group ?? null;
        let confirm;
        const confirmed = new Promise((resolve) => (confirm = resolve));
        const subscription = new Subscription(this, patterns, group, this.maxPending, () => this.transport?.canPause ?? true, confirmed);
        this.subscriptions.push(subscription);
        this.routes.clear();
        confirm(this.confirmSubscription(subscription));
        return subscription;
    }
    async confirmSubscription(subscription) {
        const { patterns, group } = subscription;
        try {
            await this.connected();
            const replies = [];
            if (group !== null) {
                replies.push(this.send(`QSUB ${group} ${patterns.join(" ")}`, "int"));
            }
            else {
                const concrete = this.resume.canResume ? patterns.filter((p) => !isWildcard(p)) : [];
                for (const subject of concrete) {
                    const position = this.resume.position(subject);
                    replies.push(this.send(resumeLine(subject, position), this.resumeReader(subject, position, false)));
                }
                const rest = patterns.filter((p) => !concrete.includes(p));
                if (rest.length)
                    replies.push(this.send(`SUB ${rest.join(" ")}`, "int"));
            }
            const results = await Promise.allSettled(replies);
            const failure = results.find((r) => r.status === "rejected");
            if (failure)
                throw failure.reason;
        }
        catch (error) {
            subscription.end(error);
            await this.unsubscribe(subscription).catch(() => undefined);
            throw error;
        }
    }
    resumeReader(subject, position, report) {
        return (text) => {
            const reply = parseResumeReply(text);
            const result = this.resume.answered(subject, position, reply);
            if (result && (report || result.missed !== 0 || result.recovered))
                this.report(result);
            return reply;
        };
    }
    /** @internal */
    async unsubscribe(subscription) {
        const index = this.subscriptions.indexOf(subscription);
        if (index < 0)
            return;
        this.subscriptions.splice(index, 1);
        this.routes.clear();
        subscription.end(new Closed("unsubscribed"));
        if (subscription.full) {
            subscription.full = false;
            this.subscriptionDrained();
        }
        const remaining = [...this.plainPatterns(), ...[...this.groupPatterns().values()].flat(),
            ...this.questions.responders.map((r) => r.subject)];
        const dropped = subscription.patterns.filter((p) => !remaining.includes(p));
        const implicit = this.resume.implicitSubscriptions(dropped, remaining);
        this.resume.forget(this.plainPatterns());
        if ((dropped.length || implicit.length) && this.ready) {
            await this.send(`UNSUB ${[...dropped, ...implicit].join(" ")}`, "int");
        }
    }
    plainPatterns() {
        const seen = new Set();
        for (const s of this.subscriptions)
            if (s.group === null)
                for (const p of s.patterns)
                    seen.add(p);
        return [...seen];
    }
    groupPatterns() {
        const groups = new Map();
        for (const s of this.subscriptions) {
            if (s.group === null)
                continue;
            const set = groups.get(s.group) ?? new Set();
            for (const p of s.patterns)
                set.add(p);
            groups.set(s.group, set);
        }
        return new Map([...groups].map(([g, set]) => [g, [...set]]));
    }
    /** @internal */
    subscriptionFull() {
        this.fullCount++;
        this.transport?.pause();
    }
    /** @internal */
    subscriptionDrained() {
        this.fullCount--;
        if (this.fullCount === 0)
            this.transport?.resume();
    }
    // Publishing and history
    /**
     * Publishes and resolves to the receivers count. Concurrent calls are pipelined: each is written at once and
     * replies are matched in order. A payload a line cannot carry (LF, a CR at its end, over maxLine, or not
     * UTF-8 on a WebSocket) goes as BPUB (1.2).
     */
    publish(subject, payload) {
        const transport = this.transport;
        if (!this.ready || !transport)
            return this.connected().then(() => this.publish(subject, payload));
        // Once the transport is over its high-water mark, later publishes wait for it to drain before they
        // write, so that a burst that is never awaited cannot grow the output without bound.
        if (this.blocked === transport)
            return transport.drained().then(() => this.publish(subject, payload));
        let command;
        let binary = false;
        const line = typeof payload === "string" ? publishLine(subject, payload, this.maxLine) : null;
        if (line !== null) {
            command = line;
        }
        else {
            const bytes = toBytes(payload);
            const encoded = publishCommand(subject, bytes, this.maxLine);
            binary = encoded.binary || (transport.textOnly && typeof payload !== "string" && !isUtf8(bytes));
            command = binary && !encoded.binary
                ? concat(encode(`BPUB ${subject} ${bytes.length}\n`), bytes, NEWLINE) : encoded.bytes;
        }
        const reply = new Promise((resolve, reject) => this.pending.push({ resolve, reject, reader: "int" }));
        if (!transport.write(command, binary)) {
            this.blocked = transport;
            return transport.drained().then(() => {
                if (this.blocked === transport)
                    this.blocked = null;
                return reply;
            });
        }
        return reply;
    }
    /** The newest `count` retained messages of a concrete subject, oldest first (1.1). A later `subscribe` of
     * the subject goes on from the newest of them, with nothing repeated. */
    async last(subject, count = 1) {
        await this.connected();
        let gathered;
        await this.send(`LAST ${subject} ${count}`, (text) => {
            const reply = parseResumeReply(text);
            this.resume.answered(subject, null, reply);
            gathered = reply.replayed === 0 ? Promise.resolve([]) : new Promise((resolve, reject) => {
                this.collectors.set(subject, { due: reply.replayed, messages: [], resolve, reject });
            });
            return reply;
        });
        const messages = await gathered;
        const wanted = this.plainPatterns().some((p) => matches(p, subject))
            || this.questions.responders.some((r) => matches(r.subject, subject));
        if (!wanted)
            await this.command(`UNSUB ${subject}`, "int");
        return messages;
    }
    // Questions (1.2)
    /** Puts a question to the receivers of `subject` and gathers their answers until every one answered or
     * vanished, `max` came, or `timeout` ms passed (the server closes it). */
    async ask(subject, payload, options = {}) {
        return this.questions.ask(subject, payload, options);
    }
    /** Answers the questions put to `subject` with `handler(question)`, which returns (or resolves to) a string
     * or bytes. Returns at once; the subscription is made in the background. */
    respond(subject, handler, options = {}) {
        return this.questions.respond(subject, handler, options.group ?? null);
    }
    // Server state and the end
    /** The server's INFO as an object; numbers as numbers. */
    async info() {
        const text = await this.command("INFO");
        const out = {};
        for (const [key, value] of Object.entries(parseFields(text.split(" ")))) {
            out[key] = /^\d+$/.test(value) ? Number(value) : value;
        }
        return out;
    }
    /** Sends one command line (CHANNELS, CLIENTS, ...) and resolves to its reply after `+OK `, or rejects with
     * the server's error. For verbs this client has no method for; not for SUB, PUB and the like, whose
     * state the client keeps itself. */
    async request(line) {
        return this.command(line);
    }
    async ping(text = "") {
        return this.command(text ? `PING ${text}` : "PING");
    }
    /** Closes the connection; subscriptions end, and commands still waiting fail with Closed. */
    async close() {
        if (this.closed)
            return;
        this.closed = true;
        if (this.reconnectTimer)
            clearTimeout(this.reconnectTimer);
        const transport = this.transport;
        transport?.close();
        this.transport = null;
        for (const subscription of this.subscriptions)
            subscription.end(new Closed("client closed"));
        this.wakeWaiters();
    }
    // Reports
    report(report) {
        const lines = reportLines(report);
        for (const line of lines) {
            if (line.startsWith("missed"))
                this.logger.warn(`fanout: ${line}`);
            else
                this.logger.info(`fanout: ${line}`);
        }
        this.emit({ kind: report.reason === "reset" ? "reset" : "resumed", detail: lines.join("; "), report });
    }
    emit(event) {
        if (["disconnected", "gap", "server-closing", "revoked", "resubscribe-failed"].includes(event.kind)) {
            this.logger.warn(`fanout: ${event.kind}: ${event.detail}`);
        }
        try {
            this.options.onEvent?.(event);
        }
        catch (error) {
            this.logger.warn(`fanout: onEvent threw: ${error.message}`);
        }
    }
}
function resumeLine(subject, position) {
    return position ? `RESUME ${subject} ${position.epoch} ${position.seq}` : `RESUME ${subject}`;
}
const strictDecoder = new TextDecoder("utf-8", { fatal: true });
function isUtf8(bytes) {
    try {
        strictDecoder.decode(bytes);
        return true;
    }
    catch {
        return false;
    }
}

return { Client };
})();
const module_websocket_transport_js = (() => {
// The WebSocket at fanoutd's `/ws`: one line per text frame each way; BPUB and BMSG as binary frames (1.2).
const { bmsgLength, decode, encode, startsWith } = module_protocol_js;
const BMSG = encode("BMSG ");
/** Output queued in the browser past which `write` asks the caller to wait. */
const highWater = 1 << 20;
function webSocketOpener(url) {
    return (events, timeoutMs) => new Promise((resolve, reject) => {
        const WebSocketClass = globalThis.WebSocket;
        if (!WebSocketClass) {
            reject(new Error("this runtime has no WebSocket (Node 20 needs --experimental-websocket)"));
            return;
        }
        const socket = new WebSocketClass(url);
        socket.binaryType = "arraybuffer";
        let open = false;
        let closed = false;
        const timer = setTimeout(() => {
            reject(new Error("timed out"));
            socket.close();
        }, timeoutMs);
        function finish(reason) {
            if (closed || !open)
                return;
            closed = true;
            events.closed(reason);
        }
        socket.onopen = () => {
            clearTimeout(timer);
            open = true;
            resolve(transport);
        };
        socket.onerror = () => {
            if (!open) {
                clearTimeout(timer);
                reject(new Error(`WebSocket to ${url} failed`));
            }
        };
        socket.onclose = (event) => {
            clearTimeout(timer);
            if (!open)
                reject(new Error(`WebSocket to ${url} closed (${event.code})`));
            finish(`closed by the server (${event.code}${event.reason ? ": " + event.reason : ""})`);
        };
        socket.onmessage = (event) => {
            if (closed)
                return;
            let frame;
            if (typeof event.data === "string") {
                const text = event.data.endsWith("\n") ? event.data.slice(0, -1) : event.data;
                frame = encode(text);
            }
            else {
                const bytes = new Uint8Array(event.data);
                const newline = bytes.indexOf(10);
                const header = bytes.slice(0, newline < 0 ? bytes.length : newline);
                if (!startsWith(header, BMSG)) {
                    frame = header;
                }
                else {
                    const length = bmsgLength(header);
                    frame = { header, payload: bytes.slice(newline + 1, newline + 1 + length) };
                }
            }
            events.frame(frame);
        };
        const transport = {
            // A browser gives no way to stop reading a WebSocket.
            canPause: false,
            textOnly: true,
            write(command, binary) {
                if (typeof command === "string")
                    socket.send(command.slice(0, -1));
                else if (binary)
                    socket.send(command);
                else
                    socket.send(decode(command.subarray(0, command.length - 1)));
                return socket.bufferedAmount < highWater;
            },
            async drained() {
                // WebSocket has no drain event: look again every few milliseconds.
                while (!closed && socket.bufferedAmount >= highWater / 2) {
                    await new Promise((done) => setTimeout(done, 5));
                }
            },
            pause: () => undefined,
            resume: () => undefined,
            close() {
                finish("closed by the client");
                socket.close(1000);
            },
        };
    });
}

return { webSocketOpener };
})();
const module_exports_js = (() => {
// What both entry points export besides `connect`.
const { Client } = module_client_js;
const { AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError, IdleTimeout, Limit, ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax, TooLong, Unavailable, UnknownCommand, } = module_errors_js;
const { Message, Question } = module_messages_js;
const { Subscription } = module_subscription_js;

return { Client, AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError, IdleTimeout, Limit, ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax, TooLong, Unavailable, UnknownCommand, Message, Question, Subscription };
})();
const module_browser_js = (() => {
// The browser entry point: the WebSocket at fanoutd's `/ws` is the only transport.
const { Client } = module_client_js;
const { webSocketOpener } = module_websocket_transport_js;

/** Connects to a Fanout server's WebSocket: `"ws://host:7412/ws"` (or `wss://`). */
async function connect(url, options = {}) {
    const client = new Client(url, webSocketOpener(url), options);
    try {
        await client.start();
    }
    catch (error) {
        await client.close();
        throw error;
    }
    client.markReady();
    return client;
}

return { ...module_exports_js, connect };
})();
globalThis.Fanout = module_browser_js;
})();
</script>
<script>
"use strict";
// The protocol is spoken by the Fanout client above (clients/js, its one-file browser build): reconnects,
// resumes concrete subjects with no duplicate, and reports what was missed; this script only draws.
const $ = (id) => document.getElementById(id);
const maxRows = 500;
let client = null, history = [], lastPublished = null, timer = null;
let token = sessionStorage.getItem("fanout-token") || "";
const subscriptions = new Map();

function setStatus(text, kind) { const s = $("status"); s.textContent = text; s.className = kind || ""; }
function row(list, html) { const li = document.createElement("li"); li.innerHTML = html; list.prepend(li); while (list.children.length > maxRows) list.lastChild.remove(); return li; }
function esc(text) { return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]); }
function now() { return new Date().toLocaleTimeString(); }
function failure(error) { return error.code ? `-ERR ${error.code} ${error.text}` : String(error.message || error); }

// What the client reports about the connection; resumes and RESET pushes (a subject's numbering restarted,
// or messages lost to it on several nodes) go into the messages list, where the gap would be.
function onEvent(event) {
  if (event.kind === "disconnected" || event.kind === "reconnecting") setStatus("disconnected, reconnecting…", "down");
  else if (event.kind === "connected") setStatus("connected", "up");
  else if (event.kind === "reset" || event.kind === "resumed") {
    const li = row($("messages"), `<span class="time">${now()}</span><span class="${event.kind === "reset" ? "error" : "note"}">${event.kind === "reset" ? "RESET" : "resumed"} ${esc(event.detail || event.report.subject)}</span>`);
    li.dataset.event = event.kind; li.dataset.subject = event.report.subject;
  } else if (event.kind === "revoked" || event.kind === "resubscribe-failed") $("sub-note").textContent = event.detail;
}

async function start() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
  try {
    client = await Fanout.connect(url, { token: token || undefined, onEvent, reconnect: { initial: 500, maximum: 5000 }, logger: { info() {}, warn() {} } });
  } catch (error) {
    if (error instanceof Fanout.Denied) { token = ""; sessionStorage.removeItem("fanout-token"); $("auth-error").textContent = failure(error); $("auth").className = "shown"; return; }
    setStatus("disconnected, reconnecting…", "down"); setTimeout(start, 1000); return;
  }
  const greeting = client.greeting;
  $("server").textContent = `fanout/1 ${greeting.serverName} auth=${greeting.authRequired ? "required" : "none"}${greeting.epoch ? " epoch=" + greeting.epoch : ""}`;
  if (greeting.authRequired && !token) { await client.close(); client = null; $("auth").className = "shown"; $("auth-token").focus(); return; }
  $("auth").className = ""; setStatus("connected", "up");
  for (const pattern of [...subscriptions.keys()]) follow(pattern);
  poll(); timer = setInterval(poll, 1000);
}

$("auth-form").onsubmit = (event) => { event.preventDefault(); token = $("auth-token").value.trim(); if (!token) return;
  sessionStorage.setItem("fanout-token", token); $("auth-error").textContent = ""; start(); };

let ticks = 0;
async function poll() {
  if (!client) return;
  try {
    info(await client.info());
    if (ticks % 2 === 0) channels(await client.request("CHANNELS").catch((e) => e));
    if (ticks % 5 === 0) clients(await client.request("CLIENTS").catch((e) => e));
  } catch (error) { /* offline: the next tick after the reconnect draws again */ }
  ticks++;
}

function info(f) {
  const published = Number(f.published);
  const shown = [["clients", "clients"], ["subjects", "subjects"], ["subscriptions", "subscriptions"], ["published", "published"],
    ["delivered", "delivered"], ["slow_consumers", "slow consumers"], ["history_messages", "retained"], ["uptime_s", "uptime (s)"]];
  $("counters").innerHTML = shown.map(([k, label]) => `<div class="counter"><b>${esc(Number(f[k] || 0).toLocaleString())}</b><span>${label}</span></div>`).join("");
  if (lastPublished !== null) { history.push(Math.max(0, published - lastPublished)); if (history.length > 300) history.shift(); draw(); }
  lastPublished = published;
}

function draw() {
  const canvas = $("chart"), ratio = window.devicePixelRatio || 1, width = canvas.clientWidth, height = canvas.clientHeight;
  canvas.width = width * ratio; canvas.height = height * ratio;
  const g = canvas.getContext("2d"); g.scale(ratio, ratio); g.clearRect(0, 0, width, height);
  const top = Math.max(10, ...history), step = width / 299;
  g.strokeStyle = "#27313c"; g.fillStyle = "#8593a3"; g.font = "11px system-ui"; g.lineWidth = 1;
  for (const part of [0.25, 0.5, 0.75, 1]) { const y = height - part * (height - 14); g.beginPath(); g.moveTo(0, y); g.lineTo(width, y); g.stroke(); g.fillText(Math.round(top * part).toLocaleString(), 4, y - 2); }
  g.beginPath(); g.strokeStyle = "#4fb3ff"; g.lineWidth = 2;
  history.forEach((value, i) => { const x = width - (history.length - 1 - i) * step, y = height - (value / top) * (height - 14); i ? g.lineTo(x, y) : g.moveTo(x, y); });
  g.stroke();
}

function channels(reply) {
  if (typeof reply !== "string") { $("channels-note").textContent = failure(reply); return; }
  const words = reply.split(" ").slice(1);
  $("channels").innerHTML = words.map((w) => { const i = w.lastIndexOf("="); return `<tr><td>${esc(w.slice(0, i))}</td><td>${esc(w.slice(i + 1))}</td></tr>`; }).join("");
  $("channels-note").textContent = words.length ? "" : "No subscribed subjects.";
}

function clients(reply) {
  if (typeof reply !== "string") { $("clients-note").textContent = failure(reply).includes("admin") ? "Listing clients needs an admin user." : failure(reply); $("clients").innerHTML = ""; return; }
  $("clients-note").textContent = "";
  $("clients").innerHTML = reply.split(" ").slice(1).map((entry) => { const f = {}; for (const p of entry.split(",")) { const i = p.indexOf("="); f[p.slice(0, i)] = p.slice(i + 1); }
    return `<tr><td>${esc(f.id)}</td><td>${esc(f.addr)}</td><td>${esc(f.transport || "")}</td><td>${esc(f.subs)}</td><td>${esc(f.pending)}</td><td>${esc(f.age_s)} s</td></tr>`; }).join("");
}

// One subscription per pattern; its messages are drawn as they come.
async function follow(pattern) {
  const sub = client.subscribe(pattern);
  subscriptions.set(pattern, sub);
  try { await sub.ready; } catch (error) { subscriptions.delete(pattern); throw error; }
  (async () => {
    try {
      for await (const m of sub) {
        const li = row($("messages"), `<span class="time">${now()}</span><span class="subject">${esc(m.subject)}</span> <span class="seq">#${esc(m.seq)}</span> ${esc(m.text)}`);
        li.dataset.subject = m.subject; li.dataset.payload = m.text;
      }
    } catch (error) { $("sub-note").textContent = failure(error); }
  })();
}

$("sub-form").onsubmit = async (event) => { event.preventDefault(); const pattern = $("sub-pattern").value.trim(); if (!pattern || !client) return;
  if (subscriptions.has(pattern)) return;
  try { await follow(pattern); $("sub-note").textContent = "Subscribed to " + [...subscriptions.keys()].join(", "); $("sub-note").className = "note"; }
  catch (error) { $("sub-note").textContent = failure(error); $("sub-note").className = "note error"; } };
$("sub-clear").onclick = async () => { const subs = [...subscriptions.values()]; subscriptions.clear(); for (const sub of subs) await sub.unsubscribe();
  $("messages").innerHTML = ""; $("sub-note").textContent = "Unsubscribed from everything."; };

$("pub-form").onsubmit = async (event) => { event.preventDefault(); const subject = $("pub-subject").value.trim(); if (!subject || !client) return;
  try { const receivers = await client.publish(subject, $("pub-payload").value); $("pub-result").textContent = `Delivered to ${receivers} subscriber(s) at ${now()}.`; $("pub-result").className = "note"; }
  catch (error) { $("pub-result").textContent = failure(error); $("pub-result").className = "note error"; } };

let source = null;
$("es-form").onsubmit = (event) => { event.preventDefault(); const subjects = $("es-subject").value.trim().split(/[\s,]+/).filter(Boolean); if (!subjects.length) return;
  if (source) source.close();
  $("es-log").innerHTML = "";
  const query = subjects.map((s) => "subject=" + encodeURIComponent(s)).join("&") + (token ? "&token=" + encodeURIComponent(token) : "");
  source = new EventSource("/events?" + query);
  source.onopen = () => { $("es-note").textContent = "Stream open (" + subjects.join(", ") + ")"; $("es-note").dataset.opens = String(Number($("es-note").dataset.opens || 0) + 1); };
  source.onerror = () => { $("es-note").textContent = "Stream interrupted, reconnecting…"; };
  source.onmessage = (e) => { const m = JSON.parse(e.data);
    const li = row($("es-log"), `<span class="time">${now()}</span><span class="subject">${esc(m.subject)}</span> <span class="seq">#${m.seq}</span> ${esc(m.payload)}`);
    li.dataset.subject = m.subject; li.dataset.seq = m.seq; li.dataset.payload = m.payload; };
  source.addEventListener("missed", (e) => row($("es-log"), `<span class="error">missed: ${esc(e.data)}</span>`));
  source.addEventListener("error", (e) => { if (e.data) row($("es-log"), `<span class="error">${esc(e.data)}</span>`); }); };

window.addEventListener("resize", draw);
start();
</script>
</body>
</html>
"""#
}
