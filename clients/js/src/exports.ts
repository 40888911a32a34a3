// What both entry points export besides `connect`.

export { Client } from "./client.js";
export type { Backoff, ClientOptions, SubscribeOptions } from "./client.js";
export type { AskOptions, Handler, Responder } from "./questions.js";
export {
    AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError, IdleTimeout, Kicked, Limit,
    ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax, TooLong, Unavailable, UnknownCommand,
} from "./errors.js";
export { Message, Question } from "./messages.js";
export { TokenError } from "./tokens.js";
export type { TokenFunction } from "./tokens.js";
export type { Answer, AskResult, FanoutEvent } from "./messages.js";
export type { ResumeReport } from "./resume.js";
export { Subscription } from "./subscription.js";
export { PresenceSubscription } from "./presence.js";
export type { Member, PresenceEvent, Who } from "./presence.js";
export type { Payload } from "./protocol.js";
