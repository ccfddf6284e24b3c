"""Runs an ``EagerNfa``: every relevant event is applied, on arrival, to every instance.

Instances are kept in one list per state. Every instance descends from one take of
the first event of its match, and all instances of such a *group* share that first
timestamp; groups are created in time order, so the window expires them from the
front of a deque in amortised O(1). Negated variables are checked when an instance
accepts (against a chronological buffer of candidate events), or, when a violating
event may still arrive, the match waits until the window after its first event has
closed.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator

from cepcli.automata.eager import EagerBranch, EagerNfa, TakeEdge
from cepcli.events import Event, Schema
from cepcli.plan.pattern import Branch, Condition
from cepcli.runtime.conditions import CompiledCondition, compile_condition
from cepcli.runtime.matches import Deduplicator, Match
from cepcli.runtime.negation import EventBuffer, NegationCheck
from cepcli.runtime.stats import Stats


class _Group:
    """Instances that share their first event (and so their first timestamp)."""

    __slots__ = ("first_ts", "alive", "dead")

    def __init__(self, first_ts: float) -> None:
        self.first_ts = first_ts
        self.alive = 0
        self.dead = False


class _Instance:
    __slots__ = ("state", "m", "group")

    def __init__(self, state: int, m: tuple[object, ...], group: _Group | None) -> None:
        self.state = state
        self.m = m
        self.group = group


class _Pending:
    """An accepted match that waits for the window to close (trailing negation)."""

    __slots__ = ("match", "m", "rows", "min_ts", "max_ts", "checks", "dropped", "branch")

    def __init__(
        self,
        match: Match,
        m: list[object],
        rows: frozenset[int],
        min_ts: float,
        max_ts: float,
        checks: list[NegationCheck],
        branch: int,
    ) -> None:
        self.match, self.m, self.rows = match, m, rows
        self.min_ts, self.max_ts, self.checks = min_ts, max_ts, checks
        self.dropped = False
        self.branch = branch


class _BranchRuntime:
    def __init__(self, nfa: EagerBranch, schema: Schema, window: float, stats: Stats) -> None:
        branch = nfa.branch
        self.nfa = nfa
        self.window = window
        self.stats = stats
        self.slots = {v.name: i for i, v in enumerate(branch.variables)}
        self.conditions: list[CompiledCondition | None] = [
            None if c.prefilter else compile_condition(c.expr, self.slots, schema) for c in branch.conditions
        ]
        self.equiv = tuple(schema.index(attr) for attr in branch.equiv)
        self.root = _Instance(0, tuple(None for _ in branch.variables), None)
        self.lists: list[list[_Instance]] = [[] for _ in nfa.states]
        self.lists[0].append(self.root)
        self.out_edges = [nfa.edges_from(s) for s in range(len(nfa.states))]
        self.by_mask: dict[int, list[tuple[int, tuple[TakeEdge, ...]]]] = {}
        self.positive_slots = tuple(self.slots[v.name] for v in branch.positives)
        self.names = tuple(sorted((v.name, self.slots[v.name]) for v in branch.positives))
        self.negations = [
            _negation_check(branch, v.name, v.bit, self.slots, self.conditions, self.equiv, window, stats)
            for v in branch.negated
        ]

    def routes(self, mask: int) -> list[tuple[int, tuple[TakeEdge, ...]]]:
        """For an event mask: the states with take edges it can trigger, and those edges."""
        found = self.by_mask.get(mask)
        if found is None:
            found = []
            for state, edges in enumerate(self.out_edges):
                usable = tuple(e for e in edges if mask >> e.bit & 1)
                if usable:
                    found.append((state, usable))
            self.by_mask[mask] = found
        return found


class EagerRuntime:
    def __init__(self, nfa: EagerNfa, schema: Schema, stats: Stats) -> None:
        self.pattern = nfa.pattern
        self.window = nfa.pattern.window
        self.stats = stats
        self.branches = [_BranchRuntime(b, schema, self.window, stats) for b in nfa.branches]
        self.groups: deque[_Group] = deque()
        self.dead_in_lists = 0
        self.buffers: dict[int, EventBuffer] = {
            v.bit: EventBuffer(stats) for v in self.pattern.variables if v.negated
        }
        self.negated_mask = sum(1 << bit for bit in self.buffers)
        self.pending: list[tuple[float, int, _Pending]] = []
        self.pending_seq = 0
        keys = [b.key for b in self.pattern.branches]
        self.dedup = Deduplicator(self.window) if len(set(keys)) < len(keys) else None
        self.out: list[Match] = []
        self.now = float("-inf")

    # --- the event loop -------------------------------------------------------------

    def process(self, event: Event) -> list[Match]:
        if self.dedup is not None:
            self.dedup.forget_before(self.now)  # the previous event is fully processed
        self.now = event.ts
        self.out = []
        self._expire(event.ts)
        if event.mask & self.negated_mask:
            self._negated_arrival(event)
        for index, runtime in enumerate(self.branches):
            self._apply(index, runtime, event)
        return self.out

    def finish(self) -> list[Match]:
        self.out = []
        while self.pending:
            self._release(heapq.heappop(self.pending)[2])
        return self.out

    def _expire(self, now: float) -> None:
        limit = now - self.window
        groups = self.groups
        while groups and groups[0].first_ts < limit:
            group = groups.popleft()
            group.dead = True
            self.stats.deleted(group.alive)
            self.dead_in_lists += group.alive
        if self.dead_in_lists > 4096 and self.dead_in_lists > self.stats.alive_instances:
            for runtime in self.branches:
                runtime.lists = [[i for i in lst if not _dead(i)] for lst in runtime.lists]
            self.dead_in_lists = 0
        for buffer in self.buffers.values():
            buffer.evict_before(limit)
        while self.pending and self.pending[0][0] < now:
            self._release(heapq.heappop(self.pending)[2])

    def _negated_arrival(self, event: Event) -> None:
        for _, _, pending in self.pending:
            if pending.dropped:
                continue
            for check in pending.checks:
                if (
                    event.mask >> check.bit & 1
                    and _in_window(pending, event, self.window)
                    and check.violates(pending.m, pending.rows, event)
                ):
                    pending.dropped = True
                    break
        for bit, buffer in self.buffers.items():
            if event.mask >> bit & 1:
                buffer.add(event)

    def _apply(self, index: int, runtime: _BranchRuntime, event: Event) -> None:
        created: list[_Instance] = []
        for state, edges in runtime.routes(event.mask):
            instances = runtime.lists[state]
            alive = [i for i in instances if not _dead(i)]
            if len(alive) != len(instances):
                self.dead_in_lists -= len(instances) - len(alive)
                runtime.lists[state] = alive
            for instance in alive:
                for edge in edges:
                    new = self._take(index, runtime, instance, edge, event)
                    if new is not None:
                        created.append(new)
        for new in created:
            runtime.lists[new.state].append(new)

    # --- one take edge ------------------------------------------------------------------

    def _take(
        self, index: int, runtime: _BranchRuntime, instance: _Instance, edge: TakeEdge, event: Event
    ) -> _Instance | None:
        if runtime.equiv and not _same_key(runtime, instance.m, event):
            return None
        m = list(instance.m)
        if edge.kleene:
            elements: tuple[Event, ...] = (m[edge.slot] or ()) + (event,)  # type: ignore[operator]
            m[edge.slot] = elements
        else:
            m[edge.slot] = event
        if not self._edge_conditions(runtime, edge, m, event):
            return None
        group = instance.group
        if group is None:
            group = _Group(event.ts)
            self.groups.append(group)
        nfa = runtime.nfa
        keep = bool(runtime.out_edges[edge.target])
        self.stats.created()
        if keep:
            group.alive += 1
        else:
            self.stats.deleted()
        if edge.target in nfa.accepting:
            self._accept(index, runtime, m, group.first_ts, event.ts)
        return _Instance(edge.target, tuple(m), group) if keep else None

    def _edge_conditions(
        self, runtime: _BranchRuntime, edge: TakeEdge, m: list[object], event: Event
    ) -> bool:
        stats = self.stats
        conditions = runtime.conditions
        for i in edge.check:
            stats.predicate_evaluations += 1
            if not conditions[i](m):  # type: ignore[misc]
                return False
        if edge.each_new:
            elements = m[edge.slot]
            assert isinstance(elements, tuple)
            n = len(elements)
            for i in edge.each_new:
                cond = runtime.nfa.branch.conditions[i]
                if cond.from_second and n == 1:
                    continue
                stats.predicate_evaluations += 1
                prev = elements[-2] if n > 1 else None
                if not conditions[i](m, event, prev, elements[:-1]):  # type: ignore[misc]
                    return False
        for i in edge.each_all:
            cond = runtime.nfa.branch.conditions[i]
            if not self._each(conditions[i], cond, m, runtime.slots):  # type: ignore[arg-type]
                return False
        return True

    def _each(self, fn: CompiledCondition, cond: Condition, m: list[object], slots: dict[str, int]) -> bool:
        """An element-wise condition over every element of its Kleene variable."""
        assert cond.iterates is not None
        elements = m[slots[cond.iterates]]
        assert isinstance(elements, tuple)
        for j, element in enumerate(elements):
            if cond.from_second and j == 0:
                continue
            self.stats.predicate_evaluations += 1
            if not fn(m, element, elements[j - 1] if j else None, elements[:j]):
                return False
        return True

    # --- acceptance -----------------------------------------------------------------------

    def _accept(
        self, index: int, runtime: _BranchRuntime, m: list[object], first_ts: float, last_ts: float
    ) -> None:
        branch = runtime.nfa.branch
        for i in runtime.nfa.at_accept:
            cond = branch.conditions[i]
            fn = runtime.conditions[i]
            assert fn is not None
            if cond.iterates is not None:
                if not self._each(fn, cond, m, runtime.slots):
                    return
            else:
                self.stats.predicate_evaluations += 1
                if not fn(m):
                    return
        match = Match(tuple((name, m[slot]) for name, slot in runtime.names))  # type: ignore[misc]
        if not runtime.negations:
            self._emit(match)
            return
        rows = frozenset(r for _, rs in match.key for r in rs)
        waiting: list[NegationCheck] = []
        for check in runtime.negations:
            buffer = self.buffers[check.bit]
            if check.violated(m, rows, first_ts, last_ts, buffer):
                return
            if check.trailing:
                waiting.append(check)
        if not waiting:
            self._emit(match)
            return
        pending = _Pending(match, m, rows, first_ts, last_ts, waiting, index)
        self.stats.created()
        self.pending_seq += 1
        heapq.heappush(self.pending, (first_ts + self.window, self.pending_seq, pending))

    def _release(self, pending: _Pending) -> None:
        self.stats.deleted()
        if not pending.dropped:
            self._emit(pending.match)

    def _emit(self, match: Match) -> None:
        if self.dedup is not None and not self.dedup.first_time(match):
            return
        self.stats.matches += 1
        self.out.append(match)


def _dead(instance: _Instance) -> bool:
    group = instance.group
    return group is not None and group.dead


def _in_window(pending: _Pending, event: Event, window: float) -> bool:
    return max(pending.max_ts, event.ts) - min(pending.min_ts, event.ts) <= window


def _same_key(runtime: _BranchRuntime, m: tuple[object, ...], event: Event) -> bool:
    """``[attr]``: the new event agrees with the events already taken (and is not missing)."""
    values = event.values
    for k in runtime.equiv:
        if values[k] is None:
            return False
    for binding in m:
        if binding is None:
            continue
        first = binding[0] if isinstance(binding, tuple) else binding
        assert isinstance(first, Event)
        return all(first.values[k] == values[k] for k in runtime.equiv)
    return True


def _negation_check(
    branch: Branch,
    name: str,
    bit: int,
    slots: dict[str, int],
    conditions: list[CompiledCondition | None],
    equiv: tuple[int, ...],
    window: float,
    stats: Stats,
) -> NegationCheck:
    mine = tuple(
        fn
        for c, fn in zip(branch.conditions, conditions, strict=True)
        if name in c.variables and fn is not None
    )
    return NegationCheck(
        name,
        bit,
        slots[name],
        tuple(slots[v] for v in sorted(branch.before(name))),
        tuple(slots[v] for v in sorted(branch.after(name))),
        mine,
        equiv,
        window,
        stats,
    )


def evaluate_eager(nfa: EagerNfa, events: Iterable[Event], schema: Schema, stats: Stats) -> Iterator[Match]:
    """Run the eager NFA over relevant events, yielding matches as they are found."""
    runtime = EagerRuntime(nfa, schema, stats)
    for event in events:
        stats.relevant_events += 1
        yield from runtime.process(event)
    yield from runtime.finish()
