"""Runs an ``EagerNfa``: every relevant event is applied, on arrival, to every instance.

Instances are kept in one list per state. Every instance descends from one take of
the first event of its match, and all instances of such a *group* share that first
timestamp; groups are created in time order, so the window expires them from the
front of a deque in amortised O(1). Negated variables are checked on acceptance
(``runtime.acceptance``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from cepcli.automata.eager import EagerBranch, EagerNfa, TakeEdge
from cepcli.clock import Window
from cepcli.events import Event, Schema
from cepcli.plan.keys import same_key
from cepcli.plan.python import CompiledCondition
from cepcli.runtime.acceptance import Acceptance, CompiledBranch, first_holds, holds_for_each
from cepcli.runtime.loop import drive
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions, Instances
from cepcli.runtime.stats import Stats


class _Group:
    """Instances that share their first event (and so their first timestamp)."""

    __slots__ = ("first_ts", "alive", "dead")

    def __init__(self, first_ts: int) -> None:
        self.first_ts = first_ts
        self.alive = 0
        self.dead = False


class _Instance:
    __slots__ = ("state", "m", "group")

    def __init__(self, state: int, m: tuple[object, ...], group: _Group | None) -> None:
        self.state = state
        self.m = m
        self.group = group


class _BranchRuntime(CompiledBranch):
    def __init__(self, nfa: EagerBranch, schema: Schema, window: Window, stats: Stats) -> None:
        super().__init__(nfa.branch, schema)
        branch = nfa.branch
        self.nfa = nfa
        self.root = _Instance(0, tuple(None for _ in branch.variables), None)
        self.lists: list[list[_Instance]] = [[] for _ in nfa.states]
        self.lists[0].append(self.root)
        self.out_edges = [nfa.edges_from(s) for s in range(len(nfa.states))]
        self.by_mask: dict[int, list[tuple[int, tuple[TakeEdge, ...]]]] = {}
        self.negations = self.negations_of([v.name for v in branch.negated], window, stats)
        self.at_accept = self.bound(nfa.at_accept)
        # by a Kleene variable's slot: the conditions that cut its subsets at their first element
        self.firsts = {self.slots[v.name]: self.first_element(v.name) for v in branch.positives if v.kleene}
        # and the bounds that cut them as they grow (``count(b[]) <= 2``: ``runtime.cuts``)
        self.cuts = {self.slots[v.name]: self.growth_cuts(v.name) for v in branch.positives if v.kleene}
        # skip_till_next_match over a Kleene variable: by the state its run grows in (its
        # loop edge), the conditions that say what the run's next element is; an instance
        # there that lets such an event pass (by not taking it) can only break the strategy
        self.forced: dict[int, tuple[TakeEdge, tuple[CompiledCondition, ...], int | None]] = {}
        for state, edges in enumerate(self.out_edges):
            for edge in edges:
                if edge.kleene and edge.target == state:
                    found = self.next_element(edge.var, self.bound(edge.each_new))
                    if found is not None:
                        hi = next(v.hi for v in branch.variables if v.name == edge.var)
                        self.forced[state] = (edge, tuple(fn for fn, _ in found), hi)

    def passes_by(self, state: int, instance: _Instance, event: Event, stats: Stats) -> bool:
        """Would ``instance`` (in ``state``) let its run's next element pass by, if it kept
        waiting without ``event``? (Under skip_till_next_match it may not.)"""
        edge, conditions, hi = self.forced[state]
        if not event.mask >> edge.bit & 1:
            return False
        run = instance.m[edge.slot]
        if not isinstance(run, tuple) or (hi is not None and len(run) >= hi):
            return False
        if self.equiv and not same_key(self.equiv, instance.m, event):
            return False
        m = list(instance.m)
        m[edge.slot] = run + (event,)
        for fn in conditions:
            stats.predicate_evaluations += 1
            if not fn(m, event, run[-1], run):
                return False
        return True

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
    def __init__(self, nfa: EagerNfa, schema: Schema, stats: Stats, options: EvalOptions) -> None:
        self.window = Window(nfa.pattern.window)
        self.stats = stats
        self.instances = Instances(stats, options.max_instances, "eager")
        self.branches = [_BranchRuntime(b, schema, self.window, stats) for b in nfa.branches]
        self.groups: deque[_Group] = deque()
        self.dead_in_lists = 0
        self.acceptance = Acceptance(nfa.pattern, stats, self.instances)

    def process(self, event: Event) -> list[Match]:
        self.acceptance.advance(event)
        self._expire(event.ts)
        for runtime in self.branches:
            self._apply(runtime, event)
        return self.acceptance.take_output()

    def report(self) -> None:
        """Nothing beyond the counters kept as it runs."""

    def finish(self) -> list[Match]:
        self.acceptance.finish()
        return self.acceptance.take_output()

    def _expire(self, now: int) -> None:
        limit = self.window.horizon(now)
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

    def _apply(self, runtime: _BranchRuntime, event: Event) -> None:
        created: list[_Instance] = []
        for state, edges in runtime.routes(event.mask):
            instances = runtime.lists[state]
            alive = [i for i in instances if not _dead(i)]
            if len(alive) != len(instances):
                self.dead_in_lists -= len(instances) - len(alive)
                runtime.lists[state] = alive
            passed: list[_Instance] = []
            for instance in alive:
                for edge in edges:
                    new = self._take(runtime, instance, edge, event)
                    if new is not None:
                        created.append(new)
                if state in runtime.forced and runtime.passes_by(state, instance, event, self.stats):
                    passed.append(instance)
            if passed:  # (those that took the event live on in ``created``)
                gone = set(map(id, passed))
                runtime.lists[state] = [i for i in runtime.lists[state] if id(i) not in gone]
                for instance in passed:
                    if instance.group is not None:
                        instance.group.alive -= 1
                self.stats.deleted(len(passed))
        for new in created:
            runtime.lists[new.state].append(new)

    def _take(
        self, runtime: _BranchRuntime, instance: _Instance, edge: TakeEdge, event: Event
    ) -> _Instance | None:
        if runtime.equiv and not same_key(runtime.equiv, instance.m, event):
            return None
        m = list(instance.m)
        if edge.kleene:
            elements: tuple[Event, ...] = (m[edge.slot] or ()) + (event,)  # type: ignore[operator]
            m[edge.slot] = elements
            if len(elements) == 1 and not first_holds(runtime.firsts[edge.slot], m, self.stats):
                return None
            cuts = runtime.cuts[edge.slot]
            if cuts is not None and cuts.dead(m, elements, None):
                return None  # it, and every instance that would grow from it, breaks a bound
        else:
            m[edge.slot] = event
        if not self._edge_conditions(runtime, edge, m, event):
            return None
        group = instance.group
        if group is None:
            group = _Group(event.ts)
            self.groups.append(group)
        keep = bool(runtime.out_edges[edge.target])
        self.instances.made()
        if keep:
            group.alive += 1
        else:
            self.stats.deleted()
        if edge.target in runtime.nfa.accepting:
            self._accept(runtime, m, group.first_ts, event.ts)
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
                if runtime.nfa.branch.conditions[i].from_second and n == 1:
                    continue
                stats.predicate_evaluations += 1
                prev = elements[-2] if n > 1 else None
                if not conditions[i](m, event, prev, elements[:-1]):  # type: ignore[misc]
                    return False
        return all(self._each(runtime, i, m) for i in edge.each_all)

    def _each(self, runtime: _BranchRuntime, i: int, m: list[object]) -> bool:
        cond = runtime.nfa.branch.conditions[i]
        fn = runtime.conditions[i]
        assert cond.iterates is not None and fn is not None
        elements = m[runtime.slots[cond.iterates]]
        assert isinstance(elements, tuple)
        return holds_for_each(fn, cond, m, elements, self.stats)

    def _accept(self, runtime: _BranchRuntime, m: list[object], first_ts: int, last_ts: int) -> None:
        if runtime.complete(runtime.at_accept, m, self.stats):
            self.acceptance.accept(runtime.names, m, first_ts, last_ts, runtime.negations)


def _dead(instance: _Instance) -> bool:
    group = instance.group
    return group is not None and group.dead


def evaluate_eager(
    nfa: EagerNfa, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    """Run the eager NFA over relevant events, yielding matches as they are found."""
    return drive(EagerRuntime(nfa, schema, stats, options), events, stats, options.every)
