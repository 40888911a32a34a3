// The few Node APIs the TCP transport uses, declared here because the package has no dependencies (not even
// type packages). Not shipped: no public type mentions them.
declare module "node:net" {
    export interface Socket {
        write(data: Uint8Array | string): boolean;
        on(event: string, listener: (...args: any[]) => void): this;
        once(event: string, listener: (...args: any[]) => void): this;
        removeListener(event: string, listener: (...args: any[]) => void): this;
        pause(): this;
        resume(): this;
        destroy(error?: Error): this;
        end(): this;
        setNoDelay(noDelay?: boolean): this;
        cork(): void;
        readonly writableNeedDrain: boolean;
        uncork(): void;
    }
    export function createConnection(options: { host?: string; port?: number; path?: string }): Socket;
}

declare module "node:tls" {
    import { Socket } from "node:net";
    export interface ConnectionOptions {
        host?: string;
        port?: number;
        servername?: string;
        ca?: string | Uint8Array | Array<string | Uint8Array>;
        cert?: string | Uint8Array;
        key?: string | Uint8Array;
        rejectUnauthorized?: boolean;
    }
    export function connect(options: ConnectionOptions): Socket;
}

declare module "node:crypto" {
    export function randomBytes(size: number): Uint8Array;
    export function createHash(algorithm: string): { update(data: string): { digest(encoding: "base64"): string } };
}
