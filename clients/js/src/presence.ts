// Presence (1.3): the members of a subject as WHO lists them, and the joins and leaves the server publishes on
// `$presence.<subject>`, read into typed values; the commands WHO and KICK as lines, checked before they are sent.

import { BadSubject, Syntax } from "./errors.js";
import { Message } from "./messages.js";
import { decode } from "./protocol.js";
import { checkCount, checkPattern, checkSubject, checkWord } from "./subjects.js";
import { Subscription } from "./subscription.js";

/** The prefix of the subjects that carry joins and leaves; a client may subscribe to them, never publish. */
export const presencePrefix = "$presence.";
/** The longest subject that keeps presence: its `$presence.` subject must still be a subject (255 bytes). */
const longestSubject = 255 - presencePrefix.length;
/** The longest KICK reason the server takes, in bytes of UTF-8: the kicked client is sent it. */
const kickReasonMax = 256;

/** One member of a subject: `id=<client>,user=<user|->,since_s=<n>[,group=<g>]`. */
export interface Member {
    /** The connection's id as CLIENTS shows it (`<node>/<id>` on several nodes): what `kick` takes. */
    client: string;
    /** The authenticated user, or null for `-`; a space, comma, `=` or control byte in it arrives as `_`. */
    user: string | null;
    /** Whole seconds it has been a member: 0 in a join; in a leave, how long it was one. */
    sinceSeconds: number;
    /** The queue group it is a member with (QSUB), or null. */
    group: string | null;
}

/** What WHO answered: `count` members in all, `members` the first of them in join order (oldest first). */
export interface Who {
    count: number;
    members: Member[];
}

/** A join or leave published on `$presence.<subject>`. */
export interface PresenceEvent {
    kind: "join" | "leave";
    member: Member;
    /** null for a join; for a leave `unsub`, `closed`, `timeout`, `slow-consumer`, `kicked`, `shutdown`,
     * `node-lost`, or a later server's word, kept as its text. */
    reason: string | null;
    /** The member's subject, without the prefix. */
    subject: string;
    /** The seq of the message that carried it, as for any subject: gaps and resumes count in it. */
    seq: number;
}

/** `key=value` fields separated by commas; null when a field has no `=`. */
function fields(word: string): Map<string, string> | null {
    const out = new Map<string, string>();
    for (const field of word.split(",")) {
        const equals = field.indexOf("=");
        if (equals < 0) return null;
        out.set(field.slice(0, equals), field.slice(equals + 1));
    }
    return out;
}

function member(named: Map<string, string>): Member {
    const client = named.get("id") ?? "";
    const user = named.get("user") ?? "";
    const since = named.get("since_s") ?? "";
    if (!client || !user || !/^\d+$/.test(since)) throw new Error("a member needs id=, user= and since_s=<digits>");
    return { client, user: user === "-" ? null : user, sinceSeconds: Number(since), group: named.get("group") || null };
}

/** Reads one member word of WHO's reply or of a join or leave; fields this version does not know are ignored,
 * so that a later server may add some. Throws when id, user or since_s is missing. */
export function parseMember(word: string): Member {
    const named = fields(word);
    if (named === null) throw new Error(`not a member: ${word.slice(0, 80)}`);
    return member(named);
}

/** WHO's reply after `+OK `: `<count> <member> ...`. */
export function parseWho(text: string): Who {
    const words = text.split(" ").filter(Boolean);
    if (!/^\d+$/.test(words[0] ?? "")) throw new Error("WHO's reply starts with the count");
    return { count: Number(words[0]), members: words.slice(1).map(parseMember) };
}

/** Reads a message of `$presence.<subject>`: `join <member>` or `leave <member>,reason=<r>`; throws when it is
 * neither. */
