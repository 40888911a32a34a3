"""Client of the Fanout publish/subscribe daemon. `await fanout.connect(...)` gives an asyncio client;
`fanout.blocking.connect(...)` the same methods without an event loop."""
from .backoff import Backoff
from .client import Client, connect
from .errors import (AuthRequired, BadSubject, CannotConnect, Closed, ConnectionLost, Denied, FanoutError,
                     IdleTimeout, Kicked, Limit, ProtocolViolation, ServerError, ShuttingDown, SlowConsumer, Syntax,
                     TooLong, Unavailable, UnknownCommand)
from .messages import AskResult, Event, EventKind, Info, Message, Question
from .presence import Member, PresenceEvent, PresenceSubscribing, PresenceSubscription, Who
from .questions import Responder
from .resume import ResumeReport
from .subscription import Subscribing, Subscription
from .tokens import TokenError

__all__ = [
    "connect", "Client", "Subscription", "Subscribing", "Responder", "Info", "EventKind", "Backoff", "Message",
    "Question", "AskResult", "Event", "Member", "Who", "PresenceEvent", "PresenceSubscription", "PresenceSubscribing",
    "ResumeReport", "FanoutError", "ServerError", "UnknownCommand", "Syntax", "BadSubject", "TooLong", "Limit",
    "Denied", "AuthRequired", "Unavailable", "SlowConsumer", "ShuttingDown", "IdleTimeout", "Kicked", "CannotConnect",
    "ConnectionLost", "Closed", "ProtocolViolation", "TokenError",
]
