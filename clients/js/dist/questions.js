// Questions (1.2): the ones this client asks, open until their DONE, and the responders answering the ones
// put to it. Owned by the client, which hands over the ASK, ANSWER and DONE pushes and a lost connection.
import { Question } from "./messages.js";
import { checkCount, checkGroup, checkPattern, checkSubject } from "./subjects.js";
import { concat, decode, encode, matches, NEWLINE, parseFields, toBytes } from "./protocol.js";
/** The command that subscribes a responder: plainly, or as a member of its group. */
export function responderLine(responder) {
    return responder.group !== null ? `QSUB ${responder.group} ${responder.subject}` : `SUB ${responder.subject}`;
}
/** Bound: one open question per ASK awaiting its DONE (the server allows `max_asks` per connection), and one
 * responder per `respond` call. */
export class Questions {
    constructor(owner) {
        this.owner = owner;
        this.responders = [];
        this.open = new Map();
    }
    async ask(subject, payload, options) {
        checkSubject(subject);
        // A fraction of a millisecond is rounded up: the server counts whole ones, and 0 is not a timeout.
        const timeout = Math.ceil(options.timeout ?? 500);
        checkCount("a question's timeout", timeout, 1);
        checkCount("a question's max", options.max ?? 0, 0);
        const bytes = toBytes(payload);
        if (bytes.includes(10) || bytes[bytes.length - 1] === 13)
            throw new TypeError("a question's payload must fit on one line");
        let done;
        const line = concat(encode(`ASK ${subject} ${timeout} ${options.max ?? 0} `), bytes, NEWLINE);
        await this.owner.command(line, (text) => {
            // Registered as the reply is read, so the ANSWER and DONE pushes right behind it find it.
            const [id, asked] = text.split(" ");
            const result = { id, asked: Number(asked), answered: 0, gone: 0, answers: [] };
            done = new Promise((resolve, reject) => this.open.set(id, { result, resolve, reject, onAnswer: options.onAnswer }));
            return result;
        });
        return done;
    }
    /** `ANSWER <id> <responder> <payload>`. */
    answerPushed(line, frame) {
        const [, id, responder] = line.split(" ", 3);
        const payload = frame.slice(8 + id.length + responder.length + 1);
        const ask = this.open.get(id);
        if (!ask)
            return;
        const answer = { responder, payload, text: decode(payload) };
        ask.result.answers.push(answer);
        ask.onAnswer?.(answer);
    }
    /** `DONE <id> asked=<a> answered=<b> gone=<g>`. */
    donePushed(line) {
        const words = line.split(" ");
        const ask = this.open.get(words[1]);
        if (!ask)
            return;
        this.open.delete(words[1]);
        const fields = parseFields(words.slice(2));
        ask.result.asked = Number(fields.asked ?? ask.result.asked);
        ask.result.answered = Number(fields.answered ?? ask.result.answers.length);
        ask.result.gone = Number(fields.gone ?? 0);
        ask.resolve(ask.result);
    }
    /** The connection is gone: open questions fail (the server closed them with it). */
    lost(error) {
        for (const ask of this.open.values())
            ask.reject(error);
        this.open.clear();
    }
    respond(subject, handler, group) {
        checkPattern(subject);
        if (group !== null)
            checkGroup(group);
        this.owner.checkMode([subject], group);
        let confirmed;
        const ready = new Promise((resolve) => (confirmed = resolve)).then(() => undefined);
        // A failure is also logged: no unhandled rejection for a caller that never looks at `ready`.
        ready.catch(() => undefined);
        const responder = {
            subject,
            group,
            handler,
            ready,
            stop: async () => {
                const index = this.responders.indexOf(responder);
                if (index < 0)
                    return;
                this.responders.splice(index, 1);
                if (!this.responders.some((r) => r.subject === subject))
                    await this.owner.release([subject]);
            },
        };
        this.responders.push(responder);
        const reply = this.owner.command(responderLine(responder), "int");
        reply.catch((error) => this.owner.warn(`fanout: ${error.message}`));
        confirmed(reply);
        return responder;
    }
    /** `ASK <subject> <id> <payload>`: the first responder whose subject covers it answers. */
    questionPushed(line, frame) {
        const [, subject, id] = line.split(" ", 3);
        const question = new Question(subject, id, frame.slice(5 + subject.length + id.length + 1));
        const responder = this.responders.find((r) => matches(r.subject, question.subject));
        if (!responder)
            return;
        void (async () => {
            try {
                const answer = toBytes(await responder.handler(question));
                // The server would strip a CR before the LF: the asker would get other bytes than these.
                if (answer.includes(10) || answer[answer.length - 1] === 13) {
                    throw new TypeError("an answer must fit on one line (no LF, no CR at its end)");
                }
                // `+OK 0` (a late answer) is normal, and a lost connection says nothing the asker would not learn.
                this.owner.sendQuietly(concat(encode(`ANSWER ${question.id} `), answer, NEWLINE));
            }
            catch (error) {
                this.owner.warn(`fanout: answering ${question.subject}: ${error.message}`);
            }
        })();
    }
}
