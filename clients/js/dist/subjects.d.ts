/** Throws BadSubject unless `subject` is a concrete subject (no wildcard), as PUB, BPUB, ASK, RESUME and LAST
 * take. */
export declare function checkSubject(subject: string): void;
/** Throws BadSubject unless `pattern` is a subject or a pattern with `*` tokens and a last `>`, as SUB, QSUB
 * and UNSUB take. */
export declare function checkPattern(pattern: string): void;
/** Throws Syntax unless `name` is a group name: 1 to 64 bytes of `[A-Za-z0-9_.-]`. */
export declare function checkGroup(name: string): void;
/** Throws Syntax unless `value` is a whole number from `least` up (a count, a timeout in ms). */
export declare function checkCount(what: string, value: number, least: number): void;
/** Throws Syntax when `text` would end the command's line early: an LF, or a CR (which the server strips
 * before an LF, and which no word of a command holds). Used for the free text of PING, AUTH and `request`. */
export declare function checkOneLine(what: string, text: string): void;
/** Throws Syntax unless `token` is one word of printable ASCII, as AUTH takes it. */
export declare function checkWord(what: string, token: string): void;
