import { AskResult, Question } from "./messages.js";
import { Payload } from "./protocol.js";
export interface AskOptions {
    /** Milliseconds the server keeps the question open (default 500). */
    timeout?: number;
    /** Answers after which it closes; 0 (default): no cap. */
    max?: number;
    /** Called with each answer as it arrives, before the question closes. */
    onAnswer?: (answer: {
        responder: string;
        payload: Uint8Array;
        text: string;
    }) => void;
}
export declare type Handler = (question: Question) => Payload | Promise<Payload>;
/** A handler answering the questions put to a subject. */
export interface Responder {
    subject: string;
    group: string | null;
    /** Settles when the server has confirmed the subscription: questions asked from then on reach it. */
    ready: Promise<void>;
    stop(): Promise<void>;
}
/** What the questions need from their client. */
export interface QuestionsOwner {
    /** Sends a command once connected; resolves to what `read` makes of the reply after `+OK `. */
    command(line: Uint8Array | string, read: "int" | ((text: string) => unknown)): Promise<unknown>;
    /** Sends a command whose reply nobody waits for, if there is a connection. */
    sendQuietly(line: Uint8Array): void;
    /** Unsubscribes these patterns unless a subscription still holds them. */
    release(patterns: string[]): Promise<void>;
    warn(line: string): void;
    /** Throws when the client holds the pattern in another mode (plainly, or in another group). */
    checkMode(patterns: string[], group: string | null): void;
}
/** The command that subscribes a responder: plainly, or as a member of its group. */
export declare function responderLine(responder: {
    subject: string;
    group: string | null;
}): string;
/** Bound: one open question per ASK awaiting its DONE (the server allows `max_asks` per connection), and one
 * responder per `respond` call. */
export declare class Questions {
    private readonly owner;
    readonly responders: Array<Responder & {
        handler: Handler;
    }>;
    private open;
    constructor(owner: QuestionsOwner);
    ask(subject: string, payload: Payload, options: AskOptions): Promise<AskResult>;
    /** `ANSWER <id> <responder> <payload>`. */
    answerPushed(line: string, frame: Uint8Array): void;
    /** `DONE <id> asked=<a> answered=<b> gone=<g>`. */
    donePushed(line: string): void;
    /** The connection is gone: open questions fail (the server closed them with it). */
    lost(error: Error): void;
    respond(subject: string, handler: Handler, group: string | null): Responder;
    /** `ASK <subject> <id> <payload>`: the first responder whose subject covers it answers. */
    questionPushed(line: string, frame: Uint8Array): void;
}
