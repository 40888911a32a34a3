// A subscription: the patterns it holds, and the bounded queue between the connection and `for await`.
import { Closed, SlowConsumer } from "./errors.js";
/**
 * Iterate with `for await (const msg of sub)`; leaving the loop (break, return, throw) unsubscribes.
 * The queue holds at most `maxPending` messages plus what one read brings: once it is full, a socket stops
 * being read until the consumer has taken half, so a slow consumer slows the server's sending instead of
 * growing memory here. Replies queued behind those messages wait too: do not await a command on the same
 * client from inside a full subscription's loop. A browser WebSocket cannot be paused: there a subscription
 * that falls twice `maxPending` behind ends with SlowConsumer.
 */
export class Subscription {
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
