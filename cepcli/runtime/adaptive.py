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
each positive variable could use in the segment before it (all of them, counted as they
arrive): the eager NFA when the rarest and the most frequent are within ``ratio`` of each
other (at equal rates lazy evaluation stores every event and evaluates from the buffer for
nothing), the Chain NFA in the counts' order within ``chain_ratio``, else the lazy Tree
NFA; a change of engine needs the ratio ``hysteresis`` times past the bound. Too few
of the rarest to say (fewer than ``least``) and the counts are carried into
the next segment's, up to ``CARRIED`` segments, while the engine before goes on (a lazy one
if the most frequent already says the rates differ); enough of the most frequent to put
the ratio past ``chain_ratio`` whatever the rarest's is, and the tree (``_choose``). A
chain goes on while its rarest variable stays the rarest. Each runtime counts its work in
its own ``Stats``, added to the run's when it ends (peaks: the largest of one runtime's).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import _count_elements, defaultdict  # type: ignore[attr-defined]
from collections.abc import Iterable, Iterator

from cepcli.automata.adaptive import HELD, KEY_SAMPLE, KEYED, KEYED_GAIN, AdaptiveNfa
from cepcli.automata.chain import ChainNfa
from cepcli.clock import Slice, Window
from cepcli.events import Event, Schema
from cepcli.plan.keys import present
from cepcli.plan.pattern import Join, Pattern
from cepcli.runtime.chain import ChainRuntime
from cepcli.runtime.eager import EagerRuntime
from cepcli.runtime.loop import Runtime
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats, add_part, part_work
from cepcli.runtime.tree import TreeRuntime

Tally = defaultdict[int, int]  # events by variable mask
SWITCHES_KEPT = 100  # the first switches, in the stats (their count is kept in full)
CARRIED = 8  # segments whose counts are added up while too few to choose
BATCH = 256  # events taken from a file's stream at a time
_MASK = operator.attrgetter("mask")
_TS = operator.attrgetter("ts")


class _Segment:
    __slots__ = ("owned", "runtime", "stats", "clean")

    def __init__(self, owned: Slice, runtime: Runtime, stats: Stats) -> None:
        self.owned, self.runtime, self.stats = owned, runtime, stats  # stats: engine, order
        self.clean = False  # whether every match it finds or releases from now on is its own


