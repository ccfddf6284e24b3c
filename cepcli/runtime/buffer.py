"""The event buffer of the lazy engines and of negation: the events a variable can use,
in stream order, kept for one window (the paper's input buffer; its length is the
variable's counter)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from cepcli.clock import Window
from cepcli.events import FAR_FUTURE, FAR_PAST, Event
from cepcli.plan.keys import present
from cepcli.runtime.stats import Stats

Key = tuple[int, int]  # stream order: (timestamp, row); row order when the input is unsorted
_LAST_ROW = 1 << 62
FIRST: Key = (FAR_PAST, -1)  # before every stream position
LAST: Key = (FAR_FUTURE, _LAST_ROW)  # after every stream position


class EventBuffer:
    """Events in stream order, searchable by position and time. Adding an event
    evicts those older than one window before it (amortised O(1)); a search is bounded
    by time anyway, so nothing out of the window is ever returned. ``counts`` keeps,
    for the columns asked for with ``count_values``, how many buffered events hold each
    value (the tree's counters per value of an equality join)."""

    __slots__ = ("events", "keys", "start", "stats", "window", "counts")

    def __init__(self, stats: Stats, window: Window) -> None:
        self.events: list[Event] = []
        self.keys: list[Key] = []
        self.start = 0
        self.stats = stats
        self.window = window
        self.counts: dict[int, dict[object, int]] = {}

    def count_values(self, column: int) -> dict[object, int]:
        """The live count of buffered events per value of ``column`` (missing values are
        not counted: they equal nothing). Ask before the first event is added."""
        return self.counts.setdefault(column, {})

    def add(self, event: Event) -> None:
        keys = self.keys
        start = self.start
        horizon = self.window.horizon(event.ts)
        if start < len(keys) and keys[start][0] < horizon:
            self._evict_before(horizon)
        self.events.append(event)
        keys.append((event.ts, event.row))
        self.stats.buffered()
        if self.counts:
            values = event.values
            for column, counts in self.counts.items():
                value = values[column]
                if present(value):
                    counts[value] = counts.get(value, 0) + 1

    def count_since(self, ts: int) -> int:
        """Evict the events older than ``ts``; the number left (the paper's counter)."""
        if self.start < len(self.keys) and self.keys[self.start][0] < ts:
            self._evict_before(ts)
        return len(self.keys) - self.start

    def _evict_before(self, ts: int) -> None:
        start = self.start
        keys = self.keys
        end = len(keys)
        while start < end and keys[start][0] < ts:
            start += 1
        if self.counts:
            for column, counts in self.counts.items():
                for event in self.events[self.start : start]:
                    value = event.values[column]
                    if present(value):
                        left = counts[value] - 1
                        if left:
                            counts[value] = left
                        else:
                            del counts[value]
        self.stats.unbuffered(start - self.start)
        self.start = start
        if start > 1024 and start * 2 > end:
            del self.events[:start], self.keys[:start]
            self.start = 0

    def between(self, after: Key, before: Key, min_ts: int, max_ts: int) -> Sequence[Event]:
        """Events strictly between two stream positions, with ``min_ts <= ts <= max_ts``."""
        lo, hi = self.span(after, before, min_ts, max_ts)
        return self.events[lo:hi] if lo < hi else ()

    def span(self, after: Key, before: Key, min_ts: int, max_ts: int) -> tuple[int, int]:
        """The index range of ``events`` that ``between`` returns (empty when lo >= hi)."""
        keys = self.keys
        start = self.start
        lo = max(bisect_right(keys, after, start), bisect_left(keys, (min_ts, -1), start))
        hi = min(bisect_left(keys, before, start), bisect_right(keys, (max_ts, _LAST_ROW), start))
        return lo, hi

    def index_after(self, key: Key) -> int:
        """The index of the first buffered event after ``key``."""
        return bisect_right(self.keys, key, self.start)

    def index_of(self, key: Key) -> int:
        """The index of the first buffered event at or after ``key``."""
        return bisect_left(self.keys, key, self.start)

    def __len__(self) -> int:
        return len(self.events) - self.start
