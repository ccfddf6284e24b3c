"""Takes the tree remembers across evaluations.

The tree evaluates every match when its last event arrives, so the same partial work
comes back: in ``AND(UA a, EV b, DL c, HA d) WHERE c.dest = d.dest ...`` every
arriving ``a`` or ``b`` that reaches ``{a, d}`` would scan the buffered ``c`` events
against the same ``d`` again. Which buffered events a take edge accepts depends only on
the events bound to the variables its conditions read (``d`` here), so the tree keeps,
per edge and such a binding, the buffered events that passed and the range of the
buffer already checked; a later evaluation checks only the events outside that range
(new arrivals, or older ones a wider window bound now admits). This is the tree's form
of the chain's waiting instances: a remembered partial match, kept while its events
are in the window, and counted as an instance while it lives.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from cepcli.events import Event
from cepcli.plan.pattern import Condition
from cepcli.plan.python import CompiledCondition
from cepcli.runtime.buffer import EventBuffer, Key
from cepcli.runtime.filters import takes
from cepcli.runtime.options import Instances
from cepcli.runtime.stats import Stats

MemoKey = tuple[int, tuple[int, ...]]  # (edge id, rows bound to the variables its conditions read)


class _Entry:
    """The events of ``[lo, hi]`` (stream positions, inclusive) that the edge accepts."""

    __slots__ = ("lo", "hi", "events", "keys")

    def __init__(self, lo: Key, hi: Key, events: list[Event]) -> None:
        self.lo, self.hi = lo, hi
        self.events = events
        self.keys = [(e.ts, e.row) for e in events]


class TakeMemo:
    def __init__(self, stats: Stats, instances: Instances) -> None:
        self.stats = stats
        self.instances = instances
        self.entries: dict[MemoKey, _Entry] = {}
        self.expiry: list[tuple[int, MemoKey]] = []  # (oldest bound timestamp, key), a heap
        self.hits = 0  # takes served from what an earlier evaluation checked

    def expire(self, limit: int) -> None:
        """Forget the bindings with an event older than ``limit`` (out of every window)."""
        expiry = self.expiry
        while expiry and expiry[0][0] < limit:
            _, key = heapq.heappop(expiry)
            del self.entries[key]
            self.stats.deleted()

    def candidates(
        self,
        key: MemoKey,
        oldest: int,
        buffer: EventBuffer,
        bounds: tuple[Key, Key, int, int],
        check: tuple[tuple[int, ...], int, Sequence[tuple[CompiledCondition, Condition]], list[object]],
    ) -> Sequence[Event]:
        """The events of ``buffer.between(*bounds)`` that pass ``takes(*check, event)``,
        checking only those not checked before for this key."""
        lo, hi = buffer.span(*bounds)
        if lo >= hi:
            return ()
        keys = buffer.keys
        first, last = keys[lo], keys[hi - 1]
        entry = self.entries.get(key)
        if entry is None or last < entry.lo or first > entry.hi:
            fresh = _Entry(first, last, self._scan(buffer.events[lo:hi], check))
            if entry is None:
                heapq.heappush(self.expiry, (oldest, key))
                self.instances.made()
            self.entries[key] = fresh
            return fresh.events
        if first < entry.lo:
            older = self._scan(buffer.events[lo : buffer.index_of(entry.lo)], check)
            entry.events[:0] = older
            entry.keys[:0] = [(e.ts, e.row) for e in older]
            entry.lo = first
        if last > entry.hi:
            newer = self._scan(buffer.events[buffer.index_after(entry.hi) : hi], check)
            entry.events += newer
            entry.keys += [(e.ts, e.row) for e in newer]
            entry.hi = last
        self.hits += 1
        return entry.events[bisect_left(entry.keys, first) : bisect_right(entry.keys, last)]

    def _scan(
        self,
        events: Sequence[Event],
        check: tuple[tuple[int, ...], int, Sequence[tuple[CompiledCondition, Condition]], list[object]],
    ) -> list[Event]:
        equiv, slot, conditions, m = check
        stats = self.stats
        return [e for e in events if takes(equiv, slot, conditions, m, e, stats)]
