import { Opener } from "./transport.js";
/** TLS settings for Node: `true` for the system's CAs, or the PEM texts to use. */
export declare type TlsSettings = boolean | {
    ca?: string | Uint8Array;
    cert?: string | Uint8Array;
    key?: string | Uint8Array;
    servername?: string;
};
/** `host:port`, `[v6]:port`, a bare host (port 7411), or `unix:/path`. */
export declare function parseAddress(text: string): {
    host?: string;
    port?: number;
    path?: string;
};
export declare function nodeOpener(address: string, tlsSettings: TlsSettings | undefined, maxLine: number, maxPayload: number): Opener;
