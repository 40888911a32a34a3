// The client: one connection at a time to a Fanout server, over any transport, reconnected with backoff, whose
// subscriptions resume after a reconnect with no duplicate and with exact counts of what was missed.
import { CannotConnect, Closed, closingCodes, ConnectionLost, ProtocolViolation, ServerError, serverError, } from "./errors.js";
import { Message } from "./messages.js";
import { Questions, responderLine } from "./questions.js";
import { concat, decode, defaultMaxLine, encode, isWildcard, matches, NEWLINE, parseFields, parseGreeting, parseReset, parseResumeReply, publishCommand, publishLine, toBytes, } from "./protocol.js";
import { reportLines, ResumeState } from "./resume.js";
import { checkCount, checkGroup, checkOneLine, checkPattern, checkSubject, checkWord } from "./subjects.js";
import { Subscription } from "./subscription.js";
const routesKept = 4096;
const silentLogger = { info: () => undefined, warn: (line) => console.warn(line) };
export class Client {
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
        if (options.token !== undefined)
            checkWord("a token", options.token);
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
