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
/** The push `-ERR kicked <reason>` (1.3): an administrator closed this connection with KICK. Final: the client
 * does not reconnect, and its subscriptions and later commands end with this error. */
class Kicked extends ServerError {
    get reason() {
        return this.text;
    }
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
    kicked: Kicked,
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

return { FanoutError, ServerError, UnknownCommand, Syntax, BadSubject, TooLong, Limit, Denied, AuthRequired, Unavailable, SlowConsumer, ShuttingDown, IdleTimeout, Kicked, closingCodes, serverError, CannotConnect, ConnectionLost, Closed, ProtocolViolation };
})();
const module_keepalive_js = (() => {
// fanoutd drops a connection that holds no subscription after idle_unsubscribed_timeout (60 s by default)
// without input, with -ERR idle-timeout: a client that only publishes or asks, and is quiet for a while, did
// nothing wrong. While it holds no subscription the client sends a PING every `interval` ms, so the server hears
// from it at least that often; a subscribed connection is left to idle_timeout, which the operator chose.
/** Runs `tick` every `interval` ms from start() to stop(); it never keeps a Node process alive by itself. */
class KeepAlive {
    constructor(interval, tick) {
        this.interval = interval;
        this.tick = tick;
        this.timer = null;
    }
    start() {
        if (this.timer !== null || !(this.interval > 0))
            return;
        this.timer = setInterval(this.tick, this.interval);
        // Node's timers have unref(); a browser's are numbers, and a page does not wait for them anyway.
        this.timer.unref?.();
    }
    stop() {
        if (this.timer !== null)
            clearInterval(this.timer);
        this.timer = null;
    }
}
/** A third of fanoutd's default idle_unsubscribed_timeout, so that a PING comes well within it. */
const defaultKeepAlive = 20000;

return { KeepAlive, defaultKeepAlive };
})();
const module_protocol_js = (() => {
// The wire format, without I/O: subjects, command encoding, and parsing of server lines (PROTOCOL.md).
/** What the client assumes the server's max_line is when choosing between PUB and BPUB. */
const defaultMaxLine = 65536;
/** What a push line may hold beyond a payload of maxLine bytes, which the server pushes as MSG (PROTOCOL.md, Any
 * bytes): `MSG `, a subject of up to 255 bytes, a seq of up to 20 digits and two spaces are 281 bytes; the rest
 * is room for an ANSWER's id and responder. */
const pushHeaderRoom = 512;
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
        /** Bytes not framed yet, kept as they came while a BMSG payload is incomplete: joined once all of it is
         * there, so that a large payload arriving in many small reads costs one copy instead of one per read. */
        this.held = [];
        this.heldBytes = 0;
        this.header = null;
        this.due = 0;
    }
    feed(chunk) {
        if (this.header && this.heldBytes + chunk.length < this.due) {
            this.held.push(chunk.slice());
            this.heldBytes += chunk.length;
            return [];
        }
        const buffer = this.heldBytes ? concat(...this.held, chunk) : chunk;
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
        this.held = start < buffer.length ? [buffer.slice(start)] : [];
        this.heldBytes = buffer.length - start;
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

return { defaultMaxLine, pushHeaderRoom, encode, decode, toBytes, isWildcard, matches, fitsLine, concat, publishLine, publishCommand, NEWLINE, parseFields, parseGreeting, parseResumeReply, parseReset, Framer, startsWith, bmsgLength };
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
const module_subjects_js = (() => {
// Checks every word the client puts on a line before anything is sent (PROTOCOL.md, Subjects; Groups): a word
// taken from user input ("bad subject", "", "a\nPUB b") would otherwise become another subject, another word, or
// a second command, after which every reply would be matched to the wrong command.
const { BadSubject, Syntax } = module_errors_js;
const maxSubjectLength = 255;
const maxTokenLength = 64;
const dot = 46;
const star = 42;
const greater = 62;
/** Subjects and patterns found valid, so that a publish loop checks its subject once. Bound: `remembered`
 * entries of each kind, then forgotten all at once. */
const remembered = 4096;
const validConcrete = new Set();
const validPatterns = new Set();
function shown(word) {
    return JSON.stringify(word.length > 64 ? word.slice(0, 64) + "..." : word);
}
/** Why `word` is not a subject or pattern, or null; `wildcard` tells whether it has a `*` or `>` token. */
function problem(word) {
    if (typeof word !== "string")
        return { why: "is not a string", wildcard: false };
    if (word.length === 0)
        return { why: "is empty", wildcard: false };
    // Only ASCII passes the loop below, so the length in characters is the length in bytes.
    if (word.length > maxSubjectLength)
        return { why: `is over ${maxSubjectLength} bytes`, wildcard: false };
    let tokenStart = 0;
    let wildcard = false;
    for (let index = 0; index <= word.length; index++) {
        const atEnd = index === word.length;
        if (!atEnd) {
            const code = word.charCodeAt(index);
            if (code < 0x21 || code > 0x7e) {
                return { why: "holds a character other than printable ASCII (no spaces, no line breaks)", wildcard };
            }
            if (code !== dot)
                continue;
        }
        const length = index - tokenStart;
        if (length === 0)
            return { why: "has an empty token (a..b, .a and a. are not subjects)", wildcard };
        if (length === 1) {
            const code = word.charCodeAt(tokenStart);
            if (code === star)
                wildcard = true;
            if (code === greater) {
                if (!atEnd)
                    return { why: "has '>' before its last token", wildcard };
                wildcard = true;
            }
        }
        tokenStart = index + 1;
    }
    return { why: null, wildcard };
}
/** Throws BadSubject unless `subject` is a concrete subject (no wildcard), as PUB, BPUB, ASK, RESUME and LAST
 * take. */
function checkSubject(subject) {
    if (validConcrete.has(subject))
        return;
    const { why, wildcard } = problem(subject);
    if (why !== null)
        throw new BadSubject("bad-subject", `subject ${shown(subject)} ${why}`);
    if (wildcard) {
        throw new BadSubject("bad-subject", `subject ${shown(subject)}: wildcards are only allowed in subscriptions`);
    }
    if (validConcrete.size >= remembered)
        validConcrete.clear();
    validConcrete.add(subject);
}
/** Throws BadSubject unless `pattern` is a subject or a pattern with `*` tokens and a last `>`, as SUB, QSUB
 * and UNSUB take. */
function checkPattern(pattern) {
    if (validPatterns.has(pattern))
        return;
    const { why } = problem(pattern);
    if (why !== null)
        throw new BadSubject("bad-subject", `subject pattern ${shown(pattern)} ${why}`);
    if (validPatterns.size >= remembered)
        validPatterns.clear();
    validPatterns.add(pattern);
}
/** Throws Syntax unless `name` is a group name: 1 to 64 bytes of `[A-Za-z0-9_.-]`. */
function checkGroup(name) {
    if (typeof name !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
        const why = `is not 1 to ${maxTokenLength} of A-Z a-z 0-9 _ . -`;
        throw new Syntax("syntax", `group name ${shown(String(name))} ${why}`);
    }
}
/** Throws Syntax unless `value` is a whole number from `least` up (a count, a timeout in ms). */
function checkCount(what, value, least) {
    if (!Number.isSafeInteger(value) || value < least) {
        throw new Syntax("syntax", `${what} must be a whole number from ${least} up, not ${String(value)}`);
    }
}
/** Throws Syntax when `text` would end the command's line early: an LF, or a CR (which the server strips
 * before an LF, and which no word of a command holds). Used for the free text of PING, AUTH and `request`. */
function checkOneLine(what, text) {
    if (typeof text !== "string" || /[\r\n]/.test(text)) {
        throw new Syntax("syntax", `${what} ${shown(String(text))} must be one line (no CR, no LF)`);
    }
}
/** Throws Syntax unless `token` is one word of printable ASCII, as AUTH takes it. */
function checkWord(what, token) {
    if (typeof token !== "string" || !/^[!-~]+$/.test(token)) {
        throw new Syntax("syntax", `${what} must be one word of printable ASCII (no spaces, no line breaks)`);
    }
}

return { checkSubject, checkPattern, checkGroup, checkCount, checkOneLine, checkWord };
})();
const module_presence_js = (() => {
// Presence (1.3): the members of a subject as WHO lists them, and the joins and leaves the server publishes on
// `$presence.<subject>`, read into typed values; the commands WHO and KICK as lines, checked before they are sent.
const { BadSubject, Syntax } = module_errors_js;
const { decode } = module_protocol_js;
const { checkCount, checkPattern, checkSubject, checkWord } = module_subjects_js;
/** The prefix of the subjects that carry joins and leaves; a client may subscribe to them, never publish. */
const presencePrefix = "$presence.";
/** The longest subject that keeps presence: its `$presence.` subject must still be a subject (255 bytes). */
const longestSubject = 255 - presencePrefix.length;
/** The longest KICK reason the server takes, in bytes of UTF-8: the kicked client is sent it. */
const kickReasonMax = 256;
/** `key=value` fields separated by commas; null when a field has no `=`. */
function fields(word) {
    const out = new Map();
    for (const field of word.split(",")) {
        const equals = field.indexOf("=");
        if (equals < 0)
            return null;
        out.set(field.slice(0, equals), field.slice(equals + 1));
    }
    return out;
}
function member(named) {
    const client = named.get("id") ?? "";
    const user = named.get("user") ?? "";
    const since = named.get("since_s") ?? "";
    if (!client || !user || !/^\d+$/.test(since))
        throw new Error("a member needs id=, user= and since_s=<digits>");
    return { client, user: user === "-" ? null : user, sinceSeconds: Number(since), group: named.get("group") || null };
}
/** Reads one member word of WHO's reply or of a join or leave; fields this version does not know are ignored,
 * so that a later server may add some. Throws when id, user or since_s is missing. */
function parseMember(word) {
    const named = fields(word);
    if (named === null)
        throw new Error(`not a member: ${word.slice(0, 80)}`);
    return member(named);
}
/** WHO's reply after `+OK `: `<count> <member> ...`. */
function parseWho(text) {
    const words = text.split(" ").filter(Boolean);
    if (!/^\d+$/.test(words[0] ?? ""))
        throw new Error("WHO's reply starts with the count");
    return { count: Number(words[0]), members: words.slice(1).map(parseMember) };
}
/** Reads a message of `$presence.<subject>`: `join <member>` or `leave <member>,reason=<r>`; throws when it is
 * neither. */
function parseEvent(subject, seq, payload) {
    const text = typeof payload === "string" ? payload : decode(payload);
    const space = text.indexOf(" ");
    const kind = text.slice(0, space);
    const named = space < 0 || (kind !== "join" && kind !== "leave") ? null : fields(text.slice(space + 1));
    if (named === null)
        throw new Error(`not a join or leave: ${text.slice(0, 80)}`);
    const reason = kind === "leave" ? named.get("reason") || null : null;
    if (kind === "leave" && reason === null)
        throw new Error(`a leave without its reason: ${text.slice(0, 80)}`);
    const memberSubject = subject.startsWith(presencePrefix) ? subject.slice(presencePrefix.length) : subject;
    return { kind: kind, member: member(named), reason, subject: memberSubject, seq };
}
/** `$presence.<subject>` for a subject or pattern (`chat.>` watches every room); BadSubject for what cannot be
 * one, before anything is sent. */
function presenceSubject(subject) {
    checkPattern(subject);
    if (subject.startsWith(presencePrefix)) {
        throw new BadSubject("bad-subject", `${subject}: name the subject itself, not its $presence. subject`);
    }
    if (subject.length > longestSubject) {
        throw new BadSubject("bad-subject", `a subject that keeps presence is at most ${longestSubject} bytes`);
    }
    return presencePrefix + subject;
}
function whoLine(subject, limit) {
    checkSubject(subject);
    if (limit === undefined)
        return `WHO ${subject}`;
    checkCount("a WHO limit", limit, 0);
    return `WHO ${subject} ${limit}`;
}
/** `KICK <client> [<reason>]`: the client as CLIENTS or WHO shows it (`7`, `node1/7`), or `user=<user>` for all of
 * a user's connections; the reason printable, at most 256 bytes. */
function kickLine(target, reason) {
    const word = String(target);
    checkWord("a KICK client", word);
    if (reason === undefined || reason.trim() === "")
        return `KICK ${word}`;
    if (/[\x00-\x1f\x7f]/.test(reason) || new TextEncoder().encode(reason).length > kickReasonMax) {
        throw new Syntax("syntax", `a KICK reason is at most ${kickReasonMax} bytes, without control characters`);
    }
    return `KICK ${word} ${reason.trim()}`;
}
/**
 * The joins and leaves of a subject (or of every subject a pattern matches), as PresenceEvents: `for await (const
 * event of presence)`, or one at a time with `nextEvent(timeoutMs)`. A plain subscription of `$presence.<subject>`
 * underneath (`subscription`): a concrete subject resumes after a reconnect from the last seq seen, and what was
 * missed is reported as a "resumed" event with `missed`, or "reset": then read the member list again with `who`.
 * A message that is neither a join nor a leave is skipped and counted in `malformed`. Leaving the loop
 * unsubscribes.
 */
class PresenceSubscription {
    constructor(subscription, warn) {
        this.subscription = subscription;
        this.warn = warn;
        /** Messages skipped as neither a join nor a leave. */
        this.malformed = 0;
    }
    /** Settles when the server has confirmed the subscription. */
    get ready() {
        return this.subscription.ready;
    }
    event(message) {
        try {
            return parseEvent(message.subject, message.seq, message.payload);
        }
        catch (error) {
            this.malformed++;
            this.warn(`fanout: skipped ${message.subject} seq ${message.seq}: ${error.message}`);
            return null;
        }
    }
    async next() {
        for (;;) {
            const result = await this.subscription.next();
            if (result.done)
                return { value: undefined, done: true };
            const event = this.event(result.value);
            if (event)
                return { value: event, done: false };
        }
    }
    /** The next join or leave, or an error after `timeoutMs`. */
    async nextEvent(timeoutMs = 5000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            const event = this.event(await this.subscription.nextMessage(Math.max(0, deadline - Date.now())));
            if (event)
                return event;
        }
    }
    async return() {
        await this.unsubscribe();
        return { value: undefined, done: true };
    }
    [Symbol.asyncIterator]() {
        return this;
    }
    async unsubscribe() {
        await this.subscription.unsubscribe();
    }
}

return { presencePrefix, parseMember, parseWho, parseEvent, presenceSubject, whoLine, kickLine, PresenceSubscription };
})();
const module_questions_js = (() => {
// Questions (1.2): the ones this client asks, open until their DONE, and the responders answering the ones
// put to it. Owned by the client, which hands over the ASK, ANSWER and DONE pushes and a lost connection.
const { Question } = module_messages_js;
const { checkCount, checkGroup, checkPattern, checkSubject } = module_subjects_js;
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
        checkSubject(subject);
        // A fraction of a millisecond is rounded up: the server counts whole ones, and 0 is not a timeout.
        const timeout = Math.ceil(options.timeout ?? 500);
        checkCount("a question's timeout", timeout, 1);
        checkCount("a question's max", options.max ?? 0, 0);
        const bytes = toBytes(payload);
        if (bytes.includes(10) || bytes[bytes.length - 1] === 13)
            throw new TypeError("a question's payload must fit on one line");
        let done;
        const line = concat(encode(`ASK ${subject} ${timeout} ${options.max ?? 0} `), bytes, NEWLINE);
        await this.owner.command(line, (text) => {
            // Registered as the reply is read, so the ANSWER and DONE pushes right behind it find it.
            const [id, asked] = text.split(" ");
            const result = { id, asked: Number(asked), answered: 0, gone: 0, answers: [] };
            done = new Promise((resolve, reject) => this.open.set(id, { result, resolve, reject, onAnswer: options.onAnswer }));
            return result;
        });
        return done;
    }
    /** `ANSWER <id> <responder> <payload>`. */
    answerPushed(line, frame) {
        const [, id, responder] = line.split(" ", 3);
        const payload = frame.slice(8 + id.length + responder.length + 1);
        const ask = this.open.get(id);
        if (!ask)
            return;
        const answer = { responder, payload, text: decode(payload) };
        ask.result.answers.push(answer);
        ask.onAnswer?.(answer);
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
        checkPattern(subject);
        if (group !== null)
            checkGroup(group);
        this.owner.checkMode([subject], group);
        let confirmed;
        const ready = new Promise((resolve) => (confirmed = resolve)).then(() => undefined);
        // A failure is also logged: no unhandled rejection for a caller that never looks at `ready`.
        ready.catch(() => undefined);
        const responder = {
            subject,
            group,
            handler,
            ready,
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
        const reply = this.owner.command(responderLine(responder), "int");
        reply.catch((error) => this.owner.warn(`fanout: ${error.message}`));
        confirmed(reply);
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
                // The server would strip a CR before the LF: the asker would get other bytes than these.
                if (answer.includes(10) || answer[answer.length - 1] === 13) {
                    throw new TypeError("an answer must fit on one line (no LF, no CR at its end)");
                }
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
            if (this.ended)
                return this.finished();
            await this.wait(null);
        }
        return this.take();
    }
    finished() {
        if (this.ended instanceof Closed || this.ended === unsubscribed)
            return { value: undefined, done: true };
        throw this.ended;
    }
    /** Resolves true once a message or the end comes, false after `timeoutMs`; a wait that timed out no longer
     * listens, so the message that comes later is left for the next reader instead of being taken by nobody. */
    wait(timeoutMs) {
        return new Promise((resolve) => {
            let timer;
            const waiter = () => {
                clearTimeout(timer);
                resolve(true);
            };
            this.waiter = waiter;
            if (timeoutMs !== null) {
                timer = setTimeout(() => {
                    if (this.waiter === waiter)
                        this.waiter = null;
                    resolve(false);
                }, timeoutMs);
            }
        });
    }
    take() {
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
        const deadline = Date.now() + timeoutMs;
        while (this.pending === 0) {
            if (this.ended && this.finished().done)
                throw new Closed("subscription ended");
            const left = deadline - Date.now();
            if (left <= 0 || !(await this.wait(left)))
                throw new Error(`no message within ${timeoutMs} ms`);
        }
        return this.take().value;
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
const module_tokens_js = (() => {
// Application tokens (JWT) as a client holds them: where a fresh one comes from, and when to ask for it. The
// client never verifies a token (the server does); it reads the payload's `exp` and `iat` only to refresh ahead
// of expiry, so that `AUTH <fresh>` reaches the server before it pushes `-ERR auth-expired`.
const { FanoutError, ServerError } = module_errors_js;
const { checkWord } = module_subjects_js;
/** The refresh goes this share of the token's lifetime before its expiry ... */
const refreshShare = 0.1;
/** ... but at least this many ms before it (a round trip to the backend and to the server) ... */
const refreshAtLeast = 5000;
/** ... at most this many (a day-long token is refreshed a minute before it ends) ... */
const refreshAtMost = 60000;
/** ... and never before half of its lifetime, so that a short token is still used for a while. Retries of a
 * failed refresh wait 1, 2, 4 ... s, up to this. */
const retryAtMost = 30000;
/** A token longer than this is not decoded (the server refuses tokens over 32 KiB anyway). */
const maxToken = 32 * 1024;
/** The token function threw or rejected (`cause` holds why), or gave something that is not one word. Thrown
 * by `connect`; reported as a "token-failed" event on a refresh or a reconnect. */
class TokenError extends FanoutError {
    constructor(message, cause) {
        super(message);
        this.cause = cause;
    }
}
/** Calls the token function and checks what it gives. */
async function fetchToken(source) {
    let token;
    try {
        token = await source();
    }
    catch (error) {
        throw new TokenError(`the token function failed: ${error?.message ?? String(error)}`, error);
    }
    try {
        checkWord("a token", token);
    }
    catch {
        throw new TokenError(`the token function gave ${typeof token}, not a token (one word of printable ASCII)`);
    }
    return token;
}
/** Whether a token has the form of a JWT (three base64url parts), which a WebSocket handshake may carry. */
function isJwt(token) {
    return token.length <= maxToken && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}
/** The JWT payload, unverified; null for a token that is not a JWT (a static token). */
function claims(token) {
    if (!isJwt(token))
        return null;
    const body = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    try {
        const text = new TextDecoder().decode(Uint8Array.from(atob(body + "=".repeat(-body.length & 3)), (c) => c.charCodeAt(0)));
        const value = JSON.parse(text);
        return typeof value === "object" && value !== null && !Array.isArray(value)
            ? value : null;
    }
    catch {
        return null;
    }
}
/** Milliseconds from `now` (ms since the epoch) until the token should be refreshed, or null when it does not
 * expire (no `exp`, or not a JWT); 0 when it is already due. */
function refreshIn(token, now) {
    const payload = claims(token);
    const expiry = payload?.exp;
    if (typeof expiry !== "number")
        return null;
    const issued = payload?.iat;
    const start = typeof issued === "number" && issued < expiry ? issued * 1000 : now;
    const lifetime = Math.max(expiry * 1000 - start, 0);
    const margin = Math.min(Math.max(lifetime * refreshShare, refreshAtLeast), refreshAtMost, lifetime / 2);
    return Math.max(expiry * 1000 - margin - now, 0);
}
/** Milliseconds before retry `attempt` (1, 2, ...) of a failed refresh. */
function retryDelay(attempt) {
    return Math.min(1000 * 2 ** Math.min(attempt - 1, 16), retryAtMost);
}
/** The tokens of a token function for one client: the current one, the timer of the next refresh (ahead of its
 * `exp`), and the refresh under way. A refresh sends `AUTH <fresh>` through `sendAuth` on the live connection;
 * a failure (the function threw, or the server refused the token) is reported as a "token-failed" event and
 * retried after 1, 2, 4 ... s while `live()`; a reconnect calls `fetch` itself. Bound: one timer and one
 * refresh per client, whatever the server pushes. */
class Refresher {
    constructor(source, sendAuth, report, live) {
        this.source = source;
        this.sendAuth = sendAuth;
        this.report = report;
        this.live = live;
        this.token = undefined;
        this.timer = null;
        this.refreshing = false;
        this.stopped = false;
    }
    /** A fresh token for a new connection (TokenError when there is none). */
    async fetch() {
        this.token = await fetchToken(this.source);
        return this.token;
    }
    /** Sets the timer of the next refresh from the current token's `exp`, if it has one. */
    schedule() {
        this.pause();
        const delay = this.token === undefined || this.stopped ? null : refreshIn(this.token, Date.now());
        if (delay === null)
            return;
        // At least a second: a token already near its exp must not turn into a loop of refreshes.
        this.wait(Math.max(delay, 1000), () => this.refreshNow());
    }
    refreshNow() {
        if (this.refreshing || this.stopped)
            return;
        this.refreshing = true;
        void this.refresh().finally(() => (this.refreshing = false));
    }
    /** No refresh by the timer (the connection went; the next one schedules again). */
    pause() {
        if (this.timer)
            clearTimeout(this.timer);
        this.timer = null;
    }
    stop() {
        this.stopped = true;
        this.pause();
    }
    wait(ms, then) {
        this.timer = setTimeout(then, ms);
        // Node's timers have unref(): a refresh never keeps a process alive by itself.
        this.timer.unref?.();
    }
    async refresh() {
        for (let attempt = 1; !this.stopped && this.live(); attempt++) {
            let token;
            try {
                token = await fetchToken(this.source);
                await this.sendAuth(token);
            }
            catch (error) {
                if (!(error instanceof TokenError || error instanceof ServerError))
                    return; // connection gone
                const delay = retryDelay(attempt);
                this.report("token-failed", `token refresh failed: ${error.message}; retrying in ${delay / 1000}s`);
                await new Promise((resolve) => this.wait(delay, resolve));
                continue;
            }
            const same = token === this.token;
            this.token = token;
            this.report("token-refreshed", "sent AUTH with a fresh token");
            // The same token again (a function that caches it) would be due again at once: the server's
            // auth-expired push asks for the next one instead.
            if (!same)
                this.schedule();
            return;
        }
    }
}

return { TokenError, fetchToken, isJwt, claims, refreshIn, retryDelay, Refresher };
})();
const module_client_js = (() => {
// The client: one connection at a time to a Fanout server, over any transport, reconnected with backoff, whose
// subscriptions resume after a reconnect with no duplicate and with exact counts of what was missed.
const { CannotConnect, Closed, closingCodes, ConnectionLost, ProtocolViolation, ServerError, serverError, } = module_errors_js;
const { defaultKeepAlive, KeepAlive } = module_keepalive_js;
const { Message } = module_messages_js;
const { kickLine, parseWho, PresenceSubscription, presenceSubject, whoLine } = module_presence_js;
const { Questions, responderLine } = module_questions_js;
const { concat, decode, defaultMaxLine, encode, isWildcard, matches, NEWLINE, parseFields, parseGreeting, parseReset, parseResumeReply, publishCommand, publishLine, toBytes, } = module_protocol_js;
const { reportLines, ResumeState } = module_resume_js;
const { checkCount, checkGroup, checkOneLine, checkPattern, checkSubject, checkWord } = module_subjects_js;
const { Subscription } = module_subscription_js;
const { Refresher, TokenError } = module_tokens_js;
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
        this.lastSubjectBytes = new Uint8Array(0);
        this.lastSubject = "";
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
            checkMode: (patterns, group) => this.checkMode(patterns, group),
        });
        /** The PING after a greeting whose token came with the WebSocket handshake, while unanswered: the lines
         * before its `+PONG` are the server's answer to that token (a `+OK`, docs/browsers.md), whether or not one
         * comes. Kept here, not on the entry, so that every other reply costs one comparison and entries keep one
         * shape. */
        this.handshakeAuth = null;
        /** Set by the push `-ERR kicked <reason>`: the connection's end is final, no reconnect follows (it would undo
         * the administrator's kick), and every later command rejects with it. */
        this.kicked = null;
        if (typeof options.token === "string")
            checkWord("a token", options.token);
        else if (options.token !== undefined && typeof options.token !== "function") {
            throw new TypeError("token is a string or a function giving one");
        }
        this.staticToken = typeof options.token === "string" ? options.token : undefined;
        this.tokens = typeof options.token !== "function" ? null : new Refresher(options.token, (fresh) => this.send(`AUTH ${fresh}`, "text", true), (kind, detail) => this.emit({ kind, detail }), () => !this.closed && this.transport !== null);
        this.timeout = options.timeout ?? 5000;
        this.maxLine = options.maxLine ?? defaultMaxLine;
        this.maxPending = options.maxPending ?? 1024;
        this.logger = options.logger ?? silentLogger;
        const reconnect = options.reconnect ?? true;
        this.backoff = reconnect === false ? null
            : { initial: 100, maximum: 5000, jitter: 0.5, ...(reconnect === true ? {} : reconnect) };
        this.keepAlive = new KeepAlive(options.keepalive === false ? 0 : options.keepalive ?? defaultKeepAlive, () => this.keepAliveTick());
    }
    /** A PING while the connection holds no subscription; its reply goes to no one, and a failure is the
     * connection's, which onLost reports. */
    keepAliveTick() {
        if (!this.ready || this.subscriptions.length > 0 || this.questions.responders.length > 0)
            return;
        this.send("PING", "text", true).catch(() => undefined);
    }
    // Connecting
    /** @internal Connects, reads the greeting and authenticates; the connection becomes the client's. */
    async start() {
        // Before connecting, so that the server's auth timeout does not run while the backend answers.
        if (this.tokens)
            await this.tokens.fetch();
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
            }, this.timeout, this.token);
        }
        catch (error) {
            throw new CannotConnect(`cannot connect to ${this.address}: ${error.message}`);
        }
        this.transport = transport;
        // The server's answer to a token the handshake carried may come in the greeting's read: its entry is
        // in place before any line is handled.
        const handshakeAuth = this.token !== undefined && transport.tokenSent ? this.handshakeAuthAnswered() : null;
        handshakeAuth?.catch(() => undefined);
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
        this.keepAlive.start();
        if (handshakeAuth) {
            transport.write(encode("PING\n"), false);
            await handshakeAuth;
        }
        else if (this.token !== undefined)
            await this.send(`AUTH ${this.token}`, "text", true);
        this.tokens?.schedule();
    }
    /** The server's answer to the token the handshake carried, settled by the `+PONG` of a PING sent after the
     * greeting, so that the answer (or its absence) is never taken for the reply to the application's first
     * command. */
    handshakeAuthAnswered() {
        return new Promise((resolve, reject) => {
            const entry = { resolve, reject, reader: "text" };
            this.handshakeAuth = { entry, refused: null };
            this.pending.push(entry);
        });
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
        this.handshakeAuth = null;
        this.ready = false;
        // The reconnect fetches a fresh token and schedules its refresh.
        this.tokens?.pause();
        this.greeted?.reject(new ConnectionLost(`connection lost: ${reason}`));
        this.greeted = null;
        const error = this.closed ? new Closed("client closed") : this.kicked ?? new ConnectionLost(`connection to ${this.address} lost before the reply (${reason}); the command is not sent again, `
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
        if (this.backoff === null || this.kicked) {
            this.keepAlive.stop();
            for (const subscription of this.subscriptions) {
                subscription.end(this.kicked ?? new ConnectionLost(`connection to ${this.address} lost: ${reason}`));
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
                    if (error instanceof TokenError) {
                        this.emit({ kind: "token-failed", detail: `${error.message}; reconnect attempt ${attempt}` });
                    }
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
        if (this.kicked)
            return Promise.reject(this.kicked);
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
        if (this.kicked)
            throw this.kicked;
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
            const subject = this.subjectAt(frame, 4, subjectEnd);
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
    /** The subject in `frame` from `start` to `end`: the last one's string again when the bytes are the same,
     * as they are for a stream of one subject's messages, so that a message costs no string of its own. */
    subjectAt(frame, start, end) {
        const last = this.lastSubjectBytes;
        if (last.length === end - start) {
            let same = true;
            for (let i = 0; i < last.length; i++) {
                if (last[i] !== frame[start + i]) {
                    same = false;
                    break;
                }
            }
            if (same)
                return this.lastSubject;
        }
        this.lastSubjectBytes = frame.slice(start, end);
        // Subjects are printable ASCII: no UTF-8 decoding needed.
        this.lastSubject = String.fromCharCode(...this.lastSubjectBytes);
        return this.lastSubject;
    }
    reply(text, error) {
        var _a;
        if (this.pendingHead >= this.pending.length) {
            this.logger.warn(`fanout: reply with no command waiting: ${text.slice(0, 80)}`);
            return;
        }
        const entry = this.pending[this.pendingHead];
        if (this.handshakeAuth !== null && entry === this.handshakeAuth.entry) {
            if (error !== null || text !== "PONG") {
                // The server's answer to the handshake's token, ahead of the PING's reply.
                (_a = this.handshakeAuth).refused ?? (_a.refused = error);
                return;
            }
            error = this.handshakeAuth.refused;
            this.handshakeAuth = null;
        }
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
        else if (code === "auth-expired") {
            // A push, never a reply (PROTOCOL.md, AUTH): `token expired; send AUTH ... within <grace>s`, then
            // `closing` if no fresh token came; the reconnect after that fetches one anyway.
            this.emit({ kind: "auth-expired", detail: error.message });
            if (!words.startsWith("closing"))
                this.tokens?.refreshNow();
        }
        else if (code === "kicked") {
            // A push, never a reply (PROTOCOL.md, Presence): the server closes the connection after it.
            this.kicked = error;
            this.emit({ kind: "kicked", detail: words });
        }
        else if (code === "denied" && words.startsWith("revoked")) {
            this.emit({ kind: "revoked", detail: error.message });
            this.revoked(words.slice(words.lastIndexOf(" to ") + 4).split(" ").filter(Boolean), error);
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
        for (const pattern of patterns)
            checkPattern(pattern);
        const group = options.group ?? null;
        if (group !== null)
            checkGroup(group);
        this.checkMode(patterns, group);
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
    /** The server dropped `patterns` from this connection (its token no longer allows them): the subscriptions
     * holding any of them end with the error, and their other patterns no one else holds are unsubscribed. */
    revoked(patterns, error) {
        const gone = new Set(patterns);
        for (const subscription of this.subscriptions.filter((s) => s.patterns.some((p) => gone.has(p)))) {
            subscription.end(error);
            this.unsubscribe(subscription, gone).catch(() => undefined);
        }
    }
    /** @internal */
    async unsubscribe(subscription, alreadyGone) {
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
        const dropped = subscription.patterns.filter((p) => !remaining.includes(p) && !alreadyGone?.has(p));
        const implicit = this.resume.implicitSubscriptions(dropped, remaining);
        this.resume.forget(this.plainPatterns());
        if ((dropped.length || implicit.length) && this.ready) {
            await this.send(`UNSUB ${[...dropped, ...implicit].join(" ")}`, "int");
        }
    }
    /** Refuses a pattern this client already holds in another mode (plainly, or in another group): the
     * connection holds each pattern once, and a second SUB or QSUB of it would silently move the first
     * subscription's pattern into the new mode (PROTOCOL.md, Groups). */
    checkMode(patterns, group) {
        const held = new Map();
        for (const s of this.subscriptions)
            for (const p of s.patterns)
                held.set(p, s.group);
        for (const r of this.questions.responders)
            held.set(r.subject, r.group);
        for (const pattern of patterns) {
            const mode = held.get(pattern);
            if (mode !== undefined && mode !== group) {
                const current = mode === null ? "plainly" : `in group ${mode}`;
                throw new TypeError(`${pattern} is already subscribed ${current} on this client, `
                    + "and a connection holds a pattern in one mode only: use another client");
            }
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
        try {
            checkSubject(subject);
        }
        catch (error) {
            return Promise.reject(error);
        }
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
            // The reply may fail before the drain comes: the caller sees it through the chain below, so its
            // rejection is not an unhandled one meanwhile.
            reply.catch(() => undefined);
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
        checkSubject(subject);
        checkCount("a count", count, 0);
        // LAST subscribes plainly, which would take the subject out of a group this client holds it in.
        this.checkMode([subject], null);
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
    /** The token last sent with AUTH or in the handshake (from a token function, the last one it gave). */
    get token() {
        return this.tokens ? this.tokens.token : this.staticToken;
    }
    // Presence (1.3)
    /** The members of a concrete subject the server keeps presence for, in join order: `count` in all, `members`
     * at most `limit` of them (the server's default 100 when not given, at most 1000). Rejects with Syntax when
     * the server keeps no presence for the subject, Denied without subscribe rights on it. */
    async who(subject, limit) {
        return this.command(whoLine(subject, limit), parseWho);
    }
    /** Closes a connection (`7`, or `node1/7` as WHO and CLIENTS show it) or, with `user=<user>`, all of a user's
     * connections; each is told `-ERR kicked <reason>` and its leaves say `reason=kicked`. Resolves to how many
     * were closed (0 when none matched). Needs an administrator's token when the server has auth on. */
    async kick(client, reason) {
        return this.command(kickLine(client, reason), "int");
    }
    /** The joins and leaves of `subject` (a pattern such as `chat.>` watches every subject it matches) as typed
     * events, from now on: `for await (const event of client.presence("chat.room1"))`. A subscription of
     * `$presence.<subject>` underneath, resumed after a reconnect like any other; `ready` settles once the
     * server confirmed it. Throws BadSubject for a bad subject, and nothing is sent. */
    presence(subject) {
        return new PresenceSubscription(this.subscribe(presenceSubject(subject)), (line) => this.logger.warn(line));
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
        checkOneLine("a command", line);
        // An empty line gets no reply (PROTOCOL.md, Framing): the next command would be given this one's.
        if (line.trim() === "")
            throw new TypeError("request needs a command");
        return this.command(line);
    }
    async ping(text = "") {
        checkOneLine("a PING text", text);
        return this.command(text ? `PING ${text}` : "PING");
    }
    /** Closes the connection; subscriptions end, and commands still waiting fail with Closed. */
    async close() {
        if (this.closed)
            return;
        this.closed = true;
        if (this.reconnectTimer)
            clearTimeout(this.reconnectTimer);
        this.tokens?.stop();
        this.keepAlive.stop();
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
        if (["disconnected", "gap", "server-closing", "revoked", "resubscribe-failed", "auth-expired",
            "token-failed", "kicked"].includes(event.kind)) {
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
const { isJwt } = module_tokens_js;
const BMSG = encode("BMSG ");
/** Output queued in the browser past which `write` asks the caller to wait. */
const highWater = 1 << 20;
/** What one WebSocket message from fanoutd holds: a text message is one line (its LF, if any, dropped); a
 * binary one a BMSG push (header, LF, bytes, LF) or a line a text frame could not carry. */
function messageFrame(bytes, text) {
    if (text)
        return bytes.length && bytes[bytes.length - 1] === 10 ? bytes.subarray(0, bytes.length - 1) : bytes;
    const newline = bytes.indexOf(10);
    const header = bytes.slice(0, newline < 0 ? bytes.length : newline);
    if (!startsWith(header, BMSG))
        return header;
    const length = bmsgLength(header);
    return { header, payload: bytes.slice(newline + 1, newline + 1 + length) };
}
function webSocketOpener(url) {
    return (events, timeoutMs, token) => new Promise((resolve, reject) => {
        const WebSocketClass = globalThis.WebSocket;
        if (!WebSocketClass) {
            reject(new Error("this runtime has no WebSocket"));
            return;
        }
        // A browser can set no header on a WebSocket: a JWT goes as the subprotocol `bearer.<jwt>` beside
        // `fanout`, which the server names in its answer. A static token goes as AUTH after the greeting.
        const tokenSent = token !== undefined && isJwt(token);
        const socket = tokenSent ? new WebSocketClass(url, ["fanout", `bearer.${token}`]) : new WebSocketClass(url);
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
            const text = typeof event.data === "string";
            events.frame(messageFrame(text ? encode(event.data) : new Uint8Array(event.data), text));
        };
        const transport = {
            // A browser gives no way to stop reading a WebSocket.
            canPause: false,
            textOnly: true,
            tokenSent,
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

return { messageFrame, webSocketOpener };
})();
const module_exports_js = (() => {
// What both entry points export besides `connect`.
const { Client } = module_client_js;
const { AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError, IdleTimeout, Kicked, Limit, ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax, TooLong, Unavailable, UnknownCommand, } = module_errors_js;
const { Message, Question } = module_messages_js;
const { TokenError } = module_tokens_js;
const { Subscription } = module_subscription_js;
const { PresenceSubscription } = module_presence_js;

return { Client, AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError, IdleTimeout, Kicked, Limit, ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax, TooLong, Unavailable, UnknownCommand, Message, Question, TokenError, Subscription, PresenceSubscription };
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
