"""Negated variables: the check of rule 6 of a match (docs/semantics.md, section 6) for one
negated variable of one branch, against the events of its buffer."""

from __future__ import annotations

from collections.abc import Sequence

from cepcli.clock import Window
from cepcli.events import Event, events_of
from cepcli.plan.keys import same_key
from cepcli.plan.python import CompiledCondition
from cepcli.runtime.buffer import FIRST, LAST, EventBuffer, Key
from cepcli.runtime.stats import Stats


class NegationCheck:
    """One negated variable ``n`` of one branch: is a (complete) match violated by an
    event of ``n``'s buffer? Order, window, distinctness, conditions and ``[attr]``."""

    __slots__ = (
        "name",
        "bit",
        "slot",
        "before",
        "after",
        "conditions",
        "equiv",
        "window",
        "stats",
        "gaps",
        "most",
        "gaps_only",
    )

    def __init__(
        self,
        name: str,
        bit: int,
        slot: int,
        before: tuple[int, ...],
        after: tuple[int, ...],
        conditions: tuple[CompiledCondition, ...],
        equiv: tuple[int, ...],
        window: Window,
        stats: Stats,
        gaps: int | None = None,
        most: int | None = None,
        gaps_only: bool = False,
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
        # next-match over a Kleene variable (``Variable.gaps_of``): its slot, whose run must
        # skip no event that could have been its next element, and its most elements
        self.gaps = gaps
        self.most = most
        self.gaps_only = gaps_only  # a contiguity: between the run's elements, not after it

    @property
    def trailing(self) -> bool:
        """Can a violating event still arrive after the match completed?"""
        return not self.after and not self.gaps_only

    def bounds(self, m: Sequence[object]) -> tuple[Key, Key]:
        """Stream positions (exclusive) allowed by the order constraints."""
        after = max(((e.ts, e.row) for s in self.before for e in events_of(m[s])), default=FIRST)
        before = min(((e.ts, e.row) for s in self.after for e in events_of(m[s])), default=LAST)
        return after, before

    def violated(
        self, m: list[object], rows: frozenset[int], min_ts: int, max_ts: int, buffer: EventBuffer
    ) -> bool:
        reach = self.window.reach(min_ts, max_ts)
        if self.gaps is not None and self._in_a_gap(m, rows, reach, buffer):
            return True
        if self.gaps_only:
            return False
        after, before = self.bounds(m)
        candidates = buffer.between(after, before, *reach)
        return any(self.violates(m, rows, e) for e in candidates)

    def _in_a_gap(
        self, m: list[object], rows: frozenset[int], reach: tuple[int, int], buffer: EventBuffer
    ) -> bool:
        """An event between two elements of the run that could have been the next after
        the first of them (the run so far bound in its place while it is judged)."""
        assert self.gaps is not None
        run = m[self.gaps]
        assert isinstance(run, tuple)
        try:
            for j in range(len(run) - 1):
                m[self.gaps] = run[: j + 1]
                e, f = run[j], run[j + 1]
                if any(
                    self.violates(m, rows, x) for x in buffer.between((e.ts, e.row), (f.ts, f.row), *reach)
                ):
                    return True
        finally:
            m[self.gaps] = run
        return False

    def violates(self, m: list[object], rows: frozenset[int], event: Event) -> bool:
        if self.most is not None and len(m[self.gaps]) >= self.most:  # type: ignore[arg-type,index]
            return False  # a run as long as it may be takes no next element
        if event.row in rows:
            return False
        if self.equiv and not same_key(self.equiv, m, event):
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