export function parseEvent(subject: string, seq: number, payload: Uint8Array | string): PresenceEvent {
    const text = typeof payload === "string" ? payload : decode(payload);
    const space = text.indexOf(" ");
    const kind = text.slice(0, space);
    const named = space < 0 || (kind !== "join" && kind !== "leave") ? null : fields(text.slice(space + 1));
    if (named === null) throw new Error(`not a join or leave: ${text.slice(0, 80)}`);
    const reason = kind === "leave" ? named.get("reason") || null : null;
    if (kind === "leave" && reason === null) throw new Error(`a leave without its reason: ${text.slice(0, 80)}`);
    const memberSubject = subject.startsWith(presencePrefix) ? subject.slice(presencePrefix.length) : subject;
    return { kind: kind as "join" | "leave", member: member(named), reason, subject: memberSubject, seq };
}

/** `$presence.<subject>` for a subject or pattern (`chat.>` watches every room); BadSubject for what cannot be
 * one, before anything is sent. */
export function presenceSubject(subject: string): string {
    checkPattern(subject);
    if (subject.startsWith(presencePrefix)) {
        throw new BadSubject("bad-subject", `${subject}: name the subject itself, not its $presence. subject`);
    }
    if (subject.length > longestSubject) {
        throw new BadSubject("bad-subject", `a subject that keeps presence is at most ${longestSubject} bytes`);
    }
    return presencePrefix + subject;
}

export function whoLine(subject: string, limit?: number): string {
    checkSubject(subject);
    if (limit === undefined) return `WHO ${subject}`;
    checkCount("a WHO limit", limit, 0);
    return `WHO ${subject} ${limit}`;
}

/** `KICK <client> [<reason>]`: the client as CLIENTS or WHO shows it (`7`, `node1/7`), or `user=<user>` for all of
 * a user's connections; the reason printable, at most 256 bytes. */
export function kickLine(target: string | number, reason?: string): string {
    const word = String(target);
    checkWord("a KICK client", word);
    if (reason === undefined || reason.trim() === "") return `KICK ${word}`;
    if (/[\x00-\x1f\x7f]/.test(reason) || new TextEncoder().encode(reason).length > kickReasonMax) {
        throw new Syntax("syntax", `a KICK reason is at most ${kickReasonMax} bytes, without control characters`);
    }
    return `KICK ${word} ${reason.trim()}`;
}

/**
 * The joins and leaves of a subject (or of every subject a pattern matches), as PresenceEvents: `for await (const
 * event of presence)`, or one at a time with `nextEvent(timeoutMs)`. A plain subscription of `$presence.<subject>`
 * underneath (`subscription`): a concrete subject resumes after a reconnect from the last seq seen, and what was
 * missed is reported as a "resumed" event with `missed`, or "reset": then read the member list again with `who`.
 * A message that is neither a join nor a leave is skipped and counted in `malformed`. Leaving the loop
 * unsubscribes.
 */
export class PresenceSubscription implements AsyncIterableIterator<PresenceEvent> {
    /** Messages skipped as neither a join nor a leave. */
    malformed = 0;

    constructor(readonly subscription: Subscription, private readonly warn: (line: string) => void) {}

    /** Settles when the server has confirmed the subscription. */
    get ready(): Promise<void> {
        return this.subscription.ready;
    }

    private event(message: Message): PresenceEvent | null {
        try {
            return parseEvent(message.subject, message.seq, message.payload);
        } catch (error) {
            this.malformed++;
            this.warn(`fanout: skipped ${message.subject} seq ${message.seq}: ${(error as Error).message}`);
            return null;
        }
    }

    async next(): Promise<IteratorResult<PresenceEvent>> {
        for (;;) {
            const result = await this.subscription.next();
            if (result.done) return { value: undefined, done: true };
            const event = this.event(result.value);
            if (event) return { value: event, done: false };
        }
    }

    /** The next join or leave, or an error after `timeoutMs`. */
    async nextEvent(timeoutMs = 5000): Promise<PresenceEvent> {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            const event = this.event(await this.subscription.nextMessage(Math.max(0, deadline - Date.now())));
            if (event) return event;
        }
    }

    async return(): Promise<IteratorResult<PresenceEvent>> {
        await this.unsubscribe();
        return { value: undefined, done: true };
    }

    [Symbol.asyncIterator](): AsyncIterableIterator<PresenceEvent> {
        return this;
    }

    async unsubscribe(): Promise<void> {
        await this.subscription.unsubscribe();
    }
}
