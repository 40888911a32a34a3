// What the client knows of each concrete subject it receives, so that a reconnect repeats nothing and loses
// nothing the server still has. Pure bookkeeping, no I/O: the client reports greetings, RESUME/LAST replies,
// RESET pushes and messages, and sends what restorePlan says. It follows the Swift client's ResumeState.
//
// Seqs are only compared within one epoch. A server without epochs (before 1.1) gets no duplicate dropping,
// and any seq other than the next one is a gap.
//
// Bound: one entry per concrete subject subscribed to or delivered under a live subscription; forget() drops
// the entries no subscription covers any more.
import { isWildcard, matches } from "./protocol.js";
/** The lines the `fanout` CLI prints for the same report. */
export function reportLines(report) {
    const out = [];
    const { subject, recovered, missed } = report;
    if (recovered)
        out.push(`recovered ${recovered} message${recovered === 1 ? "" : "s"} on ${subject}`);
    const why = report.reason === "resume" ? "history too short" : "reset by the server";
    if (missed === null)
        out.push(`missed messages on ${subject} (unknown: the server's numbering restarted)`);
    else if (missed)
        out.push(`missed ${missed} message${missed === 1 ? "" : "s"} on ${subject} (${why})`);
    return out;
}
export class ResumeState {
    constructor() {
        this.entries = new Map();
        this.epoch = null;
        this.connection = 0;
    }
    get canResume() {
        return this.epoch !== null;
    }
    connected(epoch) {
        this.connection++;
        this.epoch = epoch;
    }
    /** After a reconnect: the RESUME lines to send first (one per concrete subject), then the patterns to SUB
     * (only the wildcards when the server resumes, everything when it does not). */
    restorePlan(patterns) {
        if (!this.canResume)
            return { resumes: [], patterns };
        const wildcards = patterns.filter(isWildcard);
        const subjects = new Set(patterns.filter((p) => !isWildcard(p)));
        for (const subject of this.entries.keys())
            if (covers(wildcards, subject))
                subjects.add(subject);
        const resumes = [...subjects].sort().map((subject) => ({ subject, position: this.position(subject) }));
        return { resumes, patterns: wildcards };
    }
    position(subject) {
        const entry = this.entries.get(subject);
        return entry && entry.epoch !== null ? { epoch: entry.epoch, seq: entry.last } : null;
    }
    /** What to do with a message, and the seq that was expected. */
    observe(subject, seq) {
        const entry = this.entries.get(subject);
        if (!entry) {
            // Joining mid-stream: the first seq is taken as given, in the greeting's epoch.
            this.entries.set(subject, { epoch: this.epoch, last: seq, seenOn: this.connection, subscribedOn: null });
            return ["deliver", seq];
        }
        if (entry.seenOn !== this.connection) {
            // Not resumed on this connection (its RESUME failed, or the server has no epochs).
            entry.seenOn = this.connection;
            if (this.epoch !== null && entry.epoch !== this.epoch) {
                this.entries.set(subject, { epoch: this.epoch, last: seq, seenOn: this.connection, subscribedOn: null });
                return ["restarted", seq];
            }
            entry.epoch = this.epoch;
        }
        const last = entry.last;
        if (seq <= last && entry.epoch !== null)
            return ["duplicate", last + 1];
        entry.last = seq;
        return [seq === last + 1 ? "deliver" : "gap", last + 1];
    }
    /** Takes in a RESUME or LAST reply; `asked` is the position a RESUME gave (null for a RESUME without one,
     * and for LAST). Returns the report for a RESUME that gave a position. */
    answered(subject, asked, reply) {
        const start = Math.max(reply.seq - reply.replayed, 0);
        const fresh = { epoch: reply.epoch, last: start, seenOn: this.connection, subscribedOn: this.connection };
        let known = this.entries.get(subject);
        if (known && !(known.epoch === reply.epoch && known.last <= reply.seq))
            known = undefined;
        const entry = { ...fresh, last: known ? Math.max(known.last, start) : start };
        if (asked === null) {
            this.entries.set(subject, entry);
            return null;
        }
        if (reply.missed === null || reply.epoch !== asked.epoch || !known) {
            this.entries.set(subject, fresh);
            return { subject, recovered: reply.replayed, missed: null, reason: "resume" };
        }
        this.entries.set(subject, entry);
        return { subject, recovered: reply.replayed, missed: reply.missed, reason: "resume" };
    }
    /** A RESET push: the subject's next message is `seq + 1` in `epoch`. */
    reset(push) {
        const subscribedOn = this.entries.get(push.subject)?.subscribedOn ?? null;
        this.entries.set(push.subject, { epoch: push.epoch, last: push.seq, seenOn: this.connection, subscribedOn });
        return { subject: push.subject, recovered: 0, missed: push.missed, reason: "reset" };
    }
    /** Subjects subscribed on this connection only because a restore resumed them under a wildcard now
     * dropped: they are unsubscribed along with it. */
    implicitSubscriptions(dropped, remaining) {
        const out = [];
        for (const [subject, entry] of this.entries) {
            if (entry.subscribedOn === this.connection && !remaining.includes(subject) && !dropped.includes(subject)
                && covers(dropped, subject) && !covers(remaining, subject))
                out.push(subject);
        }
        return out.sort();
    }
    forget(remaining) {
        for (const subject of [...this.entries.keys()])
            if (!covers(remaining, subject))
                this.entries.delete(subject);
    }
}
function covers(patterns, subject) {
    return patterns.some((pattern) => matches(pattern, subject));
}