class AdaptiveRuntime:
    def __init__(self, nfa: AdaptiveNfa, schema: Schema, stats: Stats, options: EvalOptions) -> None:
        self.nfa, self.schema, self.stats, self.options = nfa, schema, stats, options
        self.window = Window(nfa.pattern.window)
        self.segment = nfa.segment
        self.bits = [v.bit for v in nfa.pattern.variables if not v.negated]
        self.chains: dict[tuple[str, ...], ChainNfa] = {}  # by order, made once
        self.origin: int | None = None
        self.live: list[_Segment] = []
        self.next_index = 0
        # events per variable mask in the segment that owns the latest event, and in the one before
        self.tally: Tally = defaultdict(int)  # (a Counter costs more per event)
        self.tally_index = -1
        self.previous: Tally = defaultdict(int)
        self.previous_index = -1
        # the counts of the segments too few to choose from, added up (and the latest one's index)
        self.carried: Tally = defaultdict(int)
        self.carried_index = -1
        self.carried_segments = 0
        self.count_until = -(1 << 64)  # before this time one segment is live and none starts (fast path)
        self.engines = {"eager": 0, "chain": 0, "tree": 0}  # segments evaluated by each
        self.runtimes = 0  # runtimes started: one per run of segments with the same engine
        self.switches: list[dict[str, object]] = []
        self.switch_count = 0
        self.last_engine = ""
        self.last_order: tuple[str, ...] = ()  # the chain's order (rarest first), with the chain
        self.first: tuple[str, tuple[str, ...], float | None] | None = None  # from the look-ahead
        self.first_events = 0  # the events the first choice was made on
        # the values of each joined (variable, attribute) among the stream's first events
        # (``KEY_SAMPLE``), and how many events of the variable there were
        self.key_values: dict[tuple[str, str], set[object]] = {}
        self.key_events: dict[str, int] = {}
        self.keyed = 0  # segments where the joins overruled eager

    def run(self, events: Iterable[Event]) -> Iterator[Match]:
        """``drive``'s loop: event by event on a pipe (a match must not wait for the events
        after it) or with ``--stats-every`` (a snapshot at every multiple), else in batches."""
        rest = iter(events)
        if self.nfa.keys is not None:
            rest = itertools.chain(self._sampled(itertools.islice(rest, KEY_SAMPLE)), rest)
        held, error = self._look_ahead(rest) if not self.options.live else ([], None)
        # (no generator between the input and the loop unless the input failed: one per event costs)
        stream = itertools.chain(held, rest if error is None else _raised(error))
        try:
            each = self.options.live or self.options.every
            yield from (self._each(stream) if each else self._batched(stream))
            yield from self.finish()
        finally:
            self.report()

    def _batched(self, stream: Iterator[Event]) -> Iterator[Match]:
        """The events ``BATCH`` at a time (``_through``). An input error is raised once the
        events before it are evaluated."""
        batch: list[Event] = []
        while True:
            batch.clear()
            try:
                batch.extend(itertools.islice(stream, BATCH))  # keeps what came before an error
            except Exception:
                yield from self._through(batch)
                raise
            if not batch:
                return
            yield from self._through(batch)

    def _through(self, batch: list[Event]) -> Iterator[Match]:
        """A batch of events: while one segment is live, clean and away from its borders,
        its runtime takes them straight (as ``process`` would give them to it), up to the
        next border (a ``bisect`` on their times), counted for the tally by C code
        (``_count_elements``) rather than one by one; else one by one through ``process``."""
        stats = self.stats
        i, n = 0, len(batch)
        while i < n:
            live, until = self.live, self.count_until
            if len(live) != 1 or not live[0].clean or batch[i].ts >= until:
                event = batch[i]
                i += 1
                if event.mask:
                    stats.relevant_events += 1
                yield from self.process(event)
                continue
            j = n if batch[-1].ts < until else bisect.bisect_left(batch, until, i, n, key=_TS)
            part = batch if (i, j) == (0, n) else batch[i:j]
            tally = self.tally
            _count_elements(tally, map(_MASK, part))
            stats.relevant_events += len(part) - tally.pop(0, 0)
            take = live[0].runtime.process
            event = part[0]
            try:
                for event in part:
                    yield from take(event)
            except BaseException:  # stopped inside the part: the events after it did not reach it
                stats.relevant_events -= sum(1 for e in part[part.index(event) + 1 :] if e.mask)
                raise
            i = j

    def _each(self, stream: Iterator[Event]) -> Iterator[Match]:
        """Event by event, with ``process``'s fast path inlined: while one segment is live,
        clean and away from its borders, its runtime takes the events straight, as
        ``process`` would give them to it, without a call in between."""
        stats, every = self.stats, self.options.every
        pending: Event | None = None
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
            until, tally, take = self.count_until, self.tally, self.live[0].runtime.process
            for event in stream:
                ts = event.ts
                if ts >= until:
                    pending = event
                    break
                mask = event.mask
                if mask:
                    stats.relevant_events += 1
                    tally[mask] += 1
                    yield from take(event)
                    if every and stats.relevant_events % every == 0:
                        stats.snapshot()
                else:
                    yield from take(event)
            else:
                break

    def _sampled(self, events: Iterator[Event]) -> Iterator[Event]:
        """The events, passed on as they come, their joined attributes' values noted (the
        distinct keys of ``AdaptiveNfa.keys``)."""
        keys = self.nfa.keys
        assert keys is not None
        sides = {side for join in keys.joins for side in (join.left, join.right)}
        bits = {self.nfa.pattern.variable(var).bit: var for var, _ in sides}  # each joined variable once
        wanted = [
            (
                self.nfa.pattern.variable(var).bit,
                self.schema.index(attr),
                self.key_values.setdefault((var, attr), set()),
            )
            for var, attr in sorted(sides)
        ]
        counted = self.key_events
        for event in events:
            if mask := event.mask:
                for bit, var in bits.items():
                    if mask >> bit & 1:
                        counted[var] = counted.get(var, 0) + 1
                for bit, column, seen in wanted:
                    if mask >> bit & 1 and present(value := event.values[column]):
                        seen.add(value)
            yield event

    def _distinct_keys(self) -> dict[Join, int] | None:
        """Each join's distinct keys (the fewer of its two sides'), once every joined
        variable has been seen ``least`` times; else None."""
        keys = self.nfa.keys
        if keys is None or any(
            self.key_events.get(v, 0) < self.nfa.least for j in keys.joins for v in (j.left[0], j.right[0])
        ):
            return None
        values = self.key_values
        return {j: max(1, min(len(values[j.left]), len(values[j.right]))) for j in keys.joins}

    def _look_ahead(self, stream: Iterator[Event]) -> tuple[list[Event], Exception | None]:
        """The stream's first events, held until their counts can choose the first
        segment's engine (``first``, without the margin: nothing runs yet): the rarest
        variable seen ``first_least`` times, or the most frequent ``first_least *
        chain_ratio`` times. Also ended by the first segment's time, ``HELD`` events (the
        memory it may take) or the end of the stream: then the counts held choose if they
        could choose a later segment (``least``), and else the first segment runs the tree.
        The input's error, if it fails meanwhile (a bad row), is returned, to be raised once
        the events before it are evaluated. Not on a pipe, whose matches must not wait (see
        ``_at_borders``)."""
        nfa = self.nfa
        held: list[Event] = []
        if nfa.eager is None:
            return held, None
        by_bit = {v.bit: 0 for v in nfa.pattern.variables}
        error: Exception | None = None
        try:
            for event in stream:
                held.append(event)
                if mask := event.mask:
                    for bit in by_bit:
                        if mask >> bit & 1:
                            by_bit[bit] += 1
                    if self._enough(*self._spread(by_bit), nfa.first_least):
                        break
                if event.ts - held[0].ts >= self.segment or len(held) >= HELD:
                    break
        except Exception as err:  # noqa: BLE001 - the input's own error, whatever it is, is raised later
            error = err
        least, most = self._spread(by_bit)
        if self._enough(least, most, nfa.least):  # first_least >= least: also when it broke early
            span = held[-1].ts - held[0].ts if held else 0
            self.first = self._decided(by_bit, least, most, "", span)
            self.first_events = len(held)
        return held, error

    def process(self, event: Event) -> Iterable[Match]:
        ts = event.ts
        if ts < self.count_until:  # inside one segment, away from its borders
            if event.mask:
                self.tally[event.mask] += 1
            part = self.live[0]
            if part.clean:  # every match it can find or release now is its own
                return part.runtime.process(event)
            owns = part.owned.owns
            out = [m for m in part.runtime.process(event) if owns(m.first_ts)]
            # past low + W, a match waiting for the end of its window that began before low
            # has just come out (and been left to the segment before); one found from now on
            # begins after ts - W > low, and before ts < high - W: its own
            part.clean = ts > self.window.closes(part.owned.low)
            return out
        return list(self._at_borders(event))

    def _at_borders(self, event: Event) -> Iterator[Match]:
        ts = event.ts
        if self.origin is None:
            # on a pipe nothing is held (every match is written as soon as it is decided): the
            # first segment spans only ``first_span`` and a window from the first event, and
            # the next one is chosen from the counts of its ``first_span``
            short = self.nfa.first_span + self.window.ns  # the first span and a window
            self.origin = ts - (self.segment - short if self.options.live and short < self.segment else 0)
        origin, segment, window = self.origin, self.segment, self.window
        # the segments whose input (``Window.around``: a window on each side) holds ts
        first = max(0, -((window.ns - ts + origin) // segment) - 1)
        last = (ts + window.ns - origin) // segment
        # (the segments from next_index to first - 1 have no event in their input: after a gap
        # in the stream, the newest runtime goes on over them if it keeps its engine)
        for index in range(max(self.next_index, first), last + 1):
            self._start(index)
        self.next_index = max(self.next_index, last + 1)
        while self.live and window.around(self.live[0].owned)[1] < ts:  # past its input: it decides all
            yield from self._end(self.live.pop(0))
        owner = (ts - origin) // segment
        if owner != self.tally_index:
            self.previous, self.previous_index = self.tally, self.tally_index
            self.tally, self.tally_index = defaultdict(int), owner
        if event.mask:
            self.tally[event.mask] += 1
        # one segment live: the fast path until the next segment's input begins, or the next
        # segment's time (the tally turns over)
        if len(self.live) == 1:
            high = self.live[0].owned.high
            next_input = window.around(Slice(high, high + segment))[0]
            self.count_until = min(next_input, origin + (owner + 1) * segment)
        else:
            self.count_until = ts
        for part in self.live:  # every live segment's input has begun (index <= last)
            for match in part.runtime.process(event):
                if part.owned.owns(match.first_ts):
                    yield match

    def finish(self) -> Iterator[Match]:
        while self.live:
            yield from self._end(self.live.pop(0))

    def report(self) -> None:
        """The choices made, and the work of the runtimes still live (a run stopped early,
        by --max-matches or Ctrl-C, or an input error: theirs was added when they ended)."""
        while self.live:
            part = self.live.pop(0)
            part.runtime.report()
            add_part(self.stats, part_work(part.stats))
        extra = self.stats.extra
        extra["adaptive_segments"] = dict(self.engines)
        extra["adaptive_segment_seconds"] = self.segment / 1e9
        extra["adaptive_runtimes"] = self.runtimes
        extra["adaptive_first_choice_events"] = self.first_events  # 0: not enough to choose: the tree
        extra["adaptive_switches"] = self.switch_count
        if self.nfa.keys is not None:
            extra["adaptive_keyed_segments"] = self.keyed  # where the joins overruled eager
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
            and newest.owned.high <= low
            and (engine, order[:1]) == (newest.stats.engine, newest.stats.order[:1])
        ):
            newest.owned = Slice(newest.owned.low, low + self.segment)
            return
        stats = Stats(engine=engine)  # this runtime's work, added to the run's when it ends
        options = self.options
        runtime: Runtime
        if engine == "eager":
            assert self.nfa.eager is not None
            runtime = EagerRuntime(self.nfa.eager, self.schema, stats, options)
        elif engine == "chain":
            if order not in self.chains:
                self.chains[order] = self.nfa.chain(order)
            runtime = ChainRuntime(self.chains[order], self.schema, stats, options)
            stats.order = order
        else:
            runtime = TreeRuntime(self.nfa.tree, self.schema, stats, options)
        self.runtimes += 1
        if (engine, order[:1]) != (self.last_engine, self.last_order[:1]):
            self.switch_count += 1
            if len(self.switches) < SWITCHES_KEPT:
                change: dict[str, object] = {"segment": index, "engine": engine, "ratio": ratio}
                change |= {"order": list(order)} if order else {}
                self.switches.append(change | {"variables": evaluated(self.nfa.pattern, engine, order)})
            self.last_engine, self.last_order = engine, order
        self.live.append(_Segment(Slice(low, low + self.segment), runtime, stats))

    def _choose(self, index: int) -> tuple[str, tuple[str, ...], float | None]:
        """The engine (and a chain's order) for segment ``index``, from the variables'
        counts in the segment before it (with those carried from before it): eager when the
        rarest and the most frequent are within ``ratio``, the chain in their order (rarest
        first) within ``chain_ratio``, the tree beyond. With fewer than ``least`` of the
        rarest, the tree if the most frequent reaches ``least * chain_ratio`` (past the
        chain's band whatever the rarest's count); else the counts are carried to the next
        choice and the engine of the segment before goes on (at first, and after eager once
        the most frequent reaches ``least * ratio``, the tree)."""
        if self.nfa.eager is None:
            return "tree", (), None
        if index == 0 and self.first is not None:
            return self.first
        used = self.tally_index if self.tally_index < index else self.previous_index
        tally = self.tally if self.tally_index < index else self.previous
        if self.carried_segments:
            tally = self.carried if used == self.carried_index else _added(self.carried, tally)
        by_bit = {
            v.bit: sum(n for mask, n in tally.items() if mask >> v.bit & 1)
            for v in self.nfa.pattern.variables
        }
        least, most = self._spread(by_bit)
        ratio = round(most / least, 3) if least else None
        nfa = self.nfa
        if not self._enough(least, most, nfa.least):  # too few to say
            if used != self.carried_index:
                self.carried_segments += 1
                self.carried, self.carried_index = defaultdict(int, tally), used  # as counted until now
                if self.carried_segments >= CARRIED:  # the rates of long ago: start counting again
                    self.carried, self.carried_segments = defaultdict(int), 0
            if most >= nfa.least * nfa.ratio and self.last_engine in ("", "eager"):
                return "tree", (), ratio
            return self.last_engine or "tree", self.last_order, ratio
        span = self.segment * (self.carried_segments + 1)
        self.carried, self.carried_segments = defaultdict(int), 0
        return self._decided(by_bit, least, most, self.last_engine or "tree", span)

    def _enough(self, least: int, most: int, needed: int) -> bool:
        """Whether counts say something: ``needed`` of the rarest, or enough of the most
        frequent to put the ratio past the chain's band whatever the rarest's count."""
        return least >= needed or most >= needed * self.nfa.chain_ratio

    def _spread(self, by_bit: dict[int, int]) -> tuple[int, int]:
        """The counts of the rarest and of the most frequent positive variable."""
        counts = [by_bit[bit] for bit in self.bits]
        return min(counts, default=0), max(counts, default=0)

    def _decided(
        self, by_bit: dict[int, int], least: int, most: int, last: str, span: int
    ) -> tuple[str, tuple[str, ...], float | None]:
        """The choice from counts that can make one (over ``span`` nanoseconds), with the
        bounds moved away from the engine running, ``last`` (so that a change needs the
        ratio clearly past them; none at the first choice, ``last`` empty). Where the rates
        say eager, the equality joins may say a chain (``_keyed``)."""
        nfa = self.nfa
        ratio = round(most / least, 3) if least else None
        if least < nfa.least:  # the most frequent alone puts the ratio past the chain's band
            return "tree", (), ratio
        h = nfa.hysteresis if last else 1.0
        eager_bound = nfa.ratio * h if last == "eager" else nfa.ratio / h
        chain_bound = {"chain": nfa.chain_ratio * h, "tree": nfa.chain_ratio / h}.get(last, nfa.chain_ratio)
        if most <= eager_bound * least:
            return self._keyed(by_bit, span) or ("eager", (), ratio)
        if most <= chain_bound * least:
            return "chain", nfa.pattern.rarest_first(by_bit), ratio
        return "tree", (), ratio

    def _keyed(self, by_bit: dict[int, int], span: int) -> tuple[str, tuple[str, ...], float | None] | None:
        """The chain the joins prefer, where eager's partial matches, estimated from the
        rates and the joins' distinct keys, outnumber its by more than ``KEYED``, and by
        ``KEYED_GAIN`` times more than without the joins (a chain from the rarest holds
        fewer at any ratio: that is the rates' business); else None. The ratio reported is
        that of the two estimates."""
        keys = self.nfa.keys
        distinct = self._distinct_keys() if keys is not None else None
        if keys is None or distinct is None:
            return None
        per_window = self.window.ns / max(span, self.window.ns)
        rates = {
            v.name: by_bit[v.bit] * per_window for v in self.nfa.pattern.variables if v.name in keys.names
        }
        order, chained = keys.chain(rates, distinct)
        ratio = keys.eager(rates, distinct) / max(chained, 1e-9)
        ones = dict.fromkeys(keys.joins, 1)  # the same without the joins: what the rates see
        if ratio <= KEYED or ratio <= KEYED_GAIN * keys.eager(rates, ones) / max(
            keys.chain(rates, ones)[1], 1e-9
        ):
            return None
        self.keyed += 1
        negated = tuple(v.name for v in self.nfa.pattern.variables if v.name not in keys.names)
        return "chain", order + negated, round(ratio, 3)

    def _end(self, part: _Segment) -> Iterator[Match]:
        try:
            for match in part.runtime.finish():
                if part.owned.owns(match.first_ts):
                    yield match
        finally:
            part.runtime.report()
            add_part(self.stats, part_work(part.stats))


def _raised(error: Exception) -> Iterator[Event]:
    """The input's error during the look-ahead (a bad row), raised when the events held
    before it have been evaluated (their matches written, as with any engine before a bad
    row)."""
    raise error
    yield  # a generator: raises when the loop reaches it


def _added(a: Tally, b: Tally) -> Tally:
    total = defaultdict(int, a)
    for mask, n in b.items():
        total[mask] += n
    return total


def evaluated(pattern: Pattern, engine: str, order: tuple[str, ...]) -> dict[str, str]:
    """How each variable's events are evaluated by ``engine`` (a segment's choice): on
    arrival (eager: each event extends every instance when it comes; the chain's first
    variable starts its instances so), or buffered (stored, and taken from the buffer when
    an instance reaches the variable: the chain's in ``order``, the tree's rarest buffer
    first; a negated one the chain checks after a match)."""
    names = [v.name for v in pattern.variables]
    if engine == "eager":
        return dict.fromkeys(names, "on arrival")
    if engine == "tree":
        return dict.fromkeys(names, "buffered")
    at = {n: i for i, n in enumerate(order)}

    def chained(n: str) -> str:
        if n not in at:
            return "buffered, checked after a match"
        return "on arrival" if at[n] == 0 else f"buffered, taken {at[n] + 1} of {len(order)}"

    return {n: chained(n) for n in names}


def evaluate_adaptive(
    nfa: AdaptiveNfa, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    """Run the adaptive engine over relevant events, yielding matches as found: on a bounded
    input (not a pipe, no ``--stats-every``) of a pattern the columnar engine evaluates,
    that engine; else the segments."""
    if nfa.columnar and not options.live and not options.every:
        from cepcli.runtime.columnar import evaluate_events

        stats.extra["adaptive_ran"] = "columnar"
        return evaluate_events(nfa.pattern, events, schema, stats, options)
    return AdaptiveRuntime(nfa, schema, stats, options).run(events)
