import { AskResult, FanoutEvent, Message } from "./messages.js";
import { AskOptions, Handler, Responder } from "./questions.js";
import { Greeting, Payload } from "./protocol.js";
import { Subscription, SubscriptionOwner } from "./subscription.js";
import { Opener } from "./transport.js";
/** Exponential backoff with jitter: attempt n waits about `initial * 2^(n-1)` ms, capped at `maximum`, scaled
 * by a random factor in `1 - jitter ... 1 + jitter` so that clients cut off together do not return together. */
export interface Backoff {
    initial?: number;
    maximum?: number;
    jitter?: number;
}
export interface ClientOptions {
    /** Sent with AUTH right after each greeting. */
    token?: string;
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
    /** Where report lines go ("fanout: missed 2 messages on orders ..."); default: console.warn for losses. */
    logger?: {
        info(line: string): void;
        warn(line: string): void;
    };
}
export interface SubscribeOptions {
    /** Subscribe as a member of this queue group (1.2). */
    group?: string;
}
export declare class Client implements SubscriptionOwner {
    readonly address: string;
    private readonly open;
    private readonly options;
    greeting: Greeting | null;
    private transport;
    private greeted;
    /** One entry per command sent and not yet answered, in sending order. Bound: the commands the application
     * has in flight. */
    private pending;
    private pendingHead;
    private ready;
    private readyWaiters;
    private closed;
    private reconnecting;
    private reconnectTimer;
    private readonly resume;
    private subscriptions;
    /** Which subscriptions each subject reaches; cleared whenever a subscription comes or goes, and when it holds
     * routesKept subjects (a wildcard can reach any number). */
    private routes;
    private fullCount;
    private lastSubjectBytes;
    private lastSubject;
    /** The transport whose last write went over its high-water mark, until it drains. */
    private blocked;
    /** LAST replays being gathered. */
    private collectors;
    private readonly questions;
    private readonly timeout;
    private readonly maxLine;
    private readonly maxPending;
    private readonly backoff;
    private readonly logger;
    /** Use `connect()`. */
    constructor(address: string, open: Opener, options: ClientOptions);
    /** @internal Connects, reads the greeting and authenticates; the connection becomes the client's. */
    start(): Promise<void>;
    /** @internal */
    markReady(): void;
    private onLost;
    private wakeWaiters;
    private reconnect;
    /** Resubscribes after a reconnect: each concrete subject with RESUME from its last delivered seq (nothing
     * repeated, what is gone counted), then the wildcards, the groups and the responders. */
    private restore;
    /** Writes one command now; the promise settles with its reply. */
    private send;
    /** Waits, up to the timeout, for a connection that is restored and ready for commands. */
    private connected;
    private command;
    private onFrame;
    /** The subject in `frame` from `start` to `end`: the last one's string again when the bytes are the same,
     * as they are for a stream of one subject's messages, so that a message costs no string of its own. */
    private subjectAt;
    private reply;
    private error;
    private deliver;
    /**
     * Subscribes to subjects and patterns (`news.*`, `alerts.>`), or with `{ group }` as a member of that queue
     * group (1.2). Returns at once; `sub.ready` settles when the server has confirmed. Concrete subjects are
     * subscribed with RESUME, from the position `last` left if any.
     */
    subscribe(...args: Array<string | string[] | SubscribeOptions>): Subscription;
    private confirmSubscription;
    private resumeReader;
    /** @internal */
    unsubscribe(subscription: Subscription): Promise<void>;
    /** Refuses a pattern this client already holds in another mode (plainly, or in another group): the
     * connection holds each pattern once, and a second SUB or QSUB of it would silently move the first
     * subscription's pattern into the new mode (PROTOCOL.md, Groups). */
    private checkMode;
    private plainPatterns;
    private groupPatterns;
    /** @internal */
    subscriptionFull(): void;
    /** @internal */
    subscriptionDrained(): void;
    /**
     * Publishes and resolves to the receivers count. Concurrent calls are pipelined: each is written at once and
     * replies are matched in order. A payload a line cannot carry (LF, a CR at its end, over maxLine, or not
     * UTF-8 on a WebSocket) goes as BPUB (1.2).
     */
    publish(subject: string, payload: Payload): Promise<number>;
    /** The newest `count` retained messages of a concrete subject, oldest first (1.1). A later `subscribe` of
     * the subject goes on from the newest of them, with nothing repeated. */
    last(subject: string, count?: number): Promise<Message[]>;
    /** Puts a question to the receivers of `subject` and gathers their answers until every one answered or
     * vanished, `max` came, or `timeout` ms passed (the server closes it). */
    ask(subject: string, payload: Payload, options?: AskOptions): Promise<AskResult>;
    /** Answers the questions put to `subject` with `handler(question)`, which returns (or resolves to) a string
     * or bytes. Returns at once; the subscription is made in the background. */
    respond(subject: string, handler: Handler, options?: SubscribeOptions): Responder;
    /** The server's INFO as an object; numbers as numbers. */
    info(): Promise<Record<string, string | number>>;
    /** Sends one command line (CHANNELS, CLIENTS, ...) and resolves to its reply after `+OK `, or rejects with
     * the server's error. For verbs this client has no method for; not for SUB, PUB and the like, whose
     * state the client keeps itself. */
    request(line: string): Promise<string>;
    ping(text?: string): Promise<string>;
    /** Closes the connection; subscriptions end, and commands still waiting fail with Closed. */
    close(): Promise<void>;
    private report;
    private emit;
}
