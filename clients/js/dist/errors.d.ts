/** Base of every error this package throws. */
export declare class FanoutError extends Error {
    constructor(message: string);
}
/** The server answered `-ERR <code> <text>`; `code` and `text` are the server's words. */
export declare class ServerError extends FanoutError {
    readonly code: string;
    readonly text: string;
    constructor(code: string, text: string);
}
export declare class UnknownCommand extends ServerError {
}
export declare class Syntax extends ServerError {
}
export declare class BadSubject extends ServerError {
}
export declare class TooLong extends ServerError {
}
export declare class Limit extends ServerError {
}
export declare class Denied extends ServerError {
}
export declare class AuthRequired extends ServerError {
}
export declare class Unavailable extends ServerError {
}
export declare class SlowConsumer extends ServerError {
}
export declare class ShuttingDown extends ServerError {
}
export declare class IdleTimeout extends ServerError {
}
/** Codes the server sends only when it closes the connection on its own, never as a reply. */
export declare const closingCodes: Set<string>;
/** The error for `-ERR <code> <text>`; an unknown code still gives a ServerError. */
export declare function serverError(code: string, text: string): ServerError;
/** The server could not be reached, or refused the connection before greeting it. */
export declare class CannotConnect extends FanoutError {
}
/** The connection dropped before this command's reply came. The command may or may not have taken effect (a
 * PUB may have been delivered), so the client never sends it again. */
export declare class ConnectionLost extends FanoutError {
}
/** The client was closed by its owner. */
export declare class Closed extends FanoutError {
}
/** The server sent something that is not Fanout protocol version 1. */
export declare class ProtocolViolation extends FanoutError {
}
