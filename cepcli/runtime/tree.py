"""Runs a ``TreeNfa``: lazy evaluation whose order follows the buffer counters.

Every relevant event is stored in the buffer of each positive variable it can serve;
a buffer evicts by the window, so its length is the paper's per-variable counter.
When an event arrives that can be the last of a match, the root takes it (for each
variable it can be), and, if every other variable has a buffered event (``p_ne``),
the instance moves down the tree taking next, at every state, the variable with the
fewest buffered events (``p_se``; ties go to the variable written first in the
query), from the buffer, within the ordering filters of the path that reached the
state and before the arriving event. States exist while an instance is in them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from cepcli.automata.chain import Action
from cepcli.automata.tree import TreeBranch, TreeEdge, TreeNfa, tree_state
from cepcli.events import Event, Schema
from cepcli.runtime.acceptance import Acceptance, CompiledBranch
from cepcli.runtime.filters import earliest, latest, takes
from cepcli.runtime.iterate import Iteration
from cepcli.runtime.loop import drive
from cepcli.runtime.matches import Match
from cepcli.runtime.negation import EventBuffer, Key
from cepcli.runtime.stats import Stats

COMPILED_STATES = 4096


class _Edge:
    """A tree edge resolved to slots and compiled conditions."""

    __slots__ = ("spec", "slot", "bit", "kleene", "prec", "succ", "check", "iteration")

    def __init__(self, spec: TreeEdge, tree: _TreeRuntime) -> None:
        self.spec = spec
        self.slot = tree.slots[spec.var]
        self.bit = tree.bits[spec.var]
        self.kleene = spec.action is Action.ITERATE
        self.prec = tuple(tree.slots[v] for v in spec.prec)
        self.succ = tuple(tree.slots[v] for v in spec.succ)
        self.check = tree.bound(spec.conditions.check)
        group = None if spec.group_by is None else tree.schema.index(spec.group_by)
        self.iteration = Iteration(
            spec.lo, spec.hi, tree.bound(spec.conditions.each_new), tree.equiv, group, tree.window, tree.stats
        )


class _State:
    __slots__ = ("ord", "edges", "users")

    def __init__(self, ord: tuple[str, ...], edges: dict[str, _Edge]) -> None:
        self.ord = ord
        self.edges = edges
        self.users = 0


class _TreeRuntime(CompiledBranch):
    def __init__(
        self,
        tree: TreeBranch,
        schema: Schema,
        window: float,
        stats: Stats,
        bits: dict[str, int],
        live_count: list[int],
    ) -> None:
        super().__init__(tree.branch, schema)
        self.tree = tree
        self.schema = schema
        self.window = window
        self.stats = stats
        self.bits = bits
        self.live: dict[tuple[str, ...], _State] = {}
        self.compiled: dict[tuple[str, ...], dict[str, _Edge]] = {}  # least recently used first
        self.live_count = live_count  # shared by the trees of a Multi-Tree
        self.instantiated = 0
        self.early = [(self.negations_of([n], window, stats)[0], deps) for n, deps in tree.first_chance]
        self.post = self.negations_of(tree.post, window, stats)
        self.at_accept = self.bound(tree.at_accept)
        self.trigger_edges = {v: _Edge(tree_state(tree, ()).edge(v), self) for v in tree.positives} | {
            v: _Edge(_kleene_root_edge(tree, v), self) for v in tree.kleene
        }

    def enter(self, ord: tuple[str, ...]) -> _State:
        """The live state for ``ord``, instantiated if no instance is in it. The edges
        of recently used states stay compiled (at most ``COMPILED_STATES``), so a state
        that comes and goes with its instances is not built again each time."""
        state = self.live.get(ord)
        if state is None:
            edges = self.compiled.pop(ord, None)
            if edges is None:
                edges = {e.var: _Edge(e, self) for e in tree_state(self.tree, ord).edges}
                self.instantiated += 1
                if len(self.compiled) >= COMPILED_STATES:
                    del self.compiled[next(iter(self.compiled))]
            self.compiled[ord] = edges
            state = self.live[ord] = _State(ord, edges)
            self.live_count[0] += 1
        state.users += 1
        return state

    def leave(self, state: _State) -> None:
        state.users -= 1
        if not state.users:
            del self.live[state.ord]
            self.live_count[0] -= 1


def _kleene_root_edge(tree: TreeBranch, var: str) -> TreeEdge:
    """The iterate edge of a Kleene variable whose subset ends with the arriving event
    (it is taken once every other variable is: here only its conditions matter)."""
    others = frozenset(v.name for v in tree.branch.positives) - {var}
    state = tree_state(tree, tuple(sorted(others)))
    return state.edge(var)


class TreeRuntime:
    def __init__(self, nfa: TreeNfa, schema: Schema, stats: Stats) -> None:
        pattern = nfa.pattern
        self.window = pattern.window
        self.stats = stats
        self.bits = {v.name: v.bit for v in pattern.variables}
        self.live_count = [0]
        self.trees = [
            _TreeRuntime(t, schema, self.window, stats, self.bits, self.live_count) for t in nfa.branches
        ]
        self.buffers: dict[int, EventBuffer] = {
            v.bit: EventBuffer(stats, self.window) for v in pattern.variables if not v.negated
        }
        self.stored_mask = sum(1 << bit for bit in self.buffers)
        self.acceptance = Acceptance(pattern, stats)
        self.orders: Counter[tuple[str, ...]] = Counter()
        self.peak_live_states = 0

    def process(self, event: Event) -> Iterator[Match]:
        acceptance = self.acceptance
        acceptance.advance(event)
        if acceptance.out:
            yield from acceptance.take_output()
        limit = event.ts - self.window
        for buffer in self.buffers.values():
            buffer.evict_before(limit)  # exact counters: every buffer follows the window
        mask = event.mask
        if mask & self.stored_mask:
            for bit, buffer in self.buffers.items():
                if mask >> bit & 1:
                    buffer.add(event)
        for tree in self.trees:
            for var in tree.tree.triggers:
                if mask >> self.bits[var] & 1 and self._nonempty(tree, var):
                    yield from self._trigger(tree, var, event)

    def finish(self) -> Iterator[Match]:
        self.acceptance.finish()
        yield from self.acceptance.take_output()

    def counter(self, var: str) -> int:
        return len(self.buffers[self.bits[var]])

    def _nonempty(self, tree: _TreeRuntime, var: str) -> bool:
        """``p_ne`` at the root: every other variable has a buffered event."""
        return all(self.counter(v) for v in tree.tree.positives + tree.tree.kleene if v != var)

    # --- the descent ------------------------------------------------------------------------

    def _trigger(self, tree: _TreeRuntime, var: str, event: Event) -> Iterator[Match]:
        m: list[object] = [None] * len(tree.slots)
        key = (event.ts, event.row)
        if var in tree.tree.kleene:
            yield from self._descend(tree, (), m, (), event.ts, event.ts, key, var, event)
            return
        edge = tree.trigger_edges[var]
        if takes(tree.equiv, edge.slot, edge.check, m, event, self.stats):
            m[edge.slot] = event
            yield from self._descend(tree, (var,), m, (event.row,), event.ts, event.ts, key, None, event)

    def _descend(
        self,
        tree: _TreeRuntime,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: float,
        max_ts: float,
        last: Key,
        pinned: str | None,
        trigger: Event,
    ) -> Iterator[Match]:
        """An instance in ``q_ord``: everything it takes lies before ``last``; a
        ``pinned`` Kleene variable's subsets end with the arriving ``trigger``."""
        stats = self.stats
        stats.created()
        state = tree.enter(ord)
        if self.live_count[0] > self.peak_live_states:
            self.peak_live_states = self.live_count[0]
        try:
            if not self._first_chance(tree, ord, m, rows, min_ts, max_ts):
                return
            remaining = [v for v in state.edges if v != pinned]
            if not remaining:
                yield from self._close(tree, ord, m, rows, min_ts, max_ts, last, pinned, trigger)
                return
            var = self._rarest(remaining)
            if var is None:
                return
            edge = state.edges[var]
            before = min(earliest(edge.succ, m), last)
            candidates = self.buffers[edge.bit].between(
                latest(edge.prec, m), before, max_ts - self.window, min_ts + self.window
            )
            if edge.kleene:
                for subset, lo_ts in edge.iteration.subsets(m, rows, candidates, min_ts, max_ts, None):
                    m2 = list(m)
                    m2[edge.slot] = subset
                    new_rows = rows + tuple(e.row for e in subset)
                    yield from self._descend(
                        tree,
                        ord + (var,),
                        m2,
                        new_rows,
                        lo_ts,
                        max(max_ts, subset[-1].ts),
                        last,
                        pinned,
                        trigger,
                    )
            else:
                for event in candidates:
                    if event.row in rows or not takes(
                        tree.equiv, edge.slot, edge.check, m, event, self.stats
                    ):
                        continue
                    m2 = list(m)
                    m2[edge.slot] = event
                    yield from self._descend(
                        tree,
                        ord + (var,),
                        m2,
                        rows + (event.row,),
                        min(min_ts, event.ts),
                        max(max_ts, event.ts),
                        last,
                        pinned,
                        trigger,
                    )
        finally:
            tree.leave(state)
            stats.deleted()

    def _close(
        self,
        tree: _TreeRuntime,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: float,
        max_ts: float,
        last: Key,
        pinned: str | None,
        trigger: Event,
    ) -> Iterator[Match]:
        """Everything else is taken: accept, or first iterate the pinned Kleene
        variable over the subsets that end with the arriving event."""
        if pinned is None:
            self.orders[ord] += 1
            yield from self._accept(tree, m, min_ts, max_ts)
            return
        edge = tree.trigger_edges[pinned]
        candidates = self.buffers[edge.bit].between(
            latest(edge.prec, m), last, trigger.ts - self.window, min_ts + self.window
        )
        for subset, lo_ts in edge.iteration.subsets(m, rows, candidates, min_ts, trigger.ts, trigger):
            m2 = list(m)
            m2[edge.slot] = subset
            self.orders[ord + (pinned,)] += 1
            yield from self._accept(tree, m2, lo_ts, max(max_ts, trigger.ts))

    def _rarest(self, remaining: list[str]) -> str | None:
        """``p_se``: the remaining variable with the fewest buffered events (ties: the
        first written); None when one has none (``p_ne``)."""
        best: str | None = None
        fewest = -1
        for var in remaining:
            count = self.counter(var)
            if count == 0:
                return None
            if best is None or count < fewest:
                best, fewest = var, count
        return best

    def report(self) -> None:
        """Tree-specific statistics: peak live states, states made, orders used."""
        extra = self.stats.extra
        extra["peak_live_states"] = self.peak_live_states
        extra["tree_states_instantiated"] = sum(t.instantiated for t in self.trees)
        extra["tree_orders"] = {" ".join(o): n for o, n in self.orders.most_common(10)}

    def _first_chance(
        self,
        tree: _TreeRuntime,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: float,
        max_ts: float,
    ) -> bool:
        """First-chance negations whose dependencies were completed by the last take."""
        if not tree.early or not ord:
            return True
        taken = set(ord)
        before = taken - {ord[-1]}
        buffers = self.acceptance.buffers
        return not any(
            deps <= taken
            and not deps <= before
            and check.violated(m, frozenset(rows), min_ts, max_ts, buffers[check.bit])
            for check, deps in tree.early
        )

    def _accept(self, tree: _TreeRuntime, m: list[object], min_ts: float, max_ts: float) -> Iterator[Match]:
        if not tree.complete(tree.at_accept, m, self.stats):
            return
        buffers = self.acceptance.buffers
        checks = sorted(tree.post, key=lambda c: -len(buffers[c.bit]))  # most frequent first
        self.acceptance.accept(tree.names, m, min_ts, max_ts, checks)
        yield from self.acceptance.take_output()


def evaluate_tree(nfa: TreeNfa, events: Iterable[Event], schema: Schema, stats: Stats) -> Iterator[Match]:
    """Run the (Multi-)Tree NFA over relevant events, yielding matches as found."""
    return drive(TreeRuntime(nfa, schema, stats), events, stats)
