"""The ``iterate`` action (paper 4.5): the subsets of a Kleene variable's candidates,
generated lazily, never the power set in memory.

Subsets are grown in stream order; each new element is checked against ``[attr]``
and the element-wise conditions (``b[i]``, ``b[i-1]``, ``b[..i-1]``) at once, so a
prefix that fails is never extended; so is a prefix that breaks a bound a larger subset
cannot mend (``count(b[]) <= 2``, ``runtime.cuts``); the window bounds the span; with a
group-by attribute (4.5.3) only events sharing its value are combined.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from math import comb

from cepcli.clock import Window
from cepcli.events import Event
from cepcli.plan.keys import present, same_key
from cepcli.plan.pattern import Condition
from cepcli.plan.python import CompiledCondition
from cepcli.runtime.acceptance import FirstElement, first_holds
from cepcli.runtime.cuts import Cuts, Sign
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats

Subset = tuple[Event, ...]
_NONE: frozenset[Sign] = frozenset()


class Iteration:
    """How one Kleene variable grows its subsets."""

    __slots__ = (
        "lo",
        "hi",
        "each_new",
        "first",
        "equiv",
        "group",
        "window",
        "stats",
        "options",
        "next",
        "cuts",
    )

    def __init__(
        self,
        lo: int,
        hi: int | None,
        each_new: Sequence[tuple[CompiledCondition, Condition]],
        equiv: tuple[int, ...],
        group: int | None,
        window: Window,
        stats: Stats,
        options: EvalOptions,
        first: FirstElement = (),
        next_match: Sequence[tuple[CompiledCondition, Condition]] | None = None,
        cuts: Cuts | None = None,
    ) -> None:
        self.lo, self.hi = lo, hi
        self.each_new = tuple(each_new)
        self.first = first  # ``CompiledBranch.first_element``: they cut at the first element
        # skip_till_next_match (``CompiledBranch.next_element``), when every condition that
        # says what the run's next element is can be read here: a run skips no event that
        # passes them, so each start has one run (its prefixes), never a power set
        self.next = tuple(next_match) if next_match is not None else None
        # the bounds that only break as a subset grows (``count(b[]) <= 2``): a subset
        # that breaks one is not grown further (``CompiledBranch.growth_cuts``)
        self.cuts = cuts
        self.equiv = equiv
        self.group = group
        self.window = window
        self.stats = stats
        self.options = options

    def subsets(
        self,
        m: list[object],
        rows: Sequence[int],
        candidates: Iterable[Event],
        min_ts: int,
        max_ts: int,
        last: Event | None,
    ) -> Iterator[tuple[Subset, int]]:
        """Subsets (stream order, size within bounds, inside the window together with
        the events in ``m``) of the candidates; with ``last``, only those that end with
        it. Each comes with its new minimum timestamp."""
        pool = [e for e in candidates if e.row not in rows]
        pools = [pool] if self.group is None else self._groups(pool, last)
        for group in pools:
            if self.next is not None:
                yield from self._runs(m, group, min_ts, max_ts, last)
                continue
            self._check_size(len(group) + (last is not None))
            yield from self._grow(m, group, min_ts, max_ts, last)

    def _groups(self, pool: list[Event], last: Event | None) -> list[list[Event]]:
        """The candidates that can share a subset (4.5.3): those with the same value of
        the group-by attribute. An event whose value is missing equals no other, so it
        can only be a subset on its own (a one-element subset has no consecutive pair to
        compare; an ``[attr]`` test still rejects it in ``element``). With ``last``, only
        the group of ``last``, which ends every subset."""
        column = self.group
        assert column is not None
        groups: dict[object, list[Event]] = defaultdict(list)
        alone: list[list[Event]] = []
        for e in pool:
            key = e.values[column]
            if not present(key):
                alone.append([e])
            else:
                groups[key].append(e)
        if last is None:
            return [*groups.values(), *alone]
        key = last.values[column]
        if not present(key):
            return [[]]  # only ``last`` on its own
        return [groups.get(key, [])]

    def _check_size(self, n: int) -> None:
        """Warn when one candidate set allows more subsets than ``max_subsets`` (they are
        generated one at a time, but each can be a match to write): once, at the end of the
        run, with the largest such set (``Notes.largest``)."""
        limit = self.options.max_subsets
        if n < 20 and (1 << n) <= limit:
            return
        top = n if self.hi is None else min(self.hi, n)
        count = sum(comb(n, k) for k in range(max(self.lo, 1), top + 1))
        if count > limit:
            self.options.notes.largest(
                "max-subsets",
                count,
                f"a Kleene variable had up to {n} candidates in one window: up to {count:,} subsets"
                f" (more than --max-subsets {limit:,}); they are generated one at a"
                " time, but consider a shorter window, tighter conditions or bounds {l,m}",
            )

    def _grow(
        self, m: list[object], pool: list[Event], min_ts: int, max_ts: int, last: Event | None
    ) -> Iterator[tuple[Subset, int]]:
        """The subsets, depth first: each prefix is extended by the later candidates in
        stream order. The open prefixes are an explicit stack, not recursion, so a subset
        of thousands of elements cannot exhaust Python's recursion limit; the subsets come
        in the order of the recursive form, after the same checks (so the same counts)."""
        hi, lo, holds, element = self.hi, self.lo, self.window.holds, self.element
        cuts = self.cuts
        broken = self._broken(m, pool, last)
        stack: list[tuple[Subset, int, int]] = []  # open prefixes: (prefix, its max ts, next candidate)
        current: Subset = ()
        top, start = max_ts, 0
        while True:
            size = len(current)  # a new prefix: with ``last``, first the subset it ends
            if last is not None:
                if (hi is None or size < hi) and size + 1 >= lo:
                    lo_ts = min(min_ts, current[0].ts if current else last.ts)
                    if holds(lo_ts, max(top, last.ts)) and element(m, current, last):
                        yield current + (last,), lo_ts
                room = hi is None or size + 1 < hi
            else:
                room = hi is None or size < hi
            if room:
                stack.append((current, top, start))
            while stack:  # the next extension of the innermost open prefix
                prefix, prefix_top, j = stack.pop()
                grown: Subset | None = None
                while j < len(pool):
                    event = pool[j]
                    j += 1
                    lo_ts = min(min_ts, prefix[0].ts if prefix else event.ts)
                    if not holds(lo_ts, max(prefix_top, event.ts)):
                        break  # the pool is in time order: later events only widen the span
                    if element(m, prefix, event):
                        grown = prefix + (event,)
                        if cuts is not None and cuts.dead(m, grown, broken[j] if broken else _NONE):
                            grown = None  # it, and every subset grown from it, breaks a bound
                            continue
                        break
                if grown is not None:
                    stack.append((prefix, prefix_top, j))
                    if last is None and len(grown) >= lo:
                        yield grown, lo_ts
                    current, top, start = grown, max(prefix_top, event.ts), j
                    break
            else:
                return

    def _broken(self, m: list[object], pool: list[Event], last: Event | None) -> list[frozenset[Sign]]:
        """For a sum's cut (``Cuts.signs``): by position ``j`` in ``pool``, the signs that the
        values still to be added after a subset ending before ``j`` (``pool[j:]`` and
        ``last``) break. Empty when no cut depends on them."""
        cuts = self.cuts
        if cuts is None or not cuts.signs:
            return []
        out = [cuts.broken(m, [last] if last is not None else [])]
        for event in reversed(pool):
            after = out[-1]
            out.append(after if len(after) == len(cuts.signs) else after | cuts.broken(m, [event]))
        out.reverse()
        return out

    def _runs(
        self, m: list[object], pool: list[Event], min_ts: int, max_ts: int, last: Event | None
    ) -> Iterator[tuple[Subset, int]]:
        """Under skip_till_next_match: from each start, the run that takes every next event
        that could be its next element (``_next``), and its prefixes (with ``last``: those
        that ``last`` can end, no such event between them); a run stops where its next
        element fails a condition of this place (another variable's), as skipping it would
        break the strategy. The acceptance still checks the strategy (its negation ``b''``)."""
        hi, lo, holds, element = self.hi, self.lo, self.window.holds, self.element
        if (
            last is not None
            and lo <= 1
            and holds(min(min_ts, last.ts), max(max_ts, last.ts))
            and element(m, (), last)
        ):
            yield (last,), min(min_ts, last.ts)
        for start, first in enumerate(pool):
            lo_ts = min(min_ts, first.ts)
            if not holds(lo_ts, max(max_ts, first.ts)):
                break
            if not element(m, (), first):
                continue
            run: Subset = (first,)
            top = max(max_ts, first.ts)
            j = start + 1
            while True:
                size = len(run)
                if last is None and size >= lo:
                    yield run, lo_ts
                at = self._next(m, run, pool, j, lo_ts, top)
                ends = (
                    at is None and (hi is None or size < hi) and size + 1 >= lo
                )  # nothing could come between
                if last is not None and ends and holds(lo_ts, max(top, last.ts)) and element(m, run, last):
                    yield run + (last,), lo_ts
                if at is None or (hi is not None and size >= hi) or not element(m, run, pool[at]):
                    break
                run += (pool[at],)
                top = max(top, pool[at].ts)
                j = at + 1

    def _next(
        self, m: list[object], run: Subset, pool: list[Event], j: int, lo_ts: int, top: int
    ) -> int | None:
        """Where in ``pool`` (from ``j``, within the window) the run's next element is:
        the first event that passes the conditions that say what comes next."""
        assert self.next is not None
        holds = self.window.holds
        for at in range(j, len(pool)):
            event = pool[at]
            if not holds(lo_ts, max(top, event.ts)):
                return None
            if self.equiv and (
                not same_key(self.equiv, m, event)
                or any(run[0].values[k] != event.values[k] for k in self.equiv)
            ):
                continue
            for fn, _ in self.next:
                self.stats.predicate_evaluations += 1
                if not fn(m, event, run[-1], run):
                    break
            else:
                return at
        return None

    def element(self, m: list[object], current: Subset, event: Event) -> bool:
        """Can ``event`` follow ``current`` in the subset? As the first element, it must
        also pass the conditions on the first element whose other variables are bound."""
        if not current and self.first and not self._first_holds(m, event):
            return False
        if self.equiv:
            if not same_key(self.equiv, m, event):
                return False
            if current and any(current[0].values[k] != event.values[k] for k in self.equiv):
                return False
        for fn, cond in self.each_new:
            if cond.from_second and not current:
                continue
            self.stats.predicate_evaluations += 1
            if not fn(m, event, current[-1] if current else None, current):
                return False
        return True

    def _first_holds(self, m: list[object], event: Event) -> bool:
        first = list(m)
        first[self.first[0][1]] = (event,)
        return first_holds(self.first, first, self.stats)
