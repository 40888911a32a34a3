import { Reset, ResumeReply } from "./protocol.js";
/** What a resume after a reconnect, or a RESET push, said of one subject. `missed` is null when unknown (the
 * subject's numbering restarted). */
export interface ResumeReport {
    subject: string;
    recovered: number;
    missed: number | null;
    reason: "resume" | "reset";
}
/** The lines the `fanout` CLI prints for the same report. */
export declare function reportLines(report: ResumeReport): string[];
export declare type Verdict = "deliver" | "duplicate" | "gap" | "restarted";
export declare type Position = {
    epoch: string;
    seq: number;
};
export declare class ResumeState {
    private entries;
    epoch: string | null;
    private connection;
    get canResume(): boolean;
    connected(epoch: string | null): void;
    /** After a reconnect: the RESUME lines to send first (one per concrete subject), then the patterns to SUB
     * (only the wildcards when the server resumes, everything when it does not). */
    restorePlan(patterns: string[]): {
        resumes: {
            subject: string;
            position: Position | null;
        }[];
        patterns: string[];
    };
    position(subject: string): Position | null;
    /** What to do with a message, and the seq that was expected. */
    observe(subject: string, seq: number): [Verdict, number];
    /** Takes in a RESUME or LAST reply; `asked` is the position a RESUME gave (null for a RESUME without one,
     * and for LAST). Returns the report for a RESUME that gave a position. */
    answered(subject: string, asked: Position | null, reply: ResumeReply): ResumeReport | null;
    /** A RESET push: the subject's next message is `seq + 1` in `epoch`. */
    reset(push: Reset): ResumeReport;
    /** Subjects subscribed on this connection only because a restore resumed them under a wildcard now
     * dropped: they are unsubscribed along with it. */
    implicitSubscriptions(dropped: string[], remaining: string[]): string[];
    forget(remaining: string[]): void;
}
