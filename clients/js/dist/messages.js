// What the client hands to the application: messages, questions, answers, and connection events.
import { decode } from "./protocol.js";
/** One message as delivered: its concrete subject, that subject's seq, and the payload's bytes. */
export class Message {
    constructor(subject, seq, payload) {
        this.subject = subject;
        this.seq = seq;
        this.payload = payload;
    }
    /** The payload as text (invalid UTF-8 replaced). */
    get text() {
        return decode(this.payload);
    }
}
/** A question put to this client by ASK (1.2); the responder's return value is the answer. */
export class Question {
    constructor(subject, id, payload) {
        this.subject = subject;
        this.id = id;
        this.payload = payload;
    }
    get text() {
        return decode(this.payload);
    }
}
