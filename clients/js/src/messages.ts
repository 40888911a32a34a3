// What the client hands to the application: messages, questions, answers, and connection events.

import { decode } from "./protocol.js";
import { ResumeReport } from "./resume.js";

/** One message as delivered: its concrete subject, that subject's seq, and the payload's bytes. */
export class Message {
    constructor(readonly subject: string, readonly seq: number, readonly payload: Uint8Array) {}

    /** The payload as text (invalid UTF-8 replaced). */
    get text(): string {
        return decode(this.payload);
    }
}

/** A question put to this client by ASK (1.2); the responder's return value is the answer. */
export class Question {
    constructor(readonly subject: string, readonly id: string, readonly payload: Uint8Array) {}

    get text(): string {
        return decode(this.payload);
    }
}

export interface Answer {
    /** The answering connection's id as CLIENTS shows it (`<node>/<id>` on several nodes). */
    responder: string;
    payload: Uint8Array;
    text: string;
}

/** What `ask` gathered: the answers in arrival order; `asked` connections were asked, `gone` of them vanished
 * before answering. */
export interface AskResult {
    id: string;
    asked: number;
    answered: number;
    gone: number;
    answers: Answer[];
}

/** A connection event, for `onEvent`. `report` is set for "resumed" and "reset". "auth-expired": the server's
 * push of that name; "token-refreshed": a fresh token was accepted by AUTH; "token-failed": the token function
 * failed or the server refused its token (retried with backoff); "kicked": the push `-ERR kicked <reason>` (the
 * reason in `detail`), after which the client does not reconnect. */
export interface FanoutEvent {
    kind: "connected" | "disconnected" | "reconnecting" | "resumed" | "reset" | "gap" | "server-closing" | "revoked"
        | "resubscribe-failed" | "slow-consumer" | "auth-expired" | "token-refreshed" | "token-failed" | "kicked";
    detail: string;
    report?: ResumeReport;
}
