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
from collections.abc import Iterable, Iterator, Sequence

from cepcli.automata.chain import Action
from cepcli.automata.tree import TreeBranch, TreeEdge, TreeNfa, tree_state
from cepcli.clock import Window
from cepcli.events import Event, Schema, events_of
from cepcli.runtime.acceptance import Acceptance, CompiledBranch
from cepcli.runtime.buffer import FIRST, EventBuffer, Key
from cepcli.runtime.filters import earliest, latest, takes
from cepcli.runtime.iterate import Iteration
from cepcli.runtime.loop import drive
from cepcli.runtime.matches import Match
from cepcli.runtime.memo import TakeMemo
from cepcli.runtime.options import EvalOptions, Instances
from cepcli.runtime.stats import Stats

COMPILED_STATES = 4096
_NOTHING: tuple[Match, ...] = ()


class _Edge:
    """A tree edge resolved to slots, its buffer and compiled conditions. ``memo`` is the
    edge's id in the ``TakeMemo`` (-1: not remembered), ``reads`` the variables its
    conditions read besides its own (their events decide what it accepts)."""

    __slots__ = (
        "spec",
        "slot",
        "bit",
        "buffer",
        "kleene",
        "prec",
        "succ",
        "check",
        "iteration",
        "memo",
        "reads",
        "read_slots",
    )

    def __init__(self, spec: TreeEdge, tree: _TreeRuntime, taken: frozenset[str]) -> None:
        self.spec = spec
        self.slot = tree.slots[spec.var]
        self.bit = tree.bits[spec.var]
        self.buffer = tree.buffers[self.bit]
        self.kleene = spec.action is Action.ITERATE
        self.prec = tuple(tree.slots[v] for v in spec.prec)
        self.succ = tuple(tree.slots[v] for v in spec.succ)
        self.check = tree.bound(spec.conditions.check)
        conditions = tree.tree.branch.conditions
        reads = frozenset(v for i in spec.conditions.check for v in conditions[i].variables) - {spec.var}
        self.reads = reads
        self.read_slots = tuple(sorted(tree.slots[v] for v in reads))
        # Remembered only when the conditions read another variable (the entry lives
        # while that variable's events are in the window) and the take is a single event.
        self.memo = -1 if self.kleene or not reads else tree.memo_id(taken, spec.var)
        group = None if spec.group_by is None else tree.schema.index(spec.group_by)
        each_new = tree.bound(spec.conditions.each_new)
        self.iteration = Iteration(
            spec.lo,
            spec.hi,
            each_new,
            tree.equiv,
            group,
            tree.window,
            tree.stats,
            tree.options,
            tree.first_element(spec.var) if self.kleene else (),
            tree.next_element(spec.var, each_new) if self.kleene else None,
            tree.growth_cuts(spec.var) if self.kleene else None,
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
        window: Window,
        stats: Stats,
        bits: dict[str, int],
        buffers: dict[int, EventBuffer],
        live_count: list[int],
        options: EvalOptions,
        memo_ids: dict[tuple[int, frozenset[str], str], int] | None = None,
        index: int = 0,
    ) -> None:
        super().__init__(tree.branch, schema)
        self.tree = tree
        self.schema = schema
        self.window = window
        self.options = options
        self.stats = stats
        self.bits = bits
        self.buffers = buffers
        # shared by the trees of a Multi-Tree, whose take memo is one: an edge's id names its
        # tree too (two OR branches' edges for the same variables read different conditions)
        self.memo_ids = memo_ids if memo_ids is not None else {}
        self.index = index
        self.live: dict[tuple[str, ...], _State] = {}
        self.compiled: dict[tuple[str, ...], dict[str, _Edge]] = {}  # least recently used first
        self.live_count = live_count  # shared by the trees of a Multi-Tree
        self.instantiated = 0
        self.early = [(self.negations_of([n], window, stats)[0], deps) for n, deps in tree.first_chance]
        self.post = self.negations_of(tree.post, window, stats)
        self.at_accept = self.bound(tree.at_accept)
        self.trigger_edges = {
            v: _Edge(tree_state(tree, ()).edge(v), self, frozenset()) for v in tree.positives
        } | {v: _Edge(_kleene_root_edge(tree, v), self, frozenset(tree.positives)) for v in tree.kleene}
        every = tree.positives + tree.kleene
        # per trigger variable: its bit, the buffers p_ne needs non-empty (reordered at
        # run time so that the one found empty last is looked at first), and its probes
        self.trigger_checks = [
            (v, bits[v], [buffers[bits[o]] for o in every if o != v], self._probes(v)) for v in tree.triggers
        ]

    def _probes(self, var: str) -> _Probes:
        """``p_ne`` per value: for each condition ``var.x = o.y`` with another positive
        variable ``o``, the column ``x`` of the arriving event and the count of ``o``'s
        buffered events per value of ``y``. A match needs an ``o`` with the value, so an
        arriving event whose value no buffered ``o`` holds starts nothing."""
        probes = []
        schema = self.schema
        for cond in self.tree.branch.conditions:
            join = cond.join
            if join is None or var not in cond.variables:
                continue
            attr, other = join.of(var)
            theirs = join.attr_of(other)
            if other not in self.tree.positives or schema.time_col in (attr, theirs):
                continue
            counts = self.buffers[self.bits[other]].count_values(schema.index(theirs))
            probes.append((schema.index(attr), counts))
        return probes

    def memo_id(self, taken: frozenset[str], var: str) -> int:
        """One id per (tree, variables taken, variable to take): the edges of every order of
        the same variables of one tree are the same edge (same conditions, same ordering
        filters); another tree's (another OR branch's) are not."""
        return self.memo_ids.setdefault((self.index, taken, var), len(self.memo_ids))

    def enter(self, ord: tuple[str, ...]) -> _State:
        """The live state for ``ord``, instantiated if no instance is in it. The edges
        of recently used states stay compiled (at most ``COMPILED_STATES``), so a state
        that comes and goes with its instances is not built again each time."""
        state = self.live.get(ord)
        if state is None:
            edges = self.compiled.pop(ord, None)
            if edges is None:
                taken = frozenset(ord)
                edges = {e.var: _Edge(e, self, taken) for e in tree_state(self.tree, ord).edges}
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


