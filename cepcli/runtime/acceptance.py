"""What every runtime does once a partial match is complete: the conditions that need
whole Kleene subsets, negation by post-processing (paper 4.4.1: the buffer is searched
now; a negation that may still be violated later waits for the window to close),
removal of duplicates across DNF branches, and output."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from cepcli.clock import Window
from cepcli.events import FAR_PAST, Event, Schema
from cepcli.plan.pattern import Branch, Condition, Pattern, first_only
from cepcli.plan.python import CompiledCondition, compile_condition
from cepcli.runtime.buffer import EventBuffer
from cepcli.runtime.cuts import Cuts, cuts_of
from cepcli.runtime.matches import Deduplicator, Match
from cepcli.runtime.negation import NegationCheck
from cepcli.runtime.options import Instances
from cepcli.runtime.stats import Stats


class _Pending:
    """A match that waits for the window after its first event to close."""

    __slots__ = ("match", "m", "rows", "min_ts", "max_ts", "checks", "dropped")

    def __init__(
        self,
        match: Match,
        m: list[object],
        rows: frozenset[int],
        min_ts: int,
        max_ts: int,
        checks: list[NegationCheck],
    ) -> None:
        self.match, self.m, self.rows = match, m, rows
        self.min_ts, self.max_ts, self.checks = min_ts, max_ts, checks
        self.dropped = False


class Acceptance:
    """Shared by the runtimes: negation buffers, matches waiting on a trailing
    negation, the de-duplicator and the list of matches found by the current event."""

    def __init__(self, pattern: Pattern, stats: Stats, instances: Instances) -> None:
        self.window = Window(pattern.window)
        self.stats = stats
        self.instances = instances
        self.buffers: dict[int, EventBuffer] = {
            v.bit: EventBuffer(stats, self.window) for v in pattern.variables if v.negated
        }
        self.negated_mask = sum(1 << bit for bit in self.buffers)
        self.pending: list[tuple[int, int, _Pending]] = []
        self.count = 0
        keys = [b.key for b in pattern.branches]
        self.dedup = Deduplicator(self.window) if len(set(keys)) < len(keys) else None
        self.out: list[Match] = []
        self.now = FAR_PAST

    def advance(self, event: Event) -> None:
        """Before an event is processed: forget, evict and release what its time allows,
        check it against waiting matches, and buffer it if a negated variable can use it."""
        if self.dedup is not None:
            self.dedup.forget_before(self.now)  # the previous event is fully processed
        self.now = now = event.ts
        while self.pending and self.pending[0][0] < now:
            self._release(heapq.heappop(self.pending)[2])
        if event.mask & self.negated_mask:
            self._negated_arrival(event)

    def finish(self) -> None:
        while self.pending:
            self._release(heapq.heappop(self.pending)[2])

    def take_output(self) -> list[Match]:
        out, self.out = self.out, []
        return out

    def accept(
        self,
        names: Sequence[tuple[str, int]],
        m: list[object],
        min_ts: int,
        max_ts: int,
        negations: Sequence[NegationCheck],
    ) -> None:
        """A complete positive match: check its negations, then report it (now, or
        once the window has closed when a violating event may still arrive)."""
        match = Match(tuple((name, m[slot]) for name, slot in names))  # type: ignore[misc]
        if not negations:
            self._emit(match)
            return
        rows = frozenset(r for _, rs in match.key for r in rs)
        waiting: list[NegationCheck] = []
        for check in negations:
            if check.violated(m, rows, min_ts, max_ts, self.buffers[check.bit]):
                return
            if check.trailing:
                waiting.append(check)
        if not waiting:
            self._emit(match)
            return
        self.instances.made()
        self.count += 1
        pending = _Pending(match, m, rows, min_ts, max_ts, waiting)
        heapq.heappush(self.pending, (self.window.closes(min_ts), self.count, pending))

    def _negated_arrival(self, event: Event) -> None:
        holds = self.window.holds
        for _, _, pending in self.pending:
            if pending.dropped or not holds(min(pending.min_ts, event.ts), max(pending.max_ts, event.ts)):
                continue
            for check in pending.checks:
                if event.mask >> check.bit & 1 and check.violates(pending.m, pending.rows, event):
                    pending.dropped = True
                    break
        for bit, buffer in self.buffers.items():
            if event.mask >> bit & 1:
                buffer.add(event)

    def _release(self, pending: _Pending) -> None:
        self.stats.deleted()
        if not pending.dropped:
            self._emit(pending.match)

    def _emit(self, match: Match) -> None:
        if self.dedup is not None and not self.dedup.first_time(match):
            return
        self.stats.matches += 1
        self.out.append(match)


def holds_for_each(
    fn: CompiledCondition, cond: Condition, m: Sequence[object], elements: tuple[Event, ...], stats: Stats
) -> bool:
    """An element-wise condition (``b[i]``, ``b[i-1]``, ``b[..i-1]``) over every element."""
    for j, element in enumerate(elements):
        if cond.from_second and j == 0:
            continue
        stats.predicate_evaluations += 1
        if not fn(m, element, elements[j - 1] if j else None, elements[:j]):
            return False
    return True


FirstElement = tuple[tuple[CompiledCondition, int, tuple[int, ...]], ...]  # ``first_element``


def first_holds(first: FirstElement, m: Sequence[object], stats: Stats) -> bool:
    """Whether a Kleene subset of one element so far (in ``m``) passes the conditions on
    its first element whose other variables are bound (the others wait for acceptance)."""
    for fn, _, others in first:
        if any(m[k] is None for k in others):
            continue
        stats.predicate_evaluations += 1
        if not fn(m):
            return False
    return True


def negation_checks(
    branch: Branch,
    names: Sequence[str],
    slots: dict[str, int],
    conditions: Sequence[CompiledCondition | None],
    equiv: tuple[int, ...],
    window: Window,
    stats: Stats,
) -> list[NegationCheck]:
    """One check per negated variable in ``names``, with the conditions that mention it."""
    out = []
    for name in names:
        v = next(v for v in branch.negated if v.name == name)
        mine = tuple(
            fn
            for c, fn in zip(branch.conditions, conditions, strict=True)
            if name in c.variables and fn is not None
        )
        run = next((k for k in branch.variables if k.name == v.gaps_of), None)
        out.append(
            NegationCheck(
                name,
                v.bit,
                slots[name],
                tuple(slots[x] for x in sorted(branch.before(name))),
                tuple(slots[x] for x in sorted(branch.after(name))),
                mine,
                equiv if v.keyed else (),
                window,
                stats,
                slots[run.name] if run is not None else None,
                run.hi if run is not None else None,
                run is not None and v.made_by != "skip_till_next_match",
            )
        )
    return out


class CompiledBranch:
    """What every runtime needs of a DNF branch: a slot per variable in the partial
    match, the compiled conditions (None for those the prefilter applied), the column
    indexes of its ``[attr]`` tests and the (name, slot) pairs a match reports."""

    def __init__(self, branch: Branch, schema: Schema) -> None:
        self.branch = branch
        self.slots = {v.name: i for i, v in enumerate(branch.variables)}
        self._schema = schema
        self.conditions: list[CompiledCondition | None] = [
            None if c.prefilter else compile_condition(c.expr, self.slots, schema) for c in branch.conditions
        ]
        self.equiv = tuple(schema.index(attr) for attr in branch.equiv)
        self.names = tuple(sorted((v.name, self.slots[v.name]) for v in branch.positives))

    def first_element(self, var: str) -> FirstElement:
        """The conditions on Kleene variable ``var`` that read only its first element
        (``b[1].x``), with the slot of ``var`` and those of the other variables they read:
        a subset whose first element fails one is no match, whatever follows, so the
        subsets are cut there (``Iteration.element``) once those variables are bound. They
        are still checked on acceptance."""
        out = []
        for cond, fn in zip(self.branch.conditions, self.conditions, strict=True):
            if fn is None or cond.negated is not None or cond.whole != {var} or cond.iterates is not None:
                continue
            if first_only(cond.expr, var):
                others = tuple(sorted(self.slots[v] for v in cond.variables if v != var))
                out.append((fn, self.slots[var], others))
        return tuple(out)

    def growth_cuts(self, var: str) -> Cuts | None:
        """The bounds that cut Kleene variable ``var``'s subsets as they grow
        (``runtime.cuts``: ``count(b[]) <= 2``, ``max(b[].x) < k``, ...), or None."""
        return cuts_of(self.branch, var, self.slots, self._schema)

    def next_element(
        self, var: str, each_new: Sequence[tuple[CompiledCondition, Condition]]
    ) -> tuple[tuple[CompiledCondition, Condition], ...] | None:
        """Under skip_till_next_match over Kleene variable ``var`` (a negation with
        ``gaps_of``): the conditions that say what its run's next element is (element-wise,
        reading only variables before it), when all of them are among ``each_new`` (read
        where the run grows; those the prefilter applied are its events' own), for
        ``Iteration`` to grow one run per start. None otherwise."""
        branch = self.branch
        if not any(n.gaps_of == var for n in branch.negated):
            return None
        before = branch.before(var) | {var}
        wanted = [
            c
            for c in branch.conditions
            if c.iterates == var and c.negated is None and c.variables <= before and not c.prefilter
        ]
        here = {id(cond): (fn, cond) for fn, cond in each_new}
        if not all(id(c) in here for c in wanted):
            return None
        return tuple(here[id(c)] for c in wanted)

    def bound(self, indexes: Sequence[int]) -> tuple[tuple[CompiledCondition, Condition], ...]:
        """Compiled conditions with their classification, for the given indexes."""
        out = []
        for i in indexes:
            fn = self.conditions[i]
            assert fn is not None, "prefilter conditions are never placed on edges"
            out.append((fn, self.branch.conditions[i]))
        return tuple(out)

    def complete(
        self, at_accept: Sequence[tuple[CompiledCondition, Condition]], m: Sequence[object], stats: Stats
    ) -> bool:
        """The conditions left for acceptance (whole Kleene subsets, constants)."""
        for fn, cond in at_accept:
            if cond.iterates is not None:
                elements = m[self.slots[cond.iterates]]
                assert isinstance(elements, tuple)
                if not holds_for_each(fn, cond, m, elements, stats):
                    return False
            else:
                stats.predicate_evaluations += 1
                if not fn(m):
                    return False
        return True

    def negations_of(self, names: Sequence[str], window: Window, stats: Stats) -> list[NegationCheck]:
        return negation_checks(self.branch, names, self.slots, self.conditions, self.equiv, window, stats)
