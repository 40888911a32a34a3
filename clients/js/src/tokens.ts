// Application tokens (JWT) as a client holds them: where a fresh one comes from, and when to ask for it. The
// client never verifies a token (the server does); it reads the payload's `exp` and `iat` only to refresh ahead
// of expiry, so that `AUTH <fresh>` reaches the server before it pushes `-ERR auth-expired`.

import { FanoutError, ServerError } from "./errors.js";
import { FanoutEvent } from "./messages.js";
import { checkWord } from "./subjects.js";

/** Returns a token, or a promise of one (from the application's backend, say), as Centrifugo's `getToken`. */
export type TokenFunction = () => string | Promise<string>;

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
export class TokenError extends FanoutError {
    constructor(message: string, readonly cause?: unknown) {
        super(message);
    }
}

/** Calls the token function and checks what it gives. */
export async function fetchToken(source: TokenFunction): Promise<string> {
    let token: unknown;
    try {
        token = await source();
    } catch (error) {
        throw new TokenError(`the token function failed: ${(error as Error)?.message ?? String(error)}`, error);
    }
    try {
        checkWord("a token", token as string);
    } catch {
        throw new TokenError(`the token function gave ${typeof token}, not a token (one word of printable ASCII)`);
    }
    return token as string;
}

/** Whether a token has the form of a JWT (three base64url parts), which a WebSocket handshake may carry. */
export function isJwt(token: string): boolean {
    return token.length <= maxToken && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

/** The JWT payload, unverified; null for a token that is not a JWT (a static token). */
export function claims(token: string): Record<string, unknown> | null {
    if (!isJwt(token)) return null;
    const body = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    try {
        const text = new TextDecoder().decode(Uint8Array.from(atob(body + "=".repeat(-body.length & 3)),
            (c) => c.charCodeAt(0)));
        const value: unknown = JSON.parse(text);
        return typeof value === "object" && value !== null && !Array.isArray(value)
            ? value as Record<string, unknown> : null;
    } catch {
        return null;
    }
}

/** Milliseconds from `now` (ms since the epoch) until the token should be refreshed, or null when it does not
 * expire (no `exp`, or not a JWT); 0 when it is already due. */
export function refreshIn(token: string, now: number): number | null {
    const payload = claims(token);
    const expiry = payload?.exp;
    if (typeof expiry !== "number") return null;
    const issued = payload?.iat;
    const start = typeof issued === "number" && issued < expiry ? issued * 1000 : now;
    const lifetime = Math.max(expiry * 1000 - start, 0);
    const margin = Math.min(Math.max(lifetime * refreshShare, refreshAtLeast), refreshAtMost, lifetime / 2);
    return Math.max(expiry * 1000 - margin - now, 0);
}

/** Milliseconds before retry `attempt` (1, 2, ...) of a failed refresh. */
export function retryDelay(attempt: number): number {
    return Math.min(1000 * 2 ** Math.min(attempt - 1, 16), retryAtMost);
}

/** The tokens of a token function for one client: the current one, the timer of the next refresh (ahead of its
 * `exp`), and the refresh under way. A refresh sends `AUTH <fresh>` through `sendAuth` on the live connection;
 * a failure (the function threw, or the server refused the token) is reported as a "token-failed" event and
 * retried after 1, 2, 4 ... s while `live()`; a reconnect calls `fetch` itself. Bound: one timer and one
 * refresh per client, whatever the server pushes. */
export class Refresher {
    token: string | undefined = undefined;
    private timer: ReturnType<typeof setTimeout> | null = null;
    private refreshing = false;
    private stopped = false;

    constructor(private readonly source: TokenFunction, private readonly sendAuth: (token: string) => Promise<unknown>,
        private readonly report: (kind: FanoutEvent["kind"], detail: string) => void,
        private readonly live: () => boolean) {}

    /** A fresh token for a new connection (TokenError when there is none). */
    async fetch(): Promise<string> {
        this.token = await fetchToken(this.source);
        return this.token;
    }

    /** Sets the timer of the next refresh from the current token's `exp`, if it has one. */
    schedule(): void {
        this.pause();
        const delay = this.token === undefined || this.stopped ? null : refreshIn(this.token, Date.now());
        if (delay === null) return;
        // At least a second: a token already near its exp must not turn into a loop of refreshes.
        this.wait(Math.max(delay, 1000), () => this.refreshNow());
    }

    refreshNow(): void {
        if (this.refreshing || this.stopped) return;
        this.refreshing = true;
        void this.refresh().finally(() => (this.refreshing = false));
    }

    /** No refresh by the timer (the connection went; the next one schedules again). */
    pause(): void {
        if (this.timer) clearTimeout(this.timer);
        this.timer = null;
    }

    stop(): void {
        this.stopped = true;
        this.pause();
    }

    private wait(ms: number, then: () => void): void {
        this.timer = setTimeout(then, ms);
        // Node's timers have unref(): a refresh never keeps a process alive by itself.
        (this.timer as { unref?: () => void }).unref?.();
    }

    private async refresh(): Promise<void> {
        for (let attempt = 1; !this.stopped && this.live(); attempt++) {
            let token: string;
            try {
                token = await fetchToken(this.source);
                await this.sendAuth(token);
            } catch (error) {
                if (!(error instanceof TokenError || error instanceof ServerError)) return; // connection gone
                const delay = retryDelay(attempt);
                this.report("token-failed", `token refresh failed: ${error.message}; retrying in ${delay / 1000}s`);
                await new Promise<void>((resolve) => this.wait(delay, resolve));
                continue;
            }
            const same = token === this.token;
            this.token = token;
            this.report("token-refreshed", "sent AUTH with a fresh token");
            // The same token again (a function that caches it) would be due again at once: the server's
            // auth-expired push asks for the next one instead.
            if (!same) this.schedule();
            return;
        }
    }
}
