"""Matches as the runtimes report them, and removal of duplicates across DNF branches."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from cepcli.clock import Window
from cepcli.events import Event, events_of

Binding = Event | tuple[Event, ...]
MatchKey = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Match:
    """One match: each bound variable (positive or Kleene) with its event(s)."""

    bindings: tuple[tuple[str, Binding], ...]  # sorted by variable name

    @property
    def key(self) -> MatchKey:
        """Identity of a match (docs/semantics.md section 6): variables bound to the same rows."""
        return tuple((name, _rows(b)) for name, b in self.bindings)

    @property
    def first_ts(self) -> int:
        return min(e.ts for _, b in self.bindings for e in events_of(b))


def _rows(binding: Binding) -> tuple[int, ...]:
    return tuple(e.row for e in events_of(binding))


class Deduplicator:
    """Drops a match already reported by another branch.

    Every branch that finds a match reports it while processing the match's last
    event, or, when it waits on a trailing negation, while processing the first event
    later than one window after the match's first event (or at the end). So once an
    event later than ``first_ts + window`` has been processed, no branch can report
    the key again and it can be forgotten: memory follows the window.
    """

    def __init__(self, window: Window) -> None:
        self.window = window
        self.seen: set[MatchKey] = set()
        self.by_time: list[tuple[int, int, MatchKey]] = []
        self.count = 0

    def forget_before(self, processed_ts: int) -> None:
        """Forget keys that no branch can report after an event at ``processed_ts``."""
        while self.by_time and self.window.closes(self.by_time[0][0]) < processed_ts:
            self.seen.discard(heapq.heappop(self.by_time)[2])

    def first_time(self, match: Match) -> bool:
        key = match.key
        if key in self.seen:
            return False
        self.seen.add(key)
        self.count += 1
        heapq.heappush(self.by_time, (match.first_ts, self.count, key))
        return True
