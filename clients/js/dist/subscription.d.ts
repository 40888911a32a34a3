import { Message } from "./messages.js";
/** What a subscription needs from its client. */
export interface SubscriptionOwner {
    subscriptionFull(subscription: Subscription): void;
    subscriptionDrained(subscription: Subscription): void;
    unsubscribe(subscription: Subscription): Promise<void>;
}
/**
 * Iterate with `for await (const msg of sub)`; leaving the loop (break, return, throw) unsubscribes.
 * The queue holds at most `maxPending` messages plus what one read brings: once it is full, a socket stops
 * being read until the consumer has taken half, so a slow consumer slows the server's sending instead of
 * growing memory here. Replies queued behind those messages wait too: do not await a command on the same
 * client from inside a full subscription's loop. A browser WebSocket cannot be paused: there a subscription
 * that falls twice `maxPending` behind ends with SlowConsumer.
 */
export declare class Subscription implements AsyncIterableIterator<Message> {
    private readonly owner;
    readonly patterns: readonly string[];
    readonly group: string | null;
    private readonly maxPending;
    private readonly canPause;
    /** Settles when the server has confirmed every pattern (rejects with the server's error otherwise). */
    readonly ready: Promise<void>;
    full: boolean;
    private queue;
    private head;
    private waiter;
    private ended;
    constructor(owner: SubscriptionOwner, patterns: readonly string[], group: string | null, maxPending: number, canPause: () => boolean, confirmed: Promise<void>);
    get pending(): number;
    /** @internal */
    push(message: Message): void;
    /** @internal No more messages: closed, unsubscribed, or the connection lost for good. */
    end(error: Error): void;
    next(): Promise<IteratorResult<Message>>;
    private finished;
    /** Resolves true once a message or the end comes, false after `timeoutMs`; a wait that timed out no longer
     * listens, so the message that comes later is left for the next reader instead of being taken by nobody. */
    private wait;
    private take;
    /** The next message, or an error after `timeoutMs`. */
    nextMessage(timeoutMs?: number): Promise<Message>;
    return(): Promise<IteratorResult<Message>>;
    [Symbol.asyncIterator](): AsyncIterableIterator<Message>;
    /** Drops this subscription's patterns (those no other subscription holds); iteration ends once the queued
     * messages are taken. */
    unsubscribe(): Promise<void>;
    private wake;
}
