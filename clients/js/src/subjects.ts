// Checks every word the client puts on a line before anything is sent (PROTOCOL.md, Subjects; Groups): a word
// taken from user input ("bad subject", "", "a\nPUB b") would otherwise become another subject, another word, or
// a second command, after which every reply would be matched to the wrong command.

import { BadSubject, Syntax } from "./errors.js";

const maxSubjectLength = 255;
const maxTokenLength = 64;
const dot = 46;
const star = 42;
const greater = 62;

/** Subjects and patterns found valid, so that a publish loop checks its subject once. Bound: `remembered`
 * entries of each kind, then forgotten all at once. */
const remembered = 4096;
const validConcrete = new Set<string>();
const validPatterns = new Set<string>();

function shown(word: string): string {
    return JSON.stringify(word.length > 64 ? word.slice(0, 64) + "..." : word);
}

/** Why `word` is not a subject or pattern, or null; `wildcard` tells whether it has a `*` or `>` token. */
function problem(word: string): { why: string | null; wildcard: boolean } {
    if (typeof word !== "string") return { why: "is not a string", wildcard: false };
    if (word.length === 0) return { why: "is empty", wildcard: false };
    // Only ASCII passes the loop below, so the length in characters is the length in bytes.
    if (word.length > maxSubjectLength) return { why: `is over ${maxSubjectLength} bytes`, wildcard: false };
    let tokenStart = 0;
    let wildcard = false;
    for (let index = 0; index <= word.length; index++) {
        const atEnd = index === word.length;
        if (!atEnd) {
            const code = word.charCodeAt(index);
            if (code < 0x21 || code > 0x7e) {
                return { why: "holds a character other than printable ASCII (no spaces, no line breaks)", wildcard };
            }
            if (code !== dot) continue;
        }
        const length = index - tokenStart;
        if (length === 0) return { why: "has an empty token (a..b, .a and a. are not subjects)", wildcard };
        if (length === 1) {
            const code = word.charCodeAt(tokenStart);
            if (code === star) wildcard = true;
            if (code === greater) {
                if (!atEnd) return { why: "has '>' before its last token", wildcard };
                wildcard = true;
            }
        }
        tokenStart = index + 1;
    }
    return { why: null, wildcard };
}

/** Throws BadSubject unless `subject` is a concrete subject (no wildcard), as PUB, BPUB, ASK, RESUME and LAST
 * take. */
export function checkSubject(subject: string): void {
    if (validConcrete.has(subject)) return;
    const { why, wildcard } = problem(subject);
    if (why !== null) throw new BadSubject("bad-subject", `subject ${shown(subject)} ${why}`);
    if (wildcard) {
        throw new BadSubject("bad-subject", `subject ${shown(subject)}: wildcards are only allowed in subscriptions`);
    }
    if (validConcrete.size >= remembered) validConcrete.clear();
    validConcrete.add(subject);
}

/** Throws BadSubject unless `pattern` is a subject or a pattern with `*` tokens and a last `>`, as SUB, QSUB
 * and UNSUB take. */
export function checkPattern(pattern: string): void {
    if (validPatterns.has(pattern)) return;
    const { why } = problem(pattern);
    if (why !== null) throw new BadSubject("bad-subject", `subject pattern ${shown(pattern)} ${why}`);
    if (validPatterns.size >= remembered) validPatterns.clear();
    validPatterns.add(pattern);
}

/** Throws Syntax unless `name` is a group name: 1 to 64 bytes of `[A-Za-z0-9_.-]`. */
export function checkGroup(name: string): void {
    if (typeof name !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
        const why = `is not 1 to ${maxTokenLength} of A-Z a-z 0-9 _ . -`;
        throw new Syntax("syntax", `group name ${shown(String(name))} ${why}`);
    }
}

/** Throws Syntax unless `value` is a whole number from `least` up (a count, a timeout in ms). */
export function checkCount(what: string, value: number, least: number): void {
    if (!Number.isSafeInteger(value) || value < least) {
        throw new Syntax("syntax", `${what} must be a whole number from ${least} up, not ${String(value)}`);
    }
}

/** Throws Syntax when `text` would end the command's line early: an LF, or a CR (which the server strips
 * before an LF, and which no word of a command holds). Used for the free text of PING, AUTH and `request`. */
export function checkOneLine(what: string, text: string): void {
    if (typeof text !== "string" || /[\r\n]/.test(text)) {
        throw new Syntax("syntax", `${what} ${shown(String(text))} must be one line (no CR, no LF)`);
    }
}

/** Throws Syntax unless `token` is one word of printable ASCII, as AUTH takes it. */
export function checkWord(what: string, token: string): void {
    if (typeof token !== "string" || !/^[!-~]+$/.test(token)) {
        throw new Syntax("syntax", `${what} must be one word of printable ASCII (no spaces, no line breaks)`);
    }
}
