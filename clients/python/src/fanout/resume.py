"""What the client knows of each concrete subject it receives, so that a reconnect repeats nothing and loses
nothing the server still has. Pure bookkeeping, no I/O: the client reports greetings, RESUME/LAST replies,
RESET pushes and messages, and sends what `restore_plan` says. It follows the Swift client's ResumeState.

Seqs are only compared within one epoch. A server without epochs (before 1.1) gets no duplicate dropping, and
any seq other than the next one is a gap.

Bound: one entry per concrete subject subscribed to or delivered under a live subscription; `forget` drops the
entries no subscription covers any more.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from .protocol import Reset, ResumeReply, is_wildcard, matches

DELIVER = "deliver"
DUPLICATE = "duplicate"
GAP = "gap"
RESTARTED = "restarted"


@dataclass(frozen=True)
class ResumeReport:
    """What a resume after a reconnect, or a RESET push, said of one subject. `missed` is None when unknown
    (the subject's numbering restarted). `reason` is "resume" or "reset"."""

    subject: str
    recovered: int
    missed: Optional[int]
    reason: str = "resume"

    def lines(self) -> List[str]:
        """The lines the `fanout` CLI prints for the same report."""
        out = []
        if self.recovered:
            out.append(f"recovered {self.recovered} message{'' if self.recovered == 1 else 's'} on {self.subject}")
        why = "history too short" if self.reason == "resume" else "reset by the server"
        if self.missed is None:
            out.append(f"missed messages on {self.subject} (unknown: the server's numbering restarted)")
        elif self.missed:
            out.append(f"missed {self.missed} message{'' if self.missed == 1 else 's'} on {self.subject} ({why})")
        return out


@dataclass
class _Entry:
    epoch: Optional[str]
    last: int
    seen_on: int
    subscribed_on: Optional[int] = None


class ResumeState:
    def __init__(self) -> None:
        self._entries: Dict[str, _Entry] = {}
        self.epoch: Optional[str] = None
        self._connection = 0

    @property
    def can_resume(self) -> bool:
        return self.epoch is not None

    def connected(self, epoch: Optional[str]) -> None:
        self._connection += 1
        self.epoch = epoch

    def restore_plan(self, patterns: Iterable[str]) -> Tuple[List[str], List[str]]:
        """After a reconnect: the RESUME lines to send first (one per concrete subject), then the patterns to
        SUB (only the wildcards when the server resumes, everything when it does not)."""
        patterns = list(patterns)
        if not self.can_resume:
            return [], patterns
        wildcards = [p for p in patterns if is_wildcard(p)]
        subjects = {p for p in patterns if not is_wildcard(p)}
        subjects.update(s for s in self._entries if _covers(wildcards, s))
        lines = []
        for subject in sorted(subjects):
            entry = self._entries.get(subject)
            if entry is None or entry.epoch is None:
                lines.append(f"RESUME {subject}")
            else:
                lines.append(f"RESUME {subject} {entry.epoch} {entry.last}")
        return lines, wildcards

    def position(self, subject: str) -> Optional[Tuple[str, int]]:
        entry = self._entries.get(subject)
        if entry is None or entry.epoch is None:
            return None
        return entry.epoch, entry.last

    def observe(self, subject: str, seq: int) -> Tuple[str, int]:
        """What to do with a message: (DELIVER|DUPLICATE|GAP|RESTARTED, the seq that was expected)."""
        entry = self._entries.get(subject)
        if entry is None:
            # Joining mid-stream: the first seq is taken as given, in the greeting's epoch.
            self._entries[subject] = _Entry(self.epoch, seq, self._connection)
            return DELIVER, seq
        if entry.seen_on != self._connection:
            # Not resumed on this connection (its RESUME failed, or the server has no epochs).
            entry.seen_on = self._connection
            if self.epoch is not None and entry.epoch != self.epoch:
                self._entries[subject] = _Entry(self.epoch, seq, self._connection)
                return RESTARTED, seq
            entry.epoch = self.epoch
        last = entry.last
        if seq <= last and entry.epoch is not None:
            return DUPLICATE, last + 1
        entry.last = seq
        return (DELIVER if seq == last + 1 else GAP), last + 1

    def answered(self, subject: str, asked: Optional[Tuple[str, int]], reply: ResumeReply) -> Optional[ResumeReport]:
        """Takes in a RESUME or LAST reply; `asked` is the position a RESUME gave (None for RESUME without one,
        and for LAST). Returns the report for a RESUME that gave a position."""
        start = max(reply.seq - reply.replayed, 0)
        fresh = _Entry(reply.epoch, start, self._connection, self._connection)
        known = self._entries.get(subject)
        if known is not None and not (known.epoch == reply.epoch and known.last <= reply.seq):
            known = None
        entry = _Entry(reply.epoch, max(known.last, start) if known else start, self._connection, self._connection)
        if asked is None:
            self._entries[subject] = entry
            return None
        if reply.missed is None or reply.epoch != asked[0] or known is None:
            self._entries[subject] = fresh
            return ResumeReport(subject, reply.replayed, None)
        self._entries[subject] = entry
        return ResumeReport(subject, reply.replayed, reply.missed)

    def reset(self, push: Reset) -> ResumeReport:
        """A RESET push: the subject's next message is `push.seq + 1` in `push.epoch`."""
        entry = self._entries.get(push.subject)
        subscribed_on = entry.subscribed_on if entry else None
        self._entries[push.subject] = _Entry(push.epoch, push.seq, self._connection, subscribed_on)
        return ResumeReport(push.subject, 0, push.missed, reason="reset")

    def implicit_subscriptions(self, dropped: List[str], remaining: List[str]) -> List[str]:
        """Subjects subscribed on this connection only because a restore resumed them under a wildcard now
        dropped: they are unsubscribed along with it."""
        return sorted(
            subject for subject, entry in self._entries.items()
            if entry.subscribed_on == self._connection and subject not in remaining and subject not in dropped
            and _covers(dropped, subject) and not _covers(remaining, subject)
        )

    def forget(self, remaining: List[str]) -> None:
        self._entries = {s: e for s, e in self._entries.items() if _covers(remaining, s)}


def _covers(patterns: Iterable[str], subject: str) -> bool:
    return any(matches(p, subject) for p in patterns)
