// The client: one connection at a time to a Fanout server, over any transport, reconnected with backoff, whose
// subscriptions resume after a reconnect with no duplicate and with exact counts of what was missed.

import {
    CannotConnect, Closed, closingCodes, ConnectionLost, FanoutError, Kicked, ProtocolViolation, ServerError,
    serverError,
} from "./errors.js";
import { defaultKeepAlive, KeepAlive } from "./keepalive.js";
import { AskResult, FanoutEvent, Message } from "./messages.js";
import { kickLine, parseWho, PresenceSubscription, presenceSubject, Who, whoLine } from "./presence.js";
import { AskOptions, Handler, Questions, Responder, responderLine } from "./questions.js";
import {
    concat, decode, defaultMaxLine, encode, Frame, Greeting, isWildcard, matches, NEWLINE, parseFields,
    parseGreeting, parseReset, parseResumeReply, Payload, publishCommand, publishLine, ResumeReply, toBytes,
} from "./protocol.js";
import { Position, reportLines, ResumeReport, ResumeState } from "./resume.js";
import { checkCount, checkGroup, checkOneLine, checkPattern, checkSubject, checkWord } from "./subjects.js";
import { Subscription, SubscriptionOwner } from "./subscription.js";
import { Refresher, TokenError, TokenFunction } from "./tokens.js";
import { Opener, Transport } from "./transport.js";

/** Exponential backoff with jitter: attempt n waits about `initial * 2^(n-1)` ms, capped at `maximum`, scaled
 * by a random factor in `1 - jitter ... 1 + jitter` so that clients cut off together do not return together. */
export interface Backoff {
    initial?: number;
    maximum?: number;
    jitter?: number;
}

export interface ClientOptions {
    /** A static token or JWT, sent with AUTH right after each greeting (a WebSocket presents a JWT in its
     * handshake instead). Or a function giving one (`() => Promise<string>`, as Centrifugo's `getToken`): called
     * before each connect, ahead of the JWT's `exp` (read, not verified) and on the server's `-ERR auth-expired`
     * push; a fresh token goes as AUTH on the live connection, which keeps its subscriptions. A failed refresh
     * is retried with backoff and reported as a "token-failed" event; before the first connection it throws
     * TokenError. */
    token?: string | TokenFunction;
    /** false: never reconnect; true (default) or a Backoff: reconnect with that backoff. */
    reconnect?: boolean | Backoff;
    /** Longest wait, in ms, to connect and for a connection to come back before a command fails. */
    timeout?: number;
    /** The server's max_line as this client assumes it: longer publishes go as BPUB (1.2). */
    maxLine?: number;
    maxPayload?: number;
    /** Messages a subscription queues before the client stops reading the socket. */
    maxPending?: number;
    /** Hears of reconnects, resumes, resets and gaps. */
    onEvent?: (event: FanoutEvent) => void;
    /** While the client holds no subscription, a PING every this many ms (default 20000), so that the server's
     * idle_unsubscribed_timeout does not drop a quiet publisher; 0 or false: none. */
    keepalive?: number | false;
    /** Where report lines go ("fanout: missed 2 messages on orders ..."); default: console.warn for losses. */
    logger?: { info(line: string): void; warn(line: string): void };
}

export interface SubscribeOptions {
    /** Subscribe as a member of this queue group (1.2). */
    group?: string;
}

type Reader = "int" | "text" | ((text: string) => unknown);

interface Pending {
    resolve: (value: any) => void;
    reject: (error: Error) => void;
    reader: Reader;
}

const routesKept = 4096;

const silentLogger = { info: () => undefined, warn: (line: string) => console.warn(line) };

