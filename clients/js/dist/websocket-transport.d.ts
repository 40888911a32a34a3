import { Frame } from "./protocol.js";
import { Opener } from "./transport.js";
/** What one WebSocket message from fanoutd holds: a text message is one line (its LF, if any, dropped); a
 * binary one a BMSG push (header, LF, bytes, LF) or a line a text frame could not carry. */
export declare function messageFrame(bytes: Uint8Array, text: boolean): Frame;
export declare function webSocketOpener(url: string): Opener;
