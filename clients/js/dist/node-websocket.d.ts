import { Opener } from "./transport.js";
import type { TlsSettings } from "./node-transport.js";
export declare function nodeWebSocketOpener(url: string, tlsSettings: TlsSettings | undefined, maxMessage: number): Opener;
