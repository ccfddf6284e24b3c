"""Negated variables: a chronological buffer of candidate events, and the check of
SPEC section 3, rule 6, for one negated variable of one branch."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from cepcli.events import Event
from cepcli.runtime.conditions import CompiledCondition
from cepcli.runtime.stats import Stats


class EventBuffer:
    """Events in stream order, searchable by row and time, evicted by the window."""

    __slots__ = ("events", "rows", "times", "start", "stats")

    def __init__(self, stats: Stats) -> None:
        self.events: list[Event] = []
        self.rows: list[int] = []
        self.times: list[float] = []
        self.start = 0
        self.stats = stats

    def add(self, event: Event) -> None:
        self.events.append(event)
        self.rows.append(event.row)
        self.times.append(event.ts)
        self.stats.buffered()

    def evict_before(self, ts: float) -> None:
        """Drop events older than ``ts`` (amortised O(1) per event)."""
        start = self.start
        times = self.times
        end = len(times)
        while start < end and times[start] < ts:
            start += 1
        if start != self.start:
            self.stats.unbuffered(start - self.start)
            self.start = start
            if start > 1024 and start * 2 > end:
                del self.events[:start], self.rows[:start], self.times[:start]
                self.start = 0

    def between(self, after_row: int, before_row: int, min_ts: float, max_ts: float) -> Sequence[Event]:
        """Events with ``after_row < row < before_row`` and ``min_ts <= ts <= max_ts``."""
        lo = max(bisect_right(self.rows, after_row, self.start), bisect_left(self.times, min_ts, self.start))
        hi = min(bisect_left(self.rows, before_row, self.start), bisect_right(self.times, max_ts, self.start))
        return self.events[lo:hi] if lo < hi else ()

    def __len__(self) -> int:
        return len(self.events) - self.start


class NegationCheck:
    """One negated variable ``n`` of one branch: is a (complete) match violated by an
    event of ``n``'s buffer? Order, window, distinctness, conditions and ``[attr]``."""

    __slots__ = ("name", "bit", "slot", "before", "after", "conditions", "equiv", "window", "stats")

    def __init__(
        self,
        name: str,
        bit: int,
        slot: int,
        before: tuple[int, ...],
        after: tuple[int, ...],
        conditions: tuple[CompiledCondition, ...],
        equiv: tuple[int, ...],
        window: float,
        stats: Stats,
    ) -> None:
        self.name = name
        self.bit = bit
        self.slot = slot
        self.before = before  # slots of bound variables that precede n
        self.after = after  # slots of bound variables that follow n
        self.conditions = conditions
        self.equiv = equiv  # column indexes of [attr] tests
        self.window = window
        self.stats = stats

    @property
    def trailing(self) -> bool:
        """Can a violating event still arrive after the match completed?"""
        return not self.after

    def bounds(self, m: Sequence[object]) -> tuple[int, int]:
        """Row range (exclusive) allowed by the order constraints."""
        after_row = max((e.row for s in self.before for e in _events(m[s])), default=-1)
        before_row = min((e.row for s in self.after for e in _events(m[s])), default=1 << 62)
        return after_row, before_row

    def violated(
        self, m: list[object], rows: frozenset[int], min_ts: float, max_ts: float, buffer: EventBuffer
    ) -> bool:
        after_row, before_row = self.bounds(m)
        candidates = buffer.between(after_row, before_row, max_ts - self.window, min_ts + self.window)
        return any(self.violates(m, rows, e) for e in candidates)

    def violates(self, m: list[object], rows: frozenset[int], event: Event) -> bool:
        if event.row in rows:
            return False
        if self.equiv and not _same(m, event, self.equiv, self.slot):
            return False
        if not self.conditions:
            return True
        m[self.slot] = event
        try:
            for cond in self.conditions:
                self.stats.predicate_evaluations += 1
                if not cond(m):
                    return False
            return True
        finally:
            m[self.slot] = None


def _events(binding: object) -> tuple[Event, ...]:
    if binding is None:
        return ()
    return binding if isinstance(binding, tuple) else (binding,)


def _same(m: Sequence[object], event: Event, columns: tuple[int, ...], skip: int) -> bool:
    for k in columns:
        value = event.values[k]
        if value is None:
            return False
        for s, binding in enumerate(m):
            if s == skip:
                continue
            for e in _events(binding):
                if e.values[k] != value:
                    return False
    return True