class _Evaluation:
    """One evaluation, started by an arriving event: the tree, the event (everything
    taken lies before it, at ``last``) and the Kleene variable whose subsets must end
    with it (``pinned``), if the event arrived as one."""

    __slots__ = ("tree", "trigger", "last", "pinned")

    def __init__(self, tree: _TreeRuntime, trigger: Event, pinned: str | None) -> None:
        self.tree = tree
        self.trigger = trigger
        self.last: Key = (trigger.ts, trigger.row)
        self.pinned = pinned


_Probes = list[tuple[int, dict[object, int]]]
_Trigger = tuple[_TreeRuntime, str, list[EventBuffer], _Probes]


def _nonempty(buffers: list[EventBuffer], limit: int) -> bool:
    """``p_ne`` at the root: every other variable has an event in the window (the
    buffers are evicted up to ``limit`` on the way, so their counters are exact)."""
    for i, buffer in enumerate(buffers):
        if not buffer.count_since(limit):
            if i:
                buffers.insert(0, buffers.pop(i))
            return False
    return True


def _rarest(edges: dict[str, _Edge], pinned: str | None) -> _Edge | None:
    """``p_se``: the edge of the remaining variable with the fewest buffered events
    (ties: the first written); None when one has none (``p_ne``)."""
    best: _Edge | None = None
    fewest = -1
    for var, edge in edges.items():
        if var == pinned:
            continue
        count = len(edge.buffer)
        if count == 0:
            return None
        if best is None or count < fewest:
            best, fewest = edge, count
    return best


def _kleene_root_edge(tree: TreeBranch, var: str) -> TreeEdge:
    """The iterate edge of a Kleene variable whose subset ends with the arriving event
    (it is taken once every other variable is: here only its conditions matter)."""
    others = frozenset(v.name for v in tree.branch.positives) - {var}
    state = tree_state(tree, tuple(sorted(others)))
    return state.edge(var)


