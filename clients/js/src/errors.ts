/** Base of every error this package throws. */
export class FanoutError extends Error {
    constructor(message: string) {
        super(message);
        this.name = new.target.name;
    }
}

/** The server answered `-ERR <code> <text>`; `code` and `text` are the server's words. */
export class ServerError extends FanoutError {
    readonly code: string;
    readonly text: string;

    constructor(code: string, text: string) {
        super(`${code} ${text}`.trim());
        this.code = code;
        this.text = text;
    }
}

export class UnknownCommand extends ServerError {}
export class Syntax extends ServerError {}
export class BadSubject extends ServerError {}
export class TooLong extends ServerError {}
export class Limit extends ServerError {}
export class Denied extends ServerError {}
export class AuthRequired extends ServerError {}
export class Unavailable extends ServerError {}
export class SlowConsumer extends ServerError {}
export class ShuttingDown extends ServerError {}
export class IdleTimeout extends ServerError {}

/** The push `-ERR kicked <reason>` (1.3): an administrator closed this connection with KICK. Final: the client
 * does not reconnect, and its subscriptions and later commands end with this error. */
export class Kicked extends ServerError {
    get reason(): string {
        return this.text;
    }
}

const byCode: Record<string, new (code: string, text: string) => ServerError> = {
    "unknown-command": UnknownCommand,
    syntax: Syntax,
    "bad-subject": BadSubject,
    "too-long": TooLong,
    limit: Limit,
    denied: Denied,
    "auth-required": AuthRequired,
    unavailable: Unavailable,
    "slow-consumer": SlowConsumer,
    "shutting-down": ShuttingDown,
    "idle-timeout": IdleTimeout,
    kicked: Kicked,
};

/** Codes the server sends only when it closes the connection on its own, never as a reply. */
export const closingCodes = new Set(["slow-consumer", "shutting-down", "idle-timeout"]);

/** The error for `-ERR <code> <text>`; an unknown code still gives a ServerError. */
export function serverError(code: string, text: string): ServerError {
    const Kind = byCode[code] ?? ServerError;
    return new Kind(code, text);
}

/** The server could not be reached, or refused the connection before greeting it. */
export class CannotConnect extends FanoutError {}

/** The connection dropped before this command's reply came. The command may or may not have taken effect (a
 * PUB may have been delivered), so the client never sends it again. */
export class ConnectionLost extends FanoutError {}

/** The client was closed by its owner. */
export class Closed extends FanoutError {}

/** The server sent something that is not Fanout protocol version 1. */
export class ProtocolViolation extends FanoutError {}
