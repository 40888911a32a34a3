// Waiting for a Node socket's output to drain, shared by the TCP and the WebSocket transports.

import type * as net from "node:net";

/** One promise for every writer waiting on the socket's drain, settled at the drain or when the connection
 * closes (`release`), so that no writer waits for a drain that may never come. */
export class DrainWaiter {
    private waiting: Promise<void> | null = null;
    private settle: (() => void) | null = null;

    constructor(private readonly socket: net.Socket) {}

    /** Resolves once the socket has drained: at once when it need not, or when the connection is closed. */
    wait(closed: boolean): Promise<void> {
        if (!this.socket.writableNeedDrain || closed) return Promise.resolve();
        this.waiting ??= new Promise<void>((done) => {
            this.settle = () => {
                this.waiting = null;
                this.settle = null;
                done();
            };
            this.socket.once("drain", () => this.settle?.());
        });
        return this.waiting;
    }

    /** The connection closed: the writers waiting go on. */
    release(): void {
        this.settle?.();
    }
}