class TreeRuntime:
    def __init__(self, nfa: TreeNfa, schema: Schema, stats: Stats, options: EvalOptions) -> None:
        pattern = nfa.pattern
        self.window = Window(pattern.window)
        self.stats = stats
        self.instances = Instances(stats, options.max_instances, "tree")
        self.bits = {v.name: v.bit for v in pattern.variables}
        self.live_count = [0]
        self.buffers: dict[int, EventBuffer] = {
            v.bit: EventBuffer(stats, self.window) for v in pattern.variables if not v.negated
        }
        memo_ids: dict[tuple[int, frozenset[str], str], int] = {}
        self.trees = [
            _TreeRuntime(
                t, schema, self.window, stats, self.bits, self.buffers, self.live_count, options, memo_ids, k
            )
            for k, t in enumerate(nfa.branches)
        ]
        self.memo = TakeMemo(stats, self.instances)
        self.routes: dict[int, tuple[list[EventBuffer], list[_Trigger]]] = {}
        self.acceptance = Acceptance(pattern, stats, self.instances)
        self.orders: Counter[tuple[str, ...]] = Counter()
        self.peak_live_states = 0

    def process(self, event: Event) -> Iterator[Match]:
        acceptance = self.acceptance
        acceptance.advance(event)
        if acceptance.out:
            yield from acceptance.take_output()
        route = self.routes.get(event.mask)
        if route is None:
            route = self.routes[event.mask] = self._route(event.mask)
        buffers, triggers = route
        for buffer in buffers:
            buffer.add(event)  # evicts what the window left behind
        if triggers:
            limit = self.window.horizon(event.ts)
            for tree, var, others, probes in triggers:
                if _nonempty(others, limit) and self._probe(probes, event):
                    self.memo.expire(limit)
                    yield from self._trigger(tree, var, event)

    def _route(self, mask: int) -> tuple[list[EventBuffer], list[_Trigger]]:
        """Where an event of variables ``mask`` goes: the buffers it is stored in, and the
        variables it can be the last event of (with their trees)."""
        buffers = [b for bit, b in self.buffers.items() if mask >> bit & 1]
        triggers = [
            (tree, var, others, probes)
            for tree in self.trees
            for var, bit, others, probes in tree.trigger_checks
            if mask >> bit & 1
        ]
        return buffers, triggers

    def finish(self) -> Iterator[Match]:
        self.acceptance.finish()
        yield from self.acceptance.take_output()

    def _probe(self, probes: _Probes, event: Event) -> bool:
        """Does some buffered event hold the value of each equality join of ``event``?
        (One hash look-up stands for the equality against all of them: counted as one
        predicate evaluation.)"""
        values = event.values
        for column, counts in probes:
            self.stats.predicate_evaluations += 1
            if values[column] not in counts:
                return False
        return True

    # --- the descent ------------------------------------------------------------------------

    def _trigger(self, tree: _TreeRuntime, var: str, event: Event) -> Iterable[Match]:
        m: list[object] = [None] * len(tree.slots)
        if var in tree.tree.kleene:
            return self._descend(_Evaluation(tree, event, var), (), m, (), event.ts, event.ts)
        edge = tree.trigger_edges[var]
        if not takes(tree.equiv, edge.slot, edge.check, m, event, self.stats):
            return _NOTHING
        m[edge.slot] = event
        return self._descend(_Evaluation(tree, event, None), (var,), m, (event.row,), event.ts, event.ts)

    def _descend(
        self,
        ev: _Evaluation,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: int,
        max_ts: int,
    ) -> Iterable[Match]:
        """An instance in ``q_ord`` (``m`` bound, of rows ``rows``, between ``min_ts`` and
        ``max_ts``). It looks at its next take at once; only an instance with somewhere to
        go costs a generator (most instances of a busy stream die here)."""
        stats = self.stats
        self.instances.made()
        tree, pinned = ev.tree, ev.pinned
        state = tree.enter(ord)
        if self.live_count[0] > self.peak_live_states:
            self.peak_live_states = self.live_count[0]
        if not tree.early or self._first_chance(tree, ord, m, rows, min_ts, max_ts):
            if len(state.edges) == (pinned in state.edges):  # nothing left but the pinned Kleene var
                return self._continue(ev, state, None, (), ord, m, rows, min_ts, max_ts)
            edge = _rarest(state.edges, pinned)
            if edge is not None:
                items = self._candidates(ev, edge, ord, m, rows, min_ts, max_ts)
                if items or edge.kleene:
                    return self._continue(ev, state, edge, items, ord, m, rows, min_ts, max_ts)
        tree.leave(state)
        stats.deleted()
        return _NOTHING

    def _candidates(
        self,
        ev: _Evaluation,
        edge: _Edge,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: int,
        max_ts: int,
    ) -> Sequence[Event]:
        """The buffered events ``edge`` takes (for a Kleene edge: the candidates of its
        subsets), within the ordering filters of the path, the window, and before the
        arriving event."""
        bounds = (
            latest(edge.prec, m) if edge.prec else FIRST,
            min(earliest(edge.succ, m), ev.last) if edge.succ else ev.last,
            *self.window.reach(min_ts, max_ts),
        )
        tree = ev.tree
        if edge.memo >= 0 and (ev.pinned is not None or ord[0] not in edge.reads):
            # the arriving event is not read: what earlier evaluations checked still holds
            bound = [e for s in edge.read_slots for e in events_of(m[s])]
            found = self.memo.candidates(
                (edge.memo, tuple(e.row for e in bound)),
                min(e.ts for e in bound),
                edge.buffer,
                bounds,
                (tree.equiv, edge.slot, edge.check, m),
            )
            return [e for e in found if e.row not in rows]
        candidates = edge.buffer.between(*bounds)
        if edge.kleene:
            return candidates
        equiv, slot, check, stats = tree.equiv, edge.slot, edge.check, self.stats
        return [e for e in candidates if e.row not in rows and takes(equiv, slot, check, m, e, stats)]

    def _continue(
        self,
        ev: _Evaluation,
        state: _State,
        edge: _Edge | None,
        items: Sequence[Event],
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: int,
        max_ts: int,
    ) -> Iterator[Match]:
        """The instance in ``state`` takes each of ``items`` in turn (or closes when
        ``edge`` is None); it leaves the state when done."""
        try:
            if edge is None:
                yield from self._close(ev, ord, m, rows, min_ts, max_ts)
                return
            child = ord + (edge.spec.var,)
            if edge.kleene:
                for subset, lo_ts in edge.iteration.subsets(m, rows, items, min_ts, max_ts, None):
                    m2 = list(m)
                    m2[edge.slot] = subset
                    new_rows = rows + tuple(e.row for e in subset)
                    yield from self._descend(ev, child, m2, new_rows, lo_ts, max(max_ts, subset[-1].ts))
                return
            for event in items:
                m2 = list(m)
                m2[edge.slot] = event
                yield from self._descend(
                    ev, child, m2, rows + (event.row,), min(min_ts, event.ts), max(max_ts, event.ts)
                )
        finally:
            ev.tree.leave(state)
            self.stats.deleted()

    def _close(
        self,
        ev: _Evaluation,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: int,
        max_ts: int,
    ) -> Iterator[Match]:
        """Everything else is taken: accept, or first iterate the pinned Kleene
        variable over the subsets that end with the arriving event."""
        tree, pinned, trigger = ev.tree, ev.pinned, ev.trigger
        if pinned is None:
            self.orders[ord] += 1
            yield from self._accept(tree, m, min_ts, max_ts)
            return
        edge = tree.trigger_edges[pinned]
        candidates = self.buffers[edge.bit].between(
            latest(edge.prec, m), ev.last, *self.window.reach(min_ts, trigger.ts)
        )
        for subset, lo_ts in edge.iteration.subsets(m, rows, candidates, min_ts, trigger.ts, trigger):
            m2 = list(m)
            m2[edge.slot] = subset
            self.orders[ord + (pinned,)] += 1
            yield from self._accept(tree, m2, lo_ts, max(max_ts, trigger.ts))

    def report(self) -> None:
        """Tree-specific statistics: peak live states, states made, orders used."""
        extra = self.stats.extra
        extra["peak_live_states"] = self.peak_live_states
        extra["tree_states_instantiated"] = sum(t.instantiated for t in self.trees)
        extra["tree_orders"] = {" ".join(o): n for o, n in self.orders.most_common(10)}
        extra["tree_memo_hits"] = self.memo.hits

    def _first_chance(
        self,
        tree: _TreeRuntime,
        ord: tuple[str, ...],
        m: list[object],
        rows: tuple[int, ...],
        min_ts: int,
        max_ts: int,
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

    def _accept(self, tree: _TreeRuntime, m: list[object], min_ts: int, max_ts: int) -> Iterator[Match]:
        if not tree.complete(tree.at_accept, m, self.stats):
            return
        buffers = self.acceptance.buffers
        checks = sorted(tree.post, key=lambda c: -len(buffers[c.bit]))  # most frequent first
        self.acceptance.accept(tree.names, m, min_ts, max_ts, checks)
        yield from self.acceptance.take_output()


def evaluate_tree(
    nfa: TreeNfa, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    """Run the (Multi-)Tree NFA over relevant events, yielding matches as found."""
    return drive(TreeRuntime(nfa, schema, stats, options), events, stats, options.every)