export class Client implements SubscriptionOwner {
    greeting: Greeting | null = null;
    private transport: Transport | null = null;
    private greeted: Pending | null = null;
    /** One entry per command sent and not yet answered, in sending order. Bound: the commands the application
     * has in flight. */
    private pending: Pending[] = [];
    private pendingHead = 0;
    private ready = false;
    private readyWaiters: Array<() => void> = [];
    private closed = false;
    private reconnecting = false;
    private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
    private readonly resume = new ResumeState();
    private subscriptions: Subscription[] = [];
    /** Which subscriptions each subject reaches; cleared whenever a subscription comes or goes, and when it holds
     * routesKept subjects (a wildcard can reach any number). */
    private routes = new Map<string, Subscription[]>();
    private fullCount = 0;
    private lastSubjectBytes = new Uint8Array(0);
    private lastSubject = "";
    /** The transport whose last write went over its high-water mark, until it drains. */
    private blocked: Transport | null = null;
    /** LAST replays being gathered. */
    private collectors = new Map<string, { due: number; messages: Message[]; resolve: (m: Message[]) => void; reject: (e: Error) => void }>();
    private readonly questions = new Questions({
        command: (line, read) => this.command(line, read),
        sendQuietly: (line) => {
            if (this.transport) this.send(line, "int", true).catch(() => undefined);
        },
        release: async (patterns) => {
            const held = this.plainPatterns();
            const dropped = patterns.filter((p) => !held.includes(p));
            if (dropped.length && this.ready) await this.send(`UNSUB ${dropped.join(" ")}`, "int");
        },
        warn: (line) => this.logger.warn(line),
        checkMode: (patterns, group) => this.checkMode(patterns, group),
    });
    private readonly timeout: number;
    private readonly maxLine: number;
    private readonly maxPending: number;
    private readonly backoff: Required<Backoff> | null;
    private readonly logger: { info(line: string): void; warn(line: string): void };
    private readonly keepAlive: KeepAlive;
    private readonly staticToken: string | undefined;
    /** With a token function: its tokens, and their refresh on the live connection. */
    private readonly tokens: Refresher | null;
    /** The PING after a greeting whose token came with the WebSocket handshake, while unanswered: the lines
     * before its `+PONG` are the server's answer to that token (a `+OK`, docs/browsers.md), whether or not one
     * comes. Kept here, not on the entry, so that every other reply costs one comparison and entries keep one
     * shape. */
    private handshakeAuth: { entry: Pending; refused: ServerError | null } | null = null;
    /** Set by the push `-ERR kicked <reason>`: the connection's end is final, no reconnect follows (it would undo
     * the administrator's kick), and every later command rejects with it. */
    private kicked: Kicked | null = null;

    /** Use `connect()`. */
    constructor(readonly address: string, private readonly open: Opener, private readonly options: ClientOptions) {
        if (typeof options.token === "string") checkWord("a token", options.token);
        else if (options.token !== undefined && typeof options.token !== "function") {
            throw new TypeError("token is a string or a function giving one");
        }
        this.staticToken = typeof options.token === "string" ? options.token : undefined;
        this.tokens = typeof options.token !== "function" ? null : new Refresher(options.token,
            (fresh) => this.send(`AUTH ${fresh}`, "text", true),
            (kind, detail) => this.emit({ kind, detail }),
            () => !this.closed && this.transport !== null);
        this.timeout = options.timeout ?? 5000;
        this.maxLine = options.maxLine ?? defaultMaxLine;
        this.maxPending = options.maxPending ?? 1024;
        this.logger = options.logger ?? silentLogger;
        const reconnect = options.reconnect ?? true;
        this.backoff = reconnect === false ? null
            : { initial: 100, maximum: 5000, jitter: 0.5, ...(reconnect === true ? {} : reconnect) };
        this.keepAlive = new KeepAlive(options.keepalive === false ? 0 : options.keepalive ?? defaultKeepAlive,
            () => this.keepAliveTick());
    }

    /** A PING while the connection holds no subscription; its reply goes to no one, and a failure is the
     * connection's, which onLost reports. */
    private keepAliveTick(): void {
        if (!this.ready || this.subscriptions.length > 0 || this.questions.responders.length > 0) return;
        this.send("PING", "text", true).catch(() => undefined);
    }

    // Connecting

