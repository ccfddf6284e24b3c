"""Runs an ``AdaptiveNfa``: eager or lazy evaluation, chosen segment by segment from the
rates measured in the stream.

Time is cut into segments of ``segment`` nanoseconds from the first event. Segment ``k``
owns ``[b_k, b_(k+1))`` and is evaluated by a runtime which receives every event of
``[b_k - W, b_(k+1) + W]`` (so the window, and leading, trailing or enclosed negations, are
judged on everything they depend on) and reports only the matches whose earliest event
it owns: each match exactly once, as with the Spark shards. A segment whose engine is its
predecessor's continues that runtime (which has seen every event since its own start: one
longer segment, ``[b_j, b_(k+1))``); otherwise a new runtime starts, and the two run side by
side over the ``2W`` where their inputs overlap. A runtime ends when the first event past
its input arrives (or the stream ends), and is dropped.

When a segment starts (a window before its time), the runtime is chosen from the events
each positive variable could use in the segment before it, counted in its first window and
in the ``MEASURED`` windows before the new segment starts (elsewhere an event costs one
comparison on top of its runtime's work): the eager NFA when the rarest and the most
frequent are within ``ratio`` of each other (at equal rates lazy evaluation stores every
event and evaluates from the buffer for nothing), the Chain NFA in the counts' order
within ``chain_ratio``, else the lazy Tree NFA; with too few counted to say, the engine
before (``_choose``). A chain goes on while its rarest variable stays the rarest. Each
runtime counts its work in its own ``Stats``, added to the run's when it ends (peaks: the
largest of one runtime's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from cepcli.automata.adaptive import AdaptiveNfa
from cepcli.automata.chain import ChainNfa
from cepcli.events import Event, Schema
from cepcli.runtime.chain import ChainRuntime
from cepcli.runtime.eager import EagerRuntime
from cepcli.runtime.loop import Runtime
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats, add_part, part_work
from cepcli.runtime.tree import TreeRuntime

SWITCHES_KEPT = 100  # the first switches, in the stats (their count is kept in full)
MEASURED = 4  # the rates are counted over the last windows before a segment starts


class _Segment:
    __slots__ = ("low", "high", "runtime", "stats", "clean")

    def __init__(self, low: int, high: int, runtime: Runtime, stats: Stats) -> None:
        self.low, self.high, self.runtime, self.stats = low, high, runtime, stats  # stats: engine, order
        self.clean = False  # whether every match it finds or releases from now on is its own


class AdaptiveRuntime:
    def __init__(self, nfa: AdaptiveNfa, schema: Schema, stats: Stats) -> None:
        self.nfa, self.schema, self.stats = nfa, schema, stats
        self.window = nfa.pattern.window
        self.segment = nfa.segment
        self.bits = [v.bit for v in nfa.pattern.variables if not v.negated]
        self.chains: dict[tuple[str, ...], ChainNfa] = {}  # by order, made once
        self.origin: int | None = None
        self.live: list[_Segment] = []
        self.next_index = 0
        # events per variable mask in the segment that owns the latest event, and in the one before
        self.tally: Counter[int] = Counter()
        self.tally_index = -1
        self.previous: Counter[int] = Counter()
        self.count_until = -(1 << 64)  # before this time one segment is live and none starts (fast path)
        self.calm_until = -(1 << 64)  # ... and before this one its events are not counted
        self.engines = {"eager": 0, "chain": 0, "tree": 0}  # segments evaluated by each
        self.runtimes = 0  # runtimes started: one per run of segments with the same engine
        self.switches: list[dict[str, object]] = []
        self.switch_count = 0
        self.last_engine = ""
        self.last_order: tuple[str, ...] = ()  # the chain's order (rarest first), with the chain

    def run(self, events: Iterable[Event]) -> Iterator[Match]:
        """``drive``'s loop, with ``process``'s fast path inlined: while one segment is live,
        clean and away from its borders, its runtime takes the events straight, as
        ``process`` would give them to it, without a call in between."""
        stats, every = self.stats, self.stats.every
        stream = iter(events)
        pending: Event | None = None
        try:
            while True:
                event = next(stream, None) if pending is None else pending
                if event is None:
                    break
                pending = None
                if event.mask:
                    stats.relevant_events += 1
                yield from self.process(event)
                if every and event.mask and stats.relevant_events % every == 0:
                    stats.snapshot()
                if len(self.live) != 1 or not self.live[0].clean:
                    continue
                until, calm, tally, take = (
                    self.count_until,
                    self.calm_until,
                    self.tally,
                    self.live[0].runtime.process,
                )
                for event in stream:
                    ts = event.ts
                    if ts >= until:
                        pending = event
                        break
                    mask = event.mask
                    if mask:
                        stats.relevant_events += 1
                        if ts >= calm:
                            tally[mask] += 1
                        yield from take(event)
                        if every and stats.relevant_events % every == 0:
                            stats.snapshot()
                    else:
                        yield from take(event)
                else:
                    break
            yield from self.finish()
        finally:
            self.report()

    def process(self, event: Event) -> Iterable[Match]:
        ts = event.ts
        if ts < self.count_until:  # inside one segment, away from its borders
            if ts >= self.calm_until and event.mask:  # its last windows before the next starts: counted
                self.tally[event.mask] += 1
            part = self.live[0]
            if part.clean:  # every match it can find or release now is its own
                return part.runtime.process(event)
            low, high = part.low, part.high
            out = [m for m in part.runtime.process(event) if low <= m.first_ts < high]
            # past low + W, a match waiting for the end of its window that began before low
            # has just come out (and been left to the segment before); one found from now on
            # begins after ts - W > low, and before ts < high - W: its own
            part.clean = ts > low + self.window
            return out
        return list(self._at_borders(event))

    def _at_borders(self, event: Event) -> Iterator[Match]:
        ts = event.ts
        if self.origin is None:
            self.origin = ts
        origin, segment, window = self.origin, self.segment, self.window
        first = max(0, -((window - ts + origin) // segment) - 1)  # the first segment whose input reaches ts
        last = (ts + window - origin) // segment  # the last segment whose input has begun
        # (the segments from next_index to first - 1 have no event in their input: after a gap
        # in the stream, the newest runtime goes on over them if it keeps its engine)
        for index in range(max(self.next_index, first), last + 1):
            self._start(index)
        self.next_index = max(self.next_index, last + 1)
        while self.live and self.live[0].high + window < ts:  # past its input: it can decide everything
            yield from self._end(self.live.pop(0))
        owner = (ts - origin) // segment
        if owner != self.tally_index:
            self.previous, self.tally, self.tally_index = self.tally, Counter(), owner
        if event.mask:
            self.tally[event.mask] += 1
        # one segment live: the fast path until the next segment's input begins, or the next
        # segment's time (the tally turns over) or the end of this one's first window (counted)
        if len(self.live) == 1:
            start, border = origin + owner * segment, origin + (owner + 1) * segment
            until = min(self.live[0].high - window, border)
            if ts < start + window:  # its first window: every event counted
                self.count_until, self.calm_until = min(until, start + window), ts
            else:  # then only the MEASURED windows before the next segment's input begins
                self.count_until, self.calm_until = until, border - (MEASURED + 1) * window
        else:
            self.count_until = self.calm_until = ts
        for part in self.live:  # every live segment's input has begun (index <= last)
            for match in part.runtime.process(event):
                if part.low <= match.first_ts < part.high:
                    yield match

    def finish(self) -> Iterator[Match]:
        while self.live:
            yield from self._end(self.live.pop(0))

    def report(self) -> None:
        extra = self.stats.extra
        extra["adaptive_segments"] = dict(self.engines)
        extra["adaptive_segment_seconds"] = self.segment / 1e9
        extra["adaptive_runtimes"] = self.runtimes
        extra["adaptive_switches"] = self.switch_count
        extra["adaptive_changes"] = self.switches

    def _start(self, index: int) -> None:
        """Segment ``index``'s input begins: the newest live segment goes on over it (and
        over the segments before it that had no event) when it runs the engine chosen: its
        runtime has seen every event since its own start, so it is one longer segment. Else
        a new runtime starts."""
        assert self.origin is not None
        engine, order, ratio = self._choose(index)
        self.engines[engine] += 1
        low = self.origin + index * self.segment
        newest = self.live[-1] if self.live else None
        # a chain goes on while its rarest variable stays the rarest (the order of the
        # frequent ones changes often and matters little; a new runtime costs more)
        if (
            newest is not None
            and newest.high <= low
            and (engine, order[:1]) == (newest.stats.engine, newest.stats.order[:1])
        ):
            newest.high = low + self.segment
            return
        stats = Stats(
            engine=engine, max_subsets=self.stats.max_subsets, max_instances=self.stats.max_instances
        )
        stats.on_warning = self.stats.warn
        runtime: Runtime
        if engine == "eager":
            assert self.nfa.eager is not None
            runtime = EagerRuntime(self.nfa.eager, self.schema, stats)
        elif engine == "chain":
            if order not in self.chains:
                self.chains[order] = self.nfa.chain(order)
            runtime = ChainRuntime(self.chains[order], self.schema, stats)
            stats.order = order
        else:
            runtime = TreeRuntime(self.nfa.tree, self.schema, stats)
        self.runtimes += 1
        if (engine, order[:1]) != (self.last_engine, self.last_order[:1]):
            self.switch_count += 1
            if len(self.switches) < SWITCHES_KEPT:
                change: dict[str, object] = {"segment": index, "engine": engine, "ratio": ratio}
                self.switches.append(change | ({"order": list(order)} if order else {}))
            self.last_engine, self.last_order = engine, order
        self.live.append(_Segment(low, low + self.segment, runtime, stats))

    def _choose(self, index: int) -> tuple[str, tuple[str, ...], float | None]:
        """The engine (and a chain's order) for segment ``index``, from the variables'
        counts in the segment before it (near its borders): eager when the rarest and the
        most frequent are within ``ratio``, the chain in their order (rarest first) within
        ``chain_ratio``, the tree beyond; with too few counted to say (fewer than ``least``
        of the rarest, and fewer than ``least * ratio`` of the most frequent: else the
        tree), the engine of the segment before (at first, the tree)."""
        if self.nfa.eager is None:
            return "tree", (), None
        tally = self.tally if self.tally_index < index else self.previous
        by_bit = {
            v.bit: sum(n for mask, n in tally.items() if mask >> v.bit & 1)
            for v in self.nfa.pattern.variables
        }
        counts = [by_bit[bit] for bit in self.bits]
        least, most = min(counts, default=0), max(counts, default=0)
        ratio = round(most / least, 3) if least else None
        if least >= self.nfa.least:
            if most <= self.nfa.ratio * least:
                return "eager", (), ratio
            if most <= self.nfa.chain_ratio * least:
                return "chain", self.nfa.pattern.rarest_first(by_bit), ratio
            return "tree", (), ratio
        if most >= self.nfa.least * self.nfa.ratio:
            return "tree", (), ratio
        return self.last_engine or "tree", self.last_order, ratio

    def _end(self, part: _Segment) -> Iterator[Match]:
        try:
            for match in part.runtime.finish():
                if part.low <= match.first_ts < part.high:
                    yield match
        finally:
            part.runtime.report()
            add_part(self.stats, part_work(part.stats))


def evaluate_adaptive(
    nfa: AdaptiveNfa, events: Iterable[Event], schema: Schema, stats: Stats
) -> Iterator[Match]:
    """Run the adaptive engine over relevant events, yielding matches as found."""
    return AdaptiveRuntime(nfa, schema, stats).run(events)
