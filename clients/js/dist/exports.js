// What both entry points export besides `connect`.
export { Client } from "./client.js";
export { AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError, IdleTimeout, Limit, ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax, TooLong, Unavailable, UnknownCommand, } from "./errors.js";
export { Message, Question } from "./messages.js";
export { Subscription } from "./subscription.js";