    /** @internal Connects, reads the greeting and authenticates; the connection becomes the client's. */
    async start(): Promise<void> {
        // Before connecting, so that the server's auth timeout does not run while the backend answers.
        if (this.tokens) await this.tokens.fetch();
        const greeting = new Promise<Greeting>((resolve, reject) => (this.greeted = { resolve, reject, reader: "text" }));
        let transport: Transport;
        try {
            transport = await this.open({
                frame: (frame) => {
                    if (this.transport === transport) this.onFrame(frame);
                },
                closed: (reason) => {
                    if (this.transport === transport) this.onLost(reason);
                },
            }, this.timeout, this.token);
        } catch (error) {
            throw new CannotConnect(`cannot connect to ${this.address}: ${(error as Error).message}`);
        }
        this.transport = transport;
        // The server's answer to a token the handshake carried may come in the greeting's read: its entry is
        // in place before any line is handled.
        const handshakeAuth = this.token !== undefined && transport.tokenSent ? this.handshakeAuthAnswered() : null;
        handshakeAuth?.catch(() => undefined);
        // Frames that came before `open` resolved were dropped above; a transport hands none over before then.
        let timer: ReturnType<typeof setTimeout> | undefined;
        try {
            this.greeting = await Promise.race([greeting, new Promise<never>((_, reject) => {
                timer = setTimeout(() => reject(new ConnectionLost("no greeting")), this.timeout);
            })]);
        } catch (error) {
            transport.close();
            this.transport = null;
            throw error instanceof ServerError || error instanceof ConnectionLost
                ? new CannotConnect(`cannot connect to ${this.address}: ${error.message}`)
                : error;
        } finally {
            clearTimeout(timer);
        }
        this.resume.connected(this.greeting.epoch);
        this.keepAlive.start();
        if (handshakeAuth) {
            transport.write(encode("PING\n"), false);
            await handshakeAuth;
        } else if (this.token !== undefined) await this.send(`AUTH ${this.token}`, "text", true);
        this.tokens?.schedule();
    }

    /** The server's answer to the token the handshake carried, settled by the `+PONG` of a PING sent after the
     * greeting, so that the answer (or its absence) is never taken for the reply to the application's first
     * command. */
    private handshakeAuthAnswered(): Promise<unknown> {
        return new Promise((resolve, reject) => {
            const entry: Pending = { resolve, reject, reader: "text" };
            this.handshakeAuth = { entry, refused: null };
            this.pending.push(entry);
        });
    }

    /** @internal */
    markReady(): void {
        this.ready = true;
        const waiters = this.readyWaiters;
        this.readyWaiters = [];
        for (const wake of waiters) wake();
    }

    private onLost(reason: string): void {
        this.transport = null;
        this.handshakeAuth = null;
        this.ready = false;
        // The reconnect fetches a fresh token and schedules its refresh.
        this.tokens?.pause();
        this.greeted?.reject(new ConnectionLost(`connection lost: ${reason}`));
        this.greeted = null;
        const error: FanoutError = this.closed ? new Closed("client closed") : this.kicked ?? new ConnectionLost(
            `connection to ${this.address} lost before the reply (${reason}); the command is not sent again, `
            + "and may or may not have taken effect");
        const pending = this.pending.slice(this.pendingHead);
        this.pending = [];
        this.pendingHead = 0;
        for (const entry of pending) entry.reject(error);
        for (const collector of this.collectors.values()) collector.reject(error);
        this.collectors.clear();
        this.questions.lost(error);
        if (this.closed || this.greeting === null || this.reconnecting) return;
        this.emit({ kind: "disconnected", detail: reason });
        if (this.backoff === null || this.kicked) {
            this.keepAlive.stop();
            for (const subscription of this.subscriptions) {
                subscription.end(this.kicked ?? new ConnectionLost(`connection to ${this.address} lost: ${reason}`));
            }
            this.wakeWaiters();
        } else {
            void this.reconnect();
        }
    }

    private wakeWaiters(): void {
        const waiters = this.readyWaiters;
        this.readyWaiters = [];
        for (const wake of waiters) wake();
    }

