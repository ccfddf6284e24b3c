"""Runs a ``ChainNfa``: lazy evaluation with an input buffer (paper section 3).

Every relevant event is first *stored* in the buffer of each variable it can serve
(one chronological ``EventBuffer`` per variable, shared by all instances: the
instances' input buffers are ranges of it). An instance in state ``q_i`` has taken
the rarest ``i`` variables. Entering a state, it *takes* the candidates of the
state's variable from the buffer, searched within the ordering filters and the
window, and each successful take enters the next state (depth first); if the variable
may still arrive, the instance then waits in the state for it on the stream until
the window after its first event closes. A Kleene state *iterates*: it yields the
subsets of the candidates lazily, checking element-wise conditions while a subset
grows, and on the stream only the subsets that end with the new event. Every match
is therefore found exactly once, by the unique path that takes its events in the
chain's order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from cepcli.automata.chain import Action, Chain, ChainNfa, ChainState
from cepcli.clock import Window
from cepcli.events import FAR_FUTURE, FAR_PAST, Event, Schema
from cepcli.runtime.acceptance import Acceptance, CompiledBranch
from cepcli.runtime.buffer import EventBuffer
from cepcli.runtime.filters import earliest, latest, takes
from cepcli.runtime.iterate import Iteration
from cepcli.runtime.loop import drive
from cepcli.runtime.matches import Match
from cepcli.runtime.negation import NegationCheck
from cepcli.runtime.options import EvalOptions, Instances
from cepcli.runtime.stats import Stats


class _Waiting:
    """An instance waiting in a state for its variable on the stream."""

    __slots__ = ("m", "rows", "min_ts", "max_ts", "born", "dead")

    def __init__(self, m: list[object], rows: tuple[int, ...], min_ts: int, max_ts: int, born: int) -> None:
        self.m, self.rows, self.min_ts, self.max_ts = m, rows, min_ts, max_ts
        self.born = born
        self.dead = False


class _State:
    """A chain state, resolved to slots, bits and compiled conditions."""

    __slots__ = (
        "spec",
        "bit",
        "slot",
        "kleene",
        "prec",
        "succ",
        "check",
        "each_new",
        "rejects",
        "from_stream",
        "iteration",
    )

    def __init__(self, spec: ChainState, runtime: _ChainRuntime, bit: int, group: int | None) -> None:
        slots = runtime.slots
        self.spec = spec
        self.bit = bit
        self.slot = slots[spec.var]
        self.kleene = spec.action is Action.ITERATE
        self.prec = tuple(slots[v] for v in spec.prec)
        self.succ = tuple(slots[v] for v in spec.succ)
        self.check = runtime.bound(spec.conditions.check)
        self.each_new = runtime.bound(spec.conditions.each_new)
        # Kleene variables come last, so no take ever completes an element-wise condition
        # of a Kleene variable taken before it (the eager NFA's ``each_all``).
        assert not spec.conditions.each_all
        self.rejects: list[NegationCheck] = []
        self.from_stream = spec.from_stream
        self.iteration = Iteration(
            spec.lo,
            spec.hi,
            self.each_new,
            runtime.equiv,
            group,
            runtime.window,
            runtime.stats,
            runtime.options,
            runtime.first_element(spec.var) if self.kleene else (),
            runtime.next_element(spec.var, self.each_new) if self.kleene else None,
            runtime.growth_cuts(spec.var) if self.kleene else None,
        )


class _ChainRuntime(CompiledBranch):
    def __init__(
        self,
        chain: Chain,
        schema: Schema,
        window: Window,
        stats: Stats,
        bits: dict[str, int],
        options: EvalOptions,
    ) -> None:
        super().__init__(chain.branch, schema)
        branch = chain.branch
        self.chain = chain
        self.window = window
        self.stats = stats
        self.options = options
        self.states = [
            _State(s, self, bits[s.var], None if s.group_by is None else schema.index(s.group_by))
            for s in chain.states
        ]
        for state in self.states:
            state.rejects = self.negations_of(state.spec.rejects, window, stats)
        self.post = self.negations_of([n.var for n in chain.negative], window, stats)
        self.at_accept = self.bound(chain.at_accept)
        root = _Waiting([None] * len(branch.variables), (), FAR_FUTURE, FAR_PAST, 0)
        self.waiting: list[list[_Waiting]] = [[root]] + [[] for _ in chain.states[1:]]


class ChainRuntime:
    def __init__(self, nfa: ChainNfa, schema: Schema, stats: Stats, options: EvalOptions) -> None:
        pattern = nfa.pattern
        self.window = Window(pattern.window)
        self.stats = stats
        self.instances = Instances(stats, options.max_instances, "chain")
        bits = {v.name: v.bit for v in pattern.variables}
        self.chains = [_ChainRuntime(c, schema, self.window, stats, bits, options) for c in nfa.chains]
        searched = sorted({s.bit for c in self.chains for s in c.states if s.kleene or s is not c.states[0]})
        self.buffers: dict[int, EventBuffer] = {bit: EventBuffer(stats, self.window) for bit in searched}
        self.stored_mask = sum(1 << bit for bit in self.buffers)
        self.acceptance = Acceptance(pattern, stats, self.instances)
        self.expiry: list[tuple[int, int, _Waiting]] = []
        self.seq = 0
        self.waits = 0
        self.dead_waiting = 0

    # --- the event loop -------------------------------------------------------------------

    def process(self, event: Event) -> Iterator[Match]:
        self.seq += 1
        acceptance = self.acceptance
        acceptance.advance(event)
        if acceptance.out:
            yield from acceptance.take_output()
        if self.expiry and self.expiry[0][0] < event.ts:
            self._expire(event.ts)
        mask = event.mask
        if mask & self.stored_mask:
            for bit, buffer in self.buffers.items():
                if mask >> bit & 1:
                    buffer.add(event)
        for chain in self.chains:
            for i, state in enumerate(chain.states):
                if not mask >> state.bit & 1 or not chain.waiting[i]:
                    continue
                alive = [w for w in chain.waiting[i] if not w.dead]
                if len(alive) != len(chain.waiting[i]):
                    self.dead_waiting -= len(chain.waiting[i]) - len(alive)
                    chain.waiting[i] = alive
                for waiting in alive:
                    if waiting.born != self.seq:
                        yield from self._from_stream(chain, i, waiting, event)

    def report(self) -> None:
        """Nothing beyond the counters kept as it runs."""

    def finish(self) -> Iterator[Match]:
        self.acceptance.finish()
        yield from self.acceptance.take_output()

    def _expire(self, now: int) -> None:
        expiry = self.expiry
        while expiry and expiry[0][0] < now:
            waiting = heapq.heappop(expiry)[2]
            waiting.dead = True
            self.stats.deleted()
            self.dead_waiting += 1
        if self.dead_waiting > 4096 and self.dead_waiting > self.stats.alive_instances:
            for chain in self.chains:
                chain.waiting = [[w for w in lst if not w.dead] for lst in chain.waiting]
            self.dead_waiting = 0

    # --- takes --------------------------------------------------------------------------------

    def _from_stream(self, chain: _ChainRuntime, i: int, waiting: _Waiting, event: Event) -> Iterator[Match]:
        """A waiting instance meets an arriving event of its state's variable."""
        min_ts = min(waiting.min_ts, event.ts)
        if not self.window.holds(min_ts, event.ts):
            return
        state = chain.states[i]
        m = waiting.m
        if state.kleene:
            after = latest(state.prec, m)
            candidates = self.buffers[state.bit].between(
                after, (event.ts, event.row), self.window.horizon(event.ts), event.ts
            )
            for subset, lo_ts in state.iteration.subsets(
                m, waiting.rows, candidates, min_ts, event.ts, event
            ):
                yield from self._enter_next(chain, i, m, waiting.rows, subset, lo_ts, event.ts)
        elif takes(chain.equiv, state.slot, state.check, m, event, self.stats):
            yield from self._enter_next(chain, i, m, waiting.rows, event, min_ts, event.ts)

    def _enter_next(
        self,
        chain: _ChainRuntime,
        i: int,
        m: list[object],
        rows: tuple[int, ...],
        taken: Event | tuple[Event, ...],
        min_ts: int,
        max_ts: int,
    ) -> Iterator[Match]:
        state = chain.states[i]
        m2 = list(m)
        m2[state.slot] = taken
        new_rows = rows + (tuple(e.row for e in taken) if isinstance(taken, tuple) else (taken.row,))
        for check in state.rejects:  # first-chance negations placed here
            if check.violated(m2, frozenset(new_rows), min_ts, max_ts, self.acceptance.buffers[check.bit]):
                self.instances.made()
                self.stats.deleted()
                return
        yield from self._enter(chain, i + 1, m2, new_rows, min_ts, max_ts)

    def _enter(
        self,
        chain: _ChainRuntime,
        i: int,
        m: list[object],
        rows: tuple[int, ...],
        min_ts: int,
        max_ts: int,
    ) -> Iterator[Match]:
        """An instance enters state ``i``: search the buffer, then wait on the stream."""
        stats = self.stats
        self.instances.made()
        if i == len(chain.states):
            stats.deleted()
            self._accept(chain, m, min_ts, max_ts)
            yield from self.acceptance.take_output()
            return
        state = chain.states[i]
        after = latest(state.prec, m)
        before = earliest(state.succ, m)
        window = self.window
        candidates = self.buffers[state.bit].between(after, before, *window.reach(min_ts, max_ts))
        if state.kleene:
            for subset, lo_ts in state.iteration.subsets(m, rows, candidates, min_ts, max_ts, None):
                yield from self._enter_next(chain, i, m, rows, subset, lo_ts, max(max_ts, subset[-1].ts))
        else:
            for event in candidates:
                if event.row not in rows and takes(
                    chain.equiv, state.slot, state.check, m, event, self.stats
                ):
                    yield from self._enter_next(
                        chain, i, m, rows, event, min(min_ts, event.ts), max(max_ts, event.ts)
                    )
        if state.from_stream:
            waiting = _Waiting(m, rows, min_ts, max_ts, self.seq)
            chain.waiting[i].append(waiting)
            self.waits += 1
            heapq.heappush(self.expiry, (window.closes(min_ts), self.waits, waiting))
        else:
            stats.deleted()

    def _accept(self, chain: _ChainRuntime, m: list[object], min_ts: int, max_ts: int) -> None:
        if chain.complete(chain.at_accept, m, self.stats):
            self.acceptance.accept(chain.names, m, min_ts, max_ts, chain.post)


def evaluate_chain(
    nfa: ChainNfa, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    """Run the (Multi-)Chain NFA over relevant events, yielding matches as found."""
    return drive(ChainRuntime(nfa, schema, stats, options), events, stats, options.every)
