// Questions (1.2): the ones this client asks, open until their DONE, and the responders answering the ones
// put to it. Owned by the client, which hands over the ASK, ANSWER and DONE pushes and a lost connection.

import { AskResult, Question } from "./messages.js";
import { checkCount, checkGroup, checkPattern, checkSubject } from "./subjects.js";
import { concat, decode, encode, matches, NEWLINE, parseFields, Payload, toBytes } from "./protocol.js";

export interface AskOptions {
    /** Milliseconds the server keeps the question open (default 500). */
    timeout?: number;
    /** Answers after which it closes; 0 (default): no cap. */
    max?: number;
    /** Called with each answer as it arrives, before the question closes. */
    onAnswer?: (answer: { responder: string; payload: Uint8Array; text: string }) => void;
}

export type Handler = (question: Question) => Payload | Promise<Payload>;

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
export function responderLine(responder: { subject: string; group: string | null }): string {
    return responder.group !== null ? `QSUB ${responder.group} ${responder.subject}` : `SUB ${responder.subject}`;
}

/** Bound: one open question per ASK awaiting its DONE (the server allows `max_asks` per connection), and one
 * responder per `respond` call. */
export class Questions {
    readonly responders: Array<Responder & { handler: Handler }> = [];
    private open = new Map<string, { result: AskResult; resolve: (r: AskResult) => void; reject: (e: Error) => void;
        onAnswer?: AskOptions["onAnswer"] }>();

    constructor(private readonly owner: QuestionsOwner) {}

    async ask(subject: string, payload: Payload, options: AskOptions): Promise<AskResult> {
        checkSubject(subject);
        // A fraction of a millisecond is rounded up: the server counts whole ones, and 0 is not a timeout.
        const timeout = Math.ceil(options.timeout ?? 500);
        checkCount("a question's timeout", timeout, 1);
        checkCount("a question's max", options.max ?? 0, 0);
        const bytes = toBytes(payload);
        if (bytes.includes(10) || bytes[bytes.length - 1] === 13) throw new TypeError("a question's payload must fit on one line");
        let done!: Promise<AskResult>;
        const line = concat(encode(`ASK ${subject} ${timeout} ${options.max ?? 0} `), bytes, NEWLINE);
        await this.owner.command(line, (text: string) => {
            // Registered as the reply is read, so the ANSWER and DONE pushes right behind it find it.
            const [id, asked] = text.split(" ");
            const result: AskResult = { id, asked: Number(asked), answered: 0, gone: 0, answers: [] };
            done = new Promise((resolve, reject) => this.open.set(id, { result, resolve, reject, onAnswer: options.onAnswer }));
            return result;
        });
        return done;
    }

    /** `ANSWER <id> <responder> <payload>`. */
    answerPushed(line: string, frame: Uint8Array): void {
        const [, id, responder] = line.split(" ", 3);
        const payload = frame.slice(8 + id.length + responder.length + 1);
        const ask = this.open.get(id);
        if (!ask) return;
        const answer = { responder, payload, text: decode(payload) };
        ask.result.answers.push(answer);
        ask.onAnswer?.(answer);
    }

    /** `DONE <id> asked=<a> answered=<b> gone=<g>`. */
    donePushed(line: string): void {
        const words = line.split(" ");
        const ask = this.open.get(words[1]);
        if (!ask) return;
        this.open.delete(words[1]);
        const fields = parseFields(words.slice(2));
        ask.result.asked = Number(fields.asked ?? ask.result.asked);
        ask.result.answered = Number(fields.answered ?? ask.result.answers.length);
        ask.result.gone = Number(fields.gone ?? 0);
        ask.resolve(ask.result);
    }

    /** The connection is gone: open questions fail (the server closed them with it). */
    lost(error: Error): void {
        for (const ask of this.open.values()) ask.reject(error);
        this.open.clear();
    }

    respond(subject: string, handler: Handler, group: string | null): Responder {
        checkPattern(subject);
        if (group !== null) checkGroup(group);
        this.owner.checkMode([subject], group);
        let confirmed!: (done: Promise<unknown>) => void;
        const ready = new Promise<unknown>((resolve) => (confirmed = resolve)).then(() => undefined);
        // A failure is also logged: no unhandled rejection for a caller that never looks at `ready`.
        ready.catch(() => undefined);
        const responder = {
            subject,
            group,
            handler,
            ready,
            stop: async () => {
                const index = this.responders.indexOf(responder);
                if (index < 0) return;
                this.responders.splice(index, 1);
                if (!this.responders.some((r) => r.subject === subject)) await this.owner.release([subject]);
            },
        };
        this.responders.push(responder);
        const reply = this.owner.command(responderLine(responder), "int");
        reply.catch((error) => this.owner.warn(`fanout: ${error.message}`));
        confirmed(reply);
        return responder;
    }

    /** `ASK <subject> <id> <payload>`: the first responder whose subject covers it answers. */
    questionPushed(line: string, frame: Uint8Array): void {
        const [, subject, id] = line.split(" ", 3);
        const question = new Question(subject, id, frame.slice(5 + subject.length + id.length + 1));
        const responder = this.responders.find((r) => matches(r.subject, question.subject));
        if (!responder) return;
        void (async () => {
            try {
                const answer = toBytes(await responder.handler(question));
                // The server would strip a CR before the LF: the asker would get other bytes than these.
                if (answer.includes(10) || answer[answer.length - 1] === 13) {
                    throw new TypeError("an answer must fit on one line (no LF, no CR at its end)");
                }
                // `+OK 0` (a late answer) is normal, and a lost connection says nothing the asker would not learn.
                this.owner.sendQuietly(concat(encode(`ANSWER ${question.id} `), answer, NEWLINE));
            } catch (error) {
                this.owner.warn(`fanout: answering ${question.subject}: ${(error as Error).message}`);
            }
        })();
    }
}