    private async reconnect(): Promise<void> {
        const backoff = this.backoff!;
        this.reconnecting = true;
        try {
            for (let attempt = 1; !this.closed; attempt++) {
                const base = Math.min(backoff.initial * 2 ** Math.min(attempt - 1, 30), backoff.maximum);
                const delay = base * (1 - backoff.jitter + 2 * backoff.jitter * Math.random());
                this.emit({ kind: "reconnecting", detail: `attempt ${attempt} in ${Math.round(delay)} ms` });
                await new Promise<void>((resolve) => (this.reconnectTimer = setTimeout(resolve, delay)));
                if (this.closed) return;
                try {
                    await this.start();
                    await this.restore();
                } catch (error) {
                    this.transport?.close();
                    this.transport = null;
                    if (error instanceof TokenError) {
                        this.emit({ kind: "token-failed", detail: `${error.message}; reconnect attempt ${attempt}` });
                    }
                    this.logger.info(`fanout: reconnect attempt ${attempt} failed: ${(error as Error).message}`);
                    continue;
                }
                this.emit({ kind: "connected", detail: `reconnected to ${this.address}` });
                return;
            }
        } finally {
            this.reconnecting = false;
        }
    }

    /** Resubscribes after a reconnect: each concrete subject with RESUME from its last delivered seq (nothing
     * repeated, what is gone counted), then the wildcards, the groups and the responders. */
    private async restore(): Promise<void> {
        const plan = this.resume.restorePlan(this.plainPatterns());
        const replies: Promise<unknown>[] = [];
        for (const { subject, position } of plan.resumes) {
            replies.push(this.send(resumeLine(subject, position), this.resumeReader(subject, position, true), true));
        }
        if (plan.patterns.length) replies.push(this.send(`SUB ${plan.patterns.join(" ")}`, "int", true));
        for (const [group, patterns] of this.groupPatterns()) {
            replies.push(this.send(`QSUB ${group} ${patterns.join(" ")}`, "int", true));
        }
        for (const responder of this.questions.responders) replies.push(this.send(responderLine(responder), "int", true));
        this.markReady();
        const results = await Promise.allSettled(replies);
        for (const result of results) {
            if (result.status === "rejected") this.emit({ kind: "resubscribe-failed", detail: String(result.reason) });
        }
        if (this.fullCount > 0) this.transport?.pause();
    }

    // Sending

