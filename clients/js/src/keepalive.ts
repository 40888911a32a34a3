// fanoutd drops a connection that holds no subscription after idle_unsubscribed_timeout (60 s by default)
// without input, with -ERR idle-timeout: a client that only publishes or asks, and is quiet for a while, did
// nothing wrong. While it holds no subscription the client sends a PING every `interval` ms, so the server hears
// from it at least that often; a subscribed connection is left to idle_timeout, which the operator chose.

/** Runs `tick` every `interval` ms from start() to stop(); it never keeps a Node process alive by itself. */
export class KeepAlive {
    private timer: ReturnType<typeof setInterval> | null = null;

    constructor(private readonly interval: number, private readonly tick: () => void) {}

    start(): void {
        if (this.timer !== null || !(this.interval > 0)) return;
        this.timer = setInterval(this.tick, this.interval);
        // Node's timers have unref(); a browser's are numbers, and a page does not wait for them anyway.
        (this.timer as { unref?: () => void }).unref?.();
    }

    stop(): void {
        if (this.timer !== null) clearInterval(this.timer);
        this.timer = null;
    }
}

/** A third of fanoutd's default idle_unsubscribed_timeout, so that a PING comes well within it. */
export const defaultKeepAlive = 20000;
