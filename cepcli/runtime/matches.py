"""Matches as the runtimes report them, and removal of duplicates across DNF branches."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cepcli.events import Event

Binding = Event | tuple[Event, ...]


@dataclass(frozen=True, slots=True)
class Match:
    """One match: each bound variable (positive or Kleene) with its event(s)."""

    bindings: tuple[tuple[str, Binding], ...]  # sorted by variable name

    @property
    def key(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Identity of a match (SPEC section 3): variables bound to the same rows."""
        return tuple((name, _rows(b)) for name, b in self.bindings)

    @property
    def first_ts(self) -> float:
        return min(e.ts for _, b in self.bindings for e in _events(b))


def _events(binding: Binding) -> tuple[Event, ...]:
    return binding if isinstance(binding, tuple) else (binding,)


def _rows(binding: Binding) -> tuple[int, ...]:
    return tuple(e.row for e in _events(binding))


class Deduplicator:
    """Drops a match already reported by another branch.

    Two branches report the same match at most one window apart (each reports it
    once the window after its first event has closed, at the latest), so keys are
    kept for two windows of stream time, which bounds the memory.
    """

    def __init__(self, window: float) -> None:
        self.window = window
        self.seen: set[tuple[tuple[str, tuple[int, ...]], ...]] = set()
        self.order: deque[tuple[float, tuple[tuple[str, tuple[int, ...]], ...]]] = deque()

    def first_time(self, match: Match, now: float) -> bool:
        while self.order and self.order[0][0] < now - 2 * self.window:
            self.seen.discard(self.order.popleft()[1])
        key = match.key
        if key in self.seen:
            return False
        self.seen.add(key)
        self.order.append((match.first_ts, key))
        return True