    /** Writes one command now; the promise settles with its reply. */
    private send(line: string | Uint8Array, reader: Reader, internal = false, binary = false): Promise<any> {
        if (this.closed) return Promise.reject(new Closed("client closed"));
        if (this.kicked) return Promise.reject(this.kicked);
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
    private async connected(): Promise<void> {
        if (this.closed) throw new Closed("client closed");
        if (this.kicked) throw this.kicked;
        if (this.ready) return;
        if (!this.transport && !this.reconnecting) throw new ConnectionLost(`not connected to ${this.address}`);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve, reject) => {
            this.readyWaiters.push(resolve);
            timer = setTimeout(() => reject(new ConnectionLost(`not connected to ${this.address}`)), this.timeout);
        }).finally(() => clearTimeout(timer));
        if (!this.ready) throw this.closed ? new Closed("client closed") : new ConnectionLost(`not connected to ${this.address}`);
    }

    private async command(line: string | Uint8Array, reader: Reader = "text"): Promise<any> {
        await this.connected();
        return this.send(line, reader);
    }

    // Reading

    private onFrame(frame: Frame): void {
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
            for (; index < frame.length && frame[index] !== 32; index++) seq = seq * 10 + frame[index] - 48;
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
                } catch (error) {
                    greeted.reject(new ProtocolViolation((error as Error).message));
                    this.transport?.close();
                }
                return;
            }
            this.reply(line.startsWith("+OK ") ? line.slice(4) : line.slice(1), null);
        } else if (line.startsWith("-ERR ")) {
            this.error(line.slice(5));
        } else if (line.startsWith("ASK ")) {
            this.questions.questionPushed(line, frame);
        } else if (line.startsWith("ANSWER ")) {
            this.questions.answerPushed(line, frame);
        } else if (line.startsWith("DONE ")) {
            this.questions.donePushed(line);
        } else if (line.startsWith("RESET ")) {
            this.report(this.resume.reset(parseReset(line)));
        }
    }

    /** The subject in `frame` from `start` to `end`: the last one's string again when the bytes are the same,
     * as they are for a stream of one subject's messages, so that a message costs no string of its own. */
    private subjectAt(frame: Uint8Array, start: number, end: number): string {
        const last = this.lastSubjectBytes;
        if (last.length === end - start) {
            let same = true;
            for (let i = 0; i < last.length; i++) {
                if (last[i] !== frame[start + i]) {
                    same = false;
                    break;
                }
            }
            if (same) return this.lastSubject;
        }
        this.lastSubjectBytes = frame.slice(start, end);
        // Subjects are printable ASCII: no UTF-8 decoding needed.
        this.lastSubject = String.fromCharCode(...this.lastSubjectBytes);
        return this.lastSubject;
    }

    private reply(text: string, error: ServerError | null): void {
        if (this.pendingHead >= this.pending.length) {
            this.logger.warn(`fanout: reply with no command waiting: ${text.slice(0, 80)}`);
            return;
        }
        const entry = this.pending[this.pendingHead];
        if (this.handshakeAuth !== null && entry === this.handshakeAuth.entry) {
            if (error !== null || text !== "PONG") {
                // The server's answer to the handshake's token, ahead of the PING's reply.
                this.handshakeAuth.refused ??= error;
                return;
            }
            error = this.handshakeAuth.refused;
            this.handshakeAuth = null;
        }
        this.pending[this.pendingHead++] = undefined as unknown as Pending;
        if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pending.length) {
            this.pending = this.pending.slice(this.pendingHead);
            this.pendingHead = 0;
        }
        if (error) {
            entry.reject(error);
        } else if (entry.reader === "int") {
            entry.resolve(parseInt(text, 10));
        } else if (entry.reader === "text") {
            entry.resolve(text);
        } else {
            try {
                entry.resolve(entry.reader(text));
            } catch (failure) {
                entry.reject(new ProtocolViolation(`bad reply ${text.slice(0, 80)}: ${(failure as Error).message}`));
            }
        }
    }

    private error(text: string): void {
        const space = text.indexOf(" ");
        const code = space < 0 ? text : text.slice(0, space);
        const words = space < 0 ? "" : text.slice(space + 1);
        const error = serverError(code, words);
        if (this.greeted) {
            this.greeted.reject(error);
            this.greeted = null;
        } else if (closingCodes.has(code)) {
            this.emit({ kind: "server-closing", detail: error.message });
        } else if (code === "auth-expired") {
            // A push, never a reply (PROTOCOL.md, AUTH): `token expired; send AUTH ... within <grace>s`, then
            // `closing` if no fresh token came; the reconnect after that fetches one anyway.
            this.emit({ kind: "auth-expired", detail: error.message });
            if (!words.startsWith("closing")) this.tokens?.refreshNow();
        } else if (code === "kicked") {
            // A push, never a reply (PROTOCOL.md, Presence): the server closes the connection after it.
            this.kicked = error as Kicked;
            this.emit({ kind: "kicked", detail: words });
        } else if (code === "denied" && words.startsWith("revoked")) {
            this.emit({ kind: "revoked", detail: error.message });
            this.revoked(words.slice(words.lastIndexOf(" to ") + 4).split(" ").filter(Boolean), error);
        } else {
            this.reply("", error);
        }
    }

    private deliver(subject: string, seq: number, payload: Uint8Array): void {
        const collector = this.collectors.size ? this.collectors.get(subject) : undefined;
        let routes = this.routes.get(subject);
        if (!routes) {
            routes = this.subscriptions.filter((s) => s.patterns.some((p) => matches(p, subject)));
            if (this.routes.size >= routesKept) this.routes.clear();
            this.routes.set(subject, routes);
        }
        if (!collector && routes.length === 0) return;
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
            if (verdict === "duplicate") return;
            if (verdict === "gap") this.emit({ kind: "gap", detail: `gap on ${subject}: expected seq ${expected}, got ${seq}` });
            else if (verdict === "restarted") this.report({ subject, recovered: 0, missed: null, reason: "resume" });
        }
        for (const subscription of routes) subscription.push(message);
    }

    // Subscriptions

    /**
     * Subscribes to subjects and patterns (`news.*`, `alerts.>`), or with `{ group }` as a member of that queue
     * group (1.2). Returns at once; `sub.ready` settles when the server has confirmed. Concrete subjects are
     * subscribed with RESUME, from the position `last` left if any.
     */
    subscribe(...args: Array<string | string[] | SubscribeOptions>): Subscription {
        const patterns: string[] = [];
        let options: SubscribeOptions = {};
        for (const arg of args) {
            if (typeof arg === "string") patterns.push(arg);
            else if (Array.isArray(arg)) patterns.push(...arg);
            else options = arg;
        }
        if (patterns.length === 0) throw new TypeError("subscribe needs at least one subject");
        for (const pattern of patterns) checkPattern(pattern);
        const group = options.group ?? null;
        if (group !== null) checkGroup(group);
        this.checkMode(patterns, group);
        let confirm!: (done: Promise<void>) => void;
        const confirmed = new Promise<void>((resolve) => (confirm = resolve as (done: Promise<void>) => void));
        const subscription = new Subscription(this, patterns, group, this.maxPending,
            () => this.transport?.canPause ?? true, confirmed);
        this.subscriptions.push(subscription);
        this.routes.clear();
        confirm(this.confirmSubscription(subscription));
        return subscription;
    }

    private async confirmSubscription(subscription: Subscription): Promise<void> {
        const { patterns, group } = subscription;
        try {
            await this.connected();
            const replies: Promise<unknown>[] = [];
            if (group !== null) {
                replies.push(this.send(`QSUB ${group} ${patterns.join(" ")}`, "int"));
            } else {
                const concrete = this.resume.canResume ? patterns.filter((p) => !isWildcard(p)) : [];
                for (const subject of concrete) {
                    const position = this.resume.position(subject);
                    replies.push(this.send(resumeLine(subject, position), this.resumeReader(subject, position, false)));
                }
                const rest = patterns.filter((p) => !concrete.includes(p));
                if (rest.length) replies.push(this.send(`SUB ${rest.join(" ")}`, "int"));
            }
            const results = await Promise.allSettled(replies);
            const failure = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
            if (failure) throw failure.reason;
        } catch (error) {
            subscription.end(error as Error);
            await this.unsubscribe(subscription).catch(() => undefined);
            throw error;
        }
    }

    private resumeReader(subject: string, position: Position | null, report: boolean): (text: string) => ResumeReply {
        return (text) => {
            const reply = parseResumeReply(text);
            const result = this.resume.answered(subject, position, reply);
            if (result && (report || result.missed !== 0 || result.recovered)) this.report(result);
            return reply;
        };
    }

    /** The server dropped `patterns` from this connection (its token no longer allows them): the subscriptions
     * holding any of them end with the error, and their other patterns no one else holds are unsubscribed. */
    private revoked(patterns: string[], error: ServerError): void {
        const gone = new Set(patterns);
        for (const subscription of this.subscriptions.filter((s) => s.patterns.some((p) => gone.has(p)))) {
            subscription.end(error);
            this.unsubscribe(subscription, gone).catch(() => undefined);
        }
    }

    /** @internal */
    async unsubscribe(subscription: Subscription, alreadyGone?: Set<string>): Promise<void> {
        const index = this.subscriptions.indexOf(subscription);
        if (index < 0) return;
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
    private checkMode(patterns: string[], group: string | null): void {
        const held = new Map<string, string | null>();
        for (const s of this.subscriptions) for (const p of s.patterns) held.set(p, s.group);
        for (const r of this.questions.responders) held.set(r.subject, r.group);
        for (const pattern of patterns) {
            const mode = held.get(pattern);
            if (mode !== undefined && mode !== group) {
                const current = mode === null ? "plainly" : `in group ${mode}`;
                throw new TypeError(`${pattern} is already subscribed ${current} on this client, `
                    + "and a connection holds a pattern in one mode only: use another client");
            }
        }
    }

    private plainPatterns(): string[] {
        const seen = new Set<string>();
        for (const s of this.subscriptions) if (s.group === null) for (const p of s.patterns) seen.add(p);
        return [...seen];
    }

    private groupPatterns(): Map<string, string[]> {
        const groups = new Map<string, Set<string>>();
        for (const s of this.subscriptions) {
            if (s.group === null) continue;
            const set = groups.get(s.group) ?? new Set<string>();
            for (const p of s.patterns) set.add(p);
            groups.set(s.group, set);
        }
        return new Map([...groups].map(([g, set]) => [g, [...set]]));
    }

    /** @internal */
    subscriptionFull(): void {
        this.fullCount++;
        this.transport?.pause();
    }

    /** @internal */
    subscriptionDrained(): void {
        this.fullCount--;
        if (this.fullCount === 0) this.transport?.resume();
    }

    // Publishing and history

    /**
     * Publishes and resolves to the receivers count. Concurrent calls are pipelined: each is written at once and
     * replies are matched in order. A payload a line cannot carry (LF, a CR at its end, over maxLine, or not
     * UTF-8 on a WebSocket) goes as BPUB (1.2).
     */
    publish(subject: string, payload: Payload): Promise<number> {
        try {
            checkSubject(subject);
        } catch (error) {
            return Promise.reject(error);
        }
        const transport = this.transport;
        if (!this.ready || !transport) return this.connected().then(() => this.publish(subject, payload));
        // Once the transport is over its high-water mark, later publishes wait for it to drain before they
        // write, so that a burst that is never awaited cannot grow the output without bound.
        if (this.blocked === transport) return transport.drained().then(() => this.publish(subject, payload));
        let command: string | Uint8Array;
        let binary = false;
        const line = typeof payload === "string" ? publishLine(subject, payload, this.maxLine) : null;
        if (line !== null) {
            command = line;
        } else {
            const bytes = toBytes(payload);
            const encoded = publishCommand(subject, bytes, this.maxLine);
            binary = encoded.binary || (transport.textOnly && typeof payload !== "string" && !isUtf8(bytes));
            command = binary && !encoded.binary
                ? concat(encode(`BPUB ${subject} ${bytes.length}\n`), bytes, NEWLINE) : encoded.bytes;
        }
        const reply = new Promise<number>((resolve, reject) => this.pending.push({ resolve, reject, reader: "int" }));
        if (!transport.write(command, binary)) {
            this.blocked = transport;
            // The reply may fail before the drain comes: the caller sees it through the chain below, so its
            // rejection is not an unhandled one meanwhile.
            reply.catch(() => undefined);
            return transport.drained().then(() => {
                if (this.blocked === transport) this.blocked = null;
                return reply;
            });
        }
        return reply;
    }

    /** The newest `count` retained messages of a concrete subject, oldest first (1.1). A later `subscribe` of
     * the subject goes on from the newest of them, with nothing repeated. */
    async last(subject: string, count = 1): Promise<Message[]> {
        checkSubject(subject);
        checkCount("a count", count, 0);
        // LAST subscribes plainly, which would take the subject out of a group this client holds it in.
        this.checkMode([subject], null);
        await this.connected();
        let gathered!: Promise<Message[]>;
        await this.send(`LAST ${subject} ${count}`, (text: string) => {
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
        if (!wanted) await this.command(`UNSUB ${subject}`, "int");
        return messages;
    }

    // Questions (1.2)

    /** Puts a question to the receivers of `subject` and gathers their answers until every one answered or
     * vanished, `max` came, or `timeout` ms passed (the server closes it). */
    async ask(subject: string, payload: Payload, options: AskOptions = {}): Promise<AskResult> {
        return this.questions.ask(subject, payload, options);
    }

    /** Answers the questions put to `subject` with `handler(question)`, which returns (or resolves to) a string
     * or bytes. Returns at once; the subscription is made in the background. */
    respond(subject: string, handler: Handler, options: SubscribeOptions = {}): Responder {
        return this.questions.respond(subject, handler, options.group ?? null);
    }

    /** The token last sent with AUTH or in the handshake (from a token function, the last one it gave). */
    get token(): string | undefined {
        return this.tokens ? this.tokens.token : this.staticToken;
    }

    // Presence (1.3)

    /** The members of a concrete subject the server keeps presence for, in join order: `count` in all, `members`
     * at most `limit` of them (the server's default 100 when not given, at most 1000). Rejects with Syntax when
     * the server keeps no presence for the subject, Denied without subscribe rights on it. */
    async who(subject: string, limit?: number): Promise<Who> {
        return this.command(whoLine(subject, limit), parseWho);
    }

    /** Closes a connection (`7`, or `node1/7` as WHO and CLIENTS show it) or, with `user=<user>`, all of a user's
     * connections; each is told `-ERR kicked <reason>` and its leaves say `reason=kicked`. Resolves to how many
     * were closed (0 when none matched). Needs an administrator's token when the server has auth on. */
    async kick(client: string | number, reason?: string): Promise<number> {
        return this.command(kickLine(client, reason), "int");
    }

    /** The joins and leaves of `subject` (a pattern such as `chat.>` watches every subject it matches) as typed
     * events, from now on: `for await (const event of client.presence("chat.room1"))`. A subscription of
     * `$presence.<subject>` underneath, resumed after a reconnect like any other; `ready` settles once the
     * server confirmed it. Throws BadSubject for a bad subject, and nothing is sent. */
    presence(subject: string): PresenceSubscription {
        return new PresenceSubscription(this.subscribe(presenceSubject(subject)), (line) => this.logger.warn(line));
    }

    // Server state and the end

    /** The server's INFO as an object; numbers as numbers. */
    async info(): Promise<Record<string, string | number>> {
        const text: string = await this.command("INFO");
        const out: Record<string, string | number> = {};
        for (const [key, value] of Object.entries(parseFields(text.split(" ")))) {
            out[key] = /^\d+$/.test(value) ? Number(value) : value;
        }
        return out;
    }

    /** Sends one command line (CHANNELS, CLIENTS, ...) and resolves to its reply after `+OK `, or rejects with
     * the server's error. For verbs this client has no method for; not for SUB, PUB and the like, whose
     * state the client keeps itself. */
    async request(line: string): Promise<string> {
        checkOneLine("a command", line);
        // An empty line gets no reply (PROTOCOL.md, Framing): the next command would be given this one's.
        if (line.trim() === "") throw new TypeError("request needs a command");
        return this.command(line);
    }

    async ping(text = ""): Promise<string> {
        checkOneLine("a PING text", text);
        return this.command(text ? `PING ${text}` : "PING");
    }

    /** Closes the connection; subscriptions end, and commands still waiting fail with Closed. */
    async close(): Promise<void> {
        if (this.closed) return;
        this.closed = true;
        if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
        this.tokens?.stop();
        this.keepAlive.stop();
        const transport = this.transport;
        transport?.close();
        this.transport = null;
        for (const subscription of this.subscriptions) subscription.end(new Closed("client closed"));
        this.wakeWaiters();
    }

    // Reports

    private report(report: ResumeReport): void {
        const lines = reportLines(report);
        for (const line of lines) {
            if (line.startsWith("missed")) this.logger.warn(`fanout: ${line}`);
            else this.logger.info(`fanout: ${line}`);
        }
        this.emit({ kind: report.reason === "reset" ? "reset" : "resumed", detail: lines.join("; "), report });
    }

    private emit(event: FanoutEvent): void {
        if (["disconnected", "gap", "server-closing", "revoked", "resubscribe-failed", "auth-expired",
            "token-failed", "kicked"].includes(event.kind)) {
            this.logger.warn(`fanout: ${event.kind}: ${event.detail}`);
        }
        try {
            this.options.onEvent?.(event);
        } catch (error) {
            this.logger.warn(`fanout: onEvent threw: ${(error as Error).message}`);
        }
    }
}

function resumeLine(subject: string, position: Position | null): string {
    return position ? `RESUME ${subject} ${position.epoch} ${position.seq}` : `RESUME ${subject}`;
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true });

function isUtf8(bytes: Uint8Array): boolean {
    try {
        strictDecoder.decode(bytes);
        return true;
    } catch {
        return false;
    }
}
