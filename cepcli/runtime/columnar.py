"""The columnar engine: the lazy plan executed set-at-a-time over columns of rows.

Its input (``Columns``) is every relevant row of the input (a row some variable can use),
in stream order: a row's *position* is its index there, so "x before y" is
``pos_x < pos_y``, and times do not decrease with position. Python objects are made only
for the events of the matches it reports (and for the rare rows the vectorised conditions
leave to the reference).

Per DNF branch (a SEQ/AND of positive variables and negations; a branch with a Kleene
variable is left to the other engines), the partial matches are a table: the positions of
each variable bound so far, one numpy array per variable, one row per partial match, with
the earliest and latest time of its events. The positive variables are bound the rarest
first, by their exact counts, then each time the one whose join is estimated to keep the
fewest (``_estimate``), each a *window join*:

1. For each partial match, the positions the next variable's event may take: after every
   bound variable that must precede it and before every one that must follow it (the SEQ
   order), and inside the window with the bound events (``Window.reach``: a range of
   times, which is a range of positions since times are sorted): one interval ``[L, R)``.
2. The variable's candidates (its positions, sorted) in that interval, by
   ``searchsorted``. With an equality to a bound variable (``Condition.join``) or an
   ``[attr]`` test on a column of exact keys (integers, text, booleans), the candidates
   are sorted by (key, position) and only the equal key's run is visited.
3. The table is expanded (``np.repeat``) and filtered: distinct events, ``[attr]``, and the
   conditions that become bound there (``automata.placement``), evaluated by the vectorised
   lowering (``plan.arrow``); the rows it cannot decide exactly go to the reference
   (``plan.python``), on events made for them.

Negations are anti-joins once the positive variables are bound: the events of the negated
variable in its interval (its order constraints and the window over the match and itself),
not bound in the match, that satisfy its conditions and ``[attr]``: a match with one is
dropped. OR branches are a union: a match found by two branches (the same variables on the
same rows) is reported once.

Incrementally (``Increment``): over an input in time order the rows come in steps
(``Source.steps``), each the window's tail carried from the steps before plus the new
rows, and a step reports the matches its new rows decide: those whose last event is new
(for a SEQ, only the new rows are the last variable's candidates: a delta join), or, where
a negation trails, those whose window its rows close. So a pipe's matches leave as its
rows arrive, and memory follows the window, not the input.

Memory: the time of the input (of a step) is cut into slices (``clock.Slice``) of at most ``SLICE_ROWS``
relevant rows; a slice reads its rows and a window on each side (``Window.around``) and
reports the matches whose earliest event it owns, so each match once. A join that would
make more than ``STEP_TUPLES`` partial matches, or pass ``--max-instances``, halves its
slice while the slice holds rows at two times; past that, ``--max-instances`` stops the run
with the other engines' error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow, sorted_distinct, whole
from cepcli.automata.columnar import evaluates
from cepcli.automata.placement import place
from cepcli.clock import Slice, Window
from cepcli.events import Event, Kind, Schema
from cepcli.plan.arrow import Frame, evaluate
from cepcli.plan.closures import Closure, closure
from cepcli.plan.keys import present
from cepcli.plan.pattern import Branch, Condition, Pattern
from cepcli.plan.python import compile_condition
from cepcli.query import ast as a
from cepcli.runtime import bands
from cepcli.runtime.bands import Blocks, Pairs, within
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions, Instances
from cepcli.runtime.stats import Stats

SLICE_ROWS = 1 << 20  # relevant rows a slice owns, at most (a window on each side more)
STEP_TUPLES = 1 << 21  # partial matches one join may make before its slice is halved
_KEY_TYPES = (pa.int64(), pa.string(), pa.bool_())  # equal keys are equal values, exactly
_NUMBER_TYPES = (pa.int64(), pa.float64())  # ordered by numpy as the conditions order them
_NO_KEY = -1


@dataclass(slots=True)
class Columns:
    """The relevant rows of a bounded input, in stream order: their row ids, times
    (int64 ns, non-decreasing), variable masks and typed columns (one per schema column);
    ``events(positions)`` makes the events of some positions (for the matches). ``until``:
    an input error cut the input after a row at this time (None: the input ended), so a
    match that a later row could still violate (a trailing negation's, whose window had
    not closed by then) is undecided, and not reported, as the other engines leave it."""

    rows: np.ndarray
    ts: np.ndarray
    masks: np.ndarray
    columns: list[pa.Array | pa.ChunkedArray]
    events: Callable[[np.ndarray], list[Event]]
    until: int | None = None
    # the values the events of some positions hold, as Arrow columns (one per schema column,
    # typed as ``make_events`` has them; the positions in ``decimal_text`` hold decimal
    # text): what a match's text is made of without its events (``cepcli.output``). None:
    # only ``events`` (events made before, as a Spark shard's)
    values: Callable[[np.ndarray], list[pa.Array]] | None = None
    decimal_text: frozenset[int] = frozenset()
    # made once for every query evaluated over these rows (``cepcli.run``): two columns as
    # codes of one dictionary (``_Run._codes``), and the events made for matches, by position
    codes: dict[tuple[str, str], tuple[np.ndarray, np.ndarray] | None] = field(default_factory=dict)
    made: dict[int, Event] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True, slots=True)
class Runs:
    """A Kleene variable's runs, one per match: run ``i`` is ``flat[offsets[i]:offsets[i+1]]``."""

    offsets: np.ndarray
    flat: np.ndarray

    def take(self, index: np.ndarray) -> Runs:
        """The runs at ``index`` (positions, or a mask), in that order."""
        if index.dtype == np.bool_:
            index = np.flatnonzero(index)
        starts = self.offsets[:-1][index]
        lengths = self.offsets[1:][index] - starts
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        total = int(offsets[-1])
        at = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
        return Runs(offsets, self.flat[at])

    @property
    def last(self) -> np.ndarray:
        """Each run's last position."""
        out: np.ndarray = self.flat[self.offsets[1:] - 1]
        return out


@dataclass(frozen=True, slots=True)
class Found:
    """Matches as positions in ``data``, in the order they are reported: per variable bound
    (``names``, sorted), one array of its events' positions, row ``i`` of every array one
    match. What ``evaluate_found`` yields; ``matches()`` makes them ``Match`` objects."""

    names: tuple[str, ...]
    positions: tuple[np.ndarray, ...]
    data: Columns
    # a Kleene variable's runs: per name, the offsets of each match's run in ``flat`` (one
    # more than the matches) and the runs' positions (its ``positions`` are their first)
    runs: dict[str, Runs] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.positions[0])

    def take(self, index: np.ndarray) -> Found:
        """The matches at ``index`` (positions, or a mask), in that order."""
        runs = {name: run.take(index) for name, run in self.runs.items()}
        return Found(self.names, tuple(p[index] for p in self.positions), self.data, runs)

    def head(self, n: int) -> Found:
        """The first ``n`` matches."""
        return self.take(np.arange(min(n, len(self)), dtype=np.int64))

    def pieces(self, size: int) -> Iterator[Found]:
        """These matches, ``size`` at a time (a text's worth: ``cepcli.lines.found_lines``)."""
        for at in range(0, len(self), size):
            yield self.take(np.arange(at, min(at + size, len(self)), dtype=np.int64))

    def matches(self) -> Iterator[Match]:
        """These matches as ``Match`` objects, each event made once (``Columns.made``)."""
        made = self.data.made
        wanted = sorted_distinct(np.concatenate([*self.positions, *(r.flat for r in self.runs.values())]))
        missing = wanted[[int(p) not in made for p in wanted.tolist()]] if made else wanted
        if len(missing):
            made.update(zip(missing.tolist(), self.data.events(missing), strict=True))
        names = self.names
        runs = [
            (self.runs[n].offsets.tolist(), self.runs[n].flat.tolist()) if n in self.runs else None
            for n in names
        ]
        for i, row in enumerate(zip(*[p.tolist() for p in self.positions], strict=True)):
            yield Match(
                tuple(
                    [
                        (
                            name,
                            made[p]
                            if run is None
                            else tuple(made[q] for q in run[1][run[0][i] : run[0][i + 1]]),
                        )
                        for name, p, run in zip(names, row, runs, strict=True)
                    ]
                )
            )
        if len(made) > 4 * SLICE_ROWS:
            made.clear()


@dataclass(frozen=True, slots=True)
class Increment:
    """One step of an incremental evaluation (``cepcli.sources.source.Source.windows``):
    the rows are the tail carried from the steps before (the rows a match not yet decided
    may use) and, from position ``fresh`` on, the rows new to this step. Reported are the
    matches decided by the new rows and not before: a match without a trailing negation
    when its last event arrives (its last position is new), one with a trailing negation
    (a negated variable no bound one follows) once a row past its window has arrived: its
    window closes before ``now``, the latest time seen, and not before ``before``, the
    latest time the steps before had seen. ``now`` None: the input ended, every match is
    decided (but for ``Columns.until``); ``before`` None: the first step."""

    fresh: int
    before: int | None
    now: int | None

    def reports(self, window: Window, trailing: bool, low: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Which of the matches (their earliest times ``low``, last positions ``last``)
        this step reports."""
        if not trailing:
            return last >= self.fresh
        closes = window.closes(low)
        due = np.ones(len(low), dtype=bool) if self.now is None else closes < self.now
        return due if self.before is None else due & (closes >= self.before)


def evaluate_columnar(
    pattern: Pattern, order: Sequence[str], data: Columns, schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    """Every match of ``pattern`` over ``data``, slice by slice (see the module); ``order``:
    the variables, rarest first (ties are broken so)."""
    for found in evaluate_found(pattern, order, data, schema, stats, options):
        yield from found.matches()


def evaluate_found(
    pattern: Pattern,
    order: Sequence[str],
    data: Columns,
    schema: Schema,
    stats: Stats,
    options: EvalOptions,
    increment: Increment | None = None,
) -> Iterator[Found]:
    """``evaluate_columnar``'s matches as ``Found`` positions, a slice's at a time: for the
    writers that make a match's text from columns (``cepcli.lines.found_lines``). With an
    ``increment``: the matches that step decides (its new rows' counted)."""
    written = closure(pattern) if any(v.kleene for v in pattern.variables) else None
    if written is not None:  # a bounded closure: its lengths' branches, folded back
        order = [e for n in order for e in (written.elements if n == written.name else [n])]
    run = _Run(
        pattern if written is None else written.pattern,
        tuple(order),
        data,
        schema,
        stats,
        Instances(stats, options.max_instances, "columnar"),
        increment,
        written,
    )
    fresh = increment.fresh if increment is not None else 0
    mine = int(np.count_nonzero(data.masks[fresh:] & as_mask(pattern.bits)))
    stats.relevant_events += mine  # (several queries over the same rows: each its own)
    stats.buffered(len(data) if increment is not None else mine)
    try:
        for part in run.slices():
            yield from run.slice(part)
    finally:
        stats.unbuffered(len(data))
        # what the explain of this engine cannot know: the order it ran in, and the sizes
        # (summed over the steps of an incremental evaluation)
        joins: list[list[dict[str, Any]]] = [
            [{"variable": var, "partial_matches": n} for var, n in run.joins[i].items()]
            for i in sorted(run.joins)
        ]
        summed = increment is not None and increment.before is not None
        before = stats.extra.get("columnar_joins") if summed else None
        if isinstance(before, list) and len(before) == len(joins):
            for mine_, old in zip(joins, before, strict=True):
                had = {j["variable"]: j["partial_matches"] for j in old}
                for j in mine_:
                    j["partial_matches"] += had.get(j["variable"], 0)
        stats.extra["columnar_joins"] = joins
        if run.ranged:  # the joins made by range (``runtime.bands``): the pairs their windows held, kept
            earlier = stats.extra.get("columnar_range_joins") if summed else None
            for var, sizes in run.ranged.items():
                for k, n in (earlier.get(var, {}) if isinstance(earlier, dict) else {}).items():
                    sizes[k] += n
            stats.extra["columnar_range_joins"] = run.ranged


@dataclass(slots=True)
class _Table:
    """Partial matches: per bound variable, its events' positions; their times' span."""

    positions: dict[str, np.ndarray]
    low: np.ndarray  # the earliest time of each partial match
    high: np.ndarray  # the latest
    runs: dict[str, Runs] = field(default_factory=dict)  # a Kleene variable's (``positions``: its first)

    def __len__(self) -> int:
        return len(self.low)

    def take(self, keep: np.ndarray) -> _Table:
        return _Table(
            {v: p[keep] for v, p in self.positions.items()},
            self.low[keep],
            self.high[keep],
            {v: r.take(keep) for v, r in self.runs.items()},
        )


@dataclass(slots=True)
class _Run:
    pattern: Pattern
    order: tuple[str, ...]
    data: Columns
    schema: Schema
    stats: Stats
    instances: Instances
    increment: Increment | None = None
    closure: Closure | None = None  # a bounded Kleene variable, written as its lengths
    window: Window = field(init=False)
    candidates: dict[str, np.ndarray] = field(init=False)  # per variable: its positions
    codes: dict[tuple[str, str], tuple[np.ndarray, np.ndarray] | None] = field(init=False)
    made: dict[int, Event] = field(init=False)  # events made so far, by position
    budget: bool = field(init=False)  # the slice can be halved: a join past STEP_TUPLES does
    joins: dict[int, dict[str, int]] = field(init=False)  # per branch: partial matches after each join
    numbers: dict[str, tuple[np.ndarray, np.ndarray] | None] = field(init=False)  # ``_numbers``
    ranged: dict[str, dict[str, int]] = field(init=False)  # per variable: its range joins' sizes
    newest: dict[int, str | None] = field(init=False)  # ``_newest``, per branch

    def __post_init__(self) -> None:
        self.window = Window(self.pattern.window)
        masks = self.data.masks
        self.candidates = {v.name: np.flatnonzero(has_bit(masks, v.bit)) for v in self.pattern.variables}
        self.codes = self.data.codes
        self.made = self.data.made
        self.joins = {}
        self.numbers = {}
        self.ranged = {}
        self.newest = {}
        self.budget = False

    # --- slices -------------------------------------------------------------------------------

    def slices(self) -> list[Slice]:
        """Slices of time of at most ``SLICE_ROWS`` relevant rows (the last row's time ends
        the last one); one slice when the input is small."""
        ts = self.data.ts
        if not len(ts):
            return []
        cuts = [int(ts[i]) for i in range(SLICE_ROWS, len(ts), SLICE_ROWS)]
        bounds = sorted(set(cuts))
        lows = [int(ts[0]), *bounds]
        highs = [*bounds, int(ts[-1]) + 1]
        return [Slice(lo, hi) for lo, hi in zip(lows, highs, strict=True) if lo < hi]

    def slice(self, part: Slice) -> Iterator[Found]:
        """The matches ``part`` owns, in the order of their last events. A join that would
        make more than ``STEP_TUPLES`` partial matches halves the slice (by its rows), as
        long as it has rows at two times: memory follows the density of the input."""
        alive, joins = self.stats.alive_instances, {i: dict(j) for i, j in self.joins.items()}
        halves = self._halves(part)
        self.budget = halves is not None
        try:
            found = self._owned(part)
        except _TooMany:
            self.stats.deleted(self.stats.alive_instances - alive)
            self.joins = joins  # (the sizes of the halves' joins are counted instead)
            assert halves is not None
            for half in halves:
                yield from self.slice(half)
            return
        yield from found

    def _halves(self, part: Slice) -> tuple[Slice, Slice] | None:
        """``part`` cut at the time of its middle row (None: all its rows at one time)."""
        ts = self.data.ts
        first = int(np.searchsorted(ts, part.low, "left"))
        last = int(np.searchsorted(ts, part.high, "left"))  # the slice's rows: [first, last)
        if last - first < 2 or ts[first] == ts[last - 1]:
            return None
        cut = int(ts[(first + last) // 2])
        if cut == ts[first]:  # the middle row is at the first time: the next time after it
            cut = int(ts[int(np.searchsorted(ts, cut, "right"))])
        return Slice(part.low, cut), Slice(cut, part.high)

    def _owned(self, part: Slice) -> list[Found]:
        """The matches ``part`` owns: every branch over the rows around it, owned ones kept,
        each set of bindings once, by their last events (then by their positions)."""
        ts = self.data.ts
        low, high = self.window.around(part)
        start = int(np.searchsorted(ts, low, "left"))
        stop = int(np.searchsorted(ts, high, "right"))
        seen: set[tuple[tuple[str, int], ...]] = set()
        found: list[tuple[int, tuple[tuple[str, int], ...]]] = []
        folded: list[_Table] = []
        for branch in self.pattern.branches:
            table = self._branch(branch, start, stop)
            if table is None or not len(table):
                continue
            if self.closure is not None:
                table = self._folded(table)
            owned = (table.low >= part.low) & (table.low < part.high)
            if self.data.until is not None and branch.trailing:
                owned &= self.window.closes(table.low) < self.data.until  # decided before the cut
            names = sorted(table.positions)
            ends = [table.positions[n] for n in names] + [r.last for r in table.runs.values()]
            last = np.max(np.stack(ends), axis=0)
            if self.increment is not None:  # decided by this step's rows
                owned &= self.increment.reports(self.window, self._waits(branch), table.low, last)
            table, last = table.take(owned), last[owned]
            if self.closure is not None:  # (the lengths' matches differ: each once already)
                folded.append(table)
                continue
            if len(self.pattern.branches) == 1:  # each binding once already: by (last, key)
                order = np.lexsort([table.positions[n] for n in reversed(names)] + [last])
                positions = tuple(table.positions[n][order] for n in names)
                runs = {n: r.take(order) for n, r in table.runs.items()}
                return [Found(tuple(names), positions, self.data, runs)] if len(order) else []
            columns = [table.positions[n].tolist() for n in names]
            for i, end in enumerate(last.tolist()):
                key = tuple((n, col[i]) for n, col in zip(names, columns, strict=True))
                if key not in seen:
                    seen.add(key)
                    found.append((end, key))
        if self.closure is not None:
            return self._ordered(folded)
        found.sort()
        return _runs([key for _, key in found], self.data)

    def _folded(self, table: _Table) -> _Table:
        """A length's matches with the closure's elements ``b#1..b#k`` as ``b``'s run."""
        assert self.closure is not None
        name = self.closure.name
        elements = [e for e in self.closure.elements if e in table.positions]
        positions = {v: p for v, p in table.positions.items() if v not in elements}
        positions[name] = table.positions[elements[0]]
        k, n = len(elements), len(table)
        flat = np.stack([table.positions[e] for e in elements], axis=1).reshape(-1)
        runs = Runs(np.arange(0, k * n + 1, k, dtype=np.int64), flat)
        return _Table(positions, table.low, table.high, {name: runs})

    def _ordered(self, tables: list[_Table]) -> list[Found]:
        """The closure's matches of every length as one ``Found``, by their last events."""
        if not tables:
            return []
        name = next(iter(tables[0].runs))
        names = sorted(tables[0].positions)
        positions = {v: np.concatenate([t.positions[v] for t in tables]) for v in names}
        lengths = np.concatenate([np.diff(t.runs[name].offsets) for t in tables])
        runs = Runs(
            np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
            np.concatenate([t.runs[name].flat for t in tables]),
        )
        last = np.maximum(np.max(np.stack([positions[v] for v in names]), axis=0), runs.last)
        order = np.lexsort([positions[v] for v in reversed(names)] + [lengths, last])
        return [
            Found(
                tuple(names), tuple(positions[v][order] for v in names), self.data, {name: runs.take(order)}
            )
        ]

    # --- one branch ---------------------------------------------------------------------------

    def _branch(self, branch: Branch, start: int, stop: int) -> _Table | None:
        """The complete matches of ``branch`` among positions ``[start, stop)``."""
        run = branch.next_run
        if any(v.kleene for v in branch.variables) and run is None:
            raise AssertionError("a Kleene variable: not for the columnar engine")
        order = [n for n in self._order(branch, start, stop) if run is None or n != run[1]]
        table: _Table | None = None
        bound: set[str] = set()
        joins = self.joins.setdefault(self.pattern.branches.index(branch), {})
        for var in order:
            table = self._bind(branch, table, bound, var, start, stop)
            bound.add(var)
            joins[var] = joins.get(var, 0) + len(table)
            if not len(table):
                return table
        assert table is not None
        if run is not None:
            table = self._run(branch, table, run, start, stop)
            joins[run[1]] = joins.get(run[1], 0) + len(table)
        if not self._constants(branch):
            table = table.take(np.zeros(len(table), dtype=bool))
        implied = {
            n
            for x, y, n in branch.next_match
            if y in order and _needs(branch, x, n) <= set(order[: order.index(y)])
        }
        implied |= set(run[2:]) if run is not None else set()
        for n in branch.negated:
            if n.name in implied:  # (``_first``: no event that could be y's lies between)
                continue
            table = table.take(~self._violated(branch, table, n.name, start, stop))
            if not len(table):
                break
        self.stats.deleted(self.stats.alive_instances)  # reported, or dropped: none stays
        return table

    def _order(self, branch: Branch, start: int, stop: int) -> list[str]:
        """The branch's positive variables in the order they are joined: the rarest first
        by their exact counts among positions ``[start, stop)``, then each time the one
        whose join is estimated to make the fewest partial matches (``_estimate``; the
        plan's order breaks ties); next to a bound one strict contiguity makes its
        neighbour, before the others."""
        counts = {v.name: len(self._candidates(branch, v.name, start, stop)) for v in branch.positives}
        rank = {name: i for i, name in enumerate(self.order)}
        names = [v.name for v in branch.positives]
        # strict contiguity: a variable next to a bound one has one candidate, so it comes
        # first (the cheapest among those); skip-till-next-match: ``y`` of a pair
        # (``Branch.next_match``) once ``x`` is bound (its first candidate after ``x``'s
        # event that could be ``y``'s: one at most, ``_first``), and then first
        pairs = branch.adjacent
        needs = {y: _needs(branch, x, n) for x, y, n in branch.next_match}
        order: list[str] = []
        while names:
            bound = set(order)
            ready = [n for n in names if needs.get(n, set()) <= bound] or names
            near = [n for n in ready if any((x, n) in pairs or (n, x) in pairs for x in order) or n in needs]
            order.append(
                min(
                    near or ready,
                    key=lambda n: (_estimate(branch, n, bound, counts[n]), counts[n], rank.get(n, len(rank))),
                )
            )
            names.remove(order[-1])
        return order

    def _waits(self, branch: Branch) -> bool:
        """Are the branch's matches decided when their window closes (a negation trails it,
        or another branch binding the same variables, which may find the same match, and
        one step must report it once), not when their last event arrives?"""
        return any(other.trailing for other in self.pattern.branches if other.key == branch.key)

    def _newest(self, branch: Branch) -> str | None:
        """In an incremental step, the variable that follows every other bound one (the
        last of a SEQ) when no negation trails the branch: a match this step reports has
        its event among the new rows, so only those are its candidates (a delta join: the
        step costs its new rows, not the tail)."""
        if self.increment is None or self._waits(branch):
            return None
        key = id(branch)  # (the pattern's own branches; a hash would walk every condition)
        if key not in self.newest:
            positives = {v.name for v in branch.positives}
            last = [name for name in sorted(positives) if branch.before(name) == positives - {name}]
            self.newest[key] = last[0] if last else None
        return self.newest[key]

    def _candidates(self, branch: Branch, var: str, start: int, stop: int) -> np.ndarray:
        """``var``'s positions among ``[start, stop)`` (from the new rows on, for the
        branch's newest variable in an incremental step)."""
        candidates = self.candidates[var]
        if self.increment is not None and var == self._newest(branch):
            start = max(start, self.increment.fresh)
        return candidates[(candidates >= start) & (candidates < stop)]

    def _bind(
        self, branch: Branch, table: _Table | None, bound: set[str], var: str, start: int, stop: int
    ) -> _Table:
        """``table`` with ``var`` bound: the window join of the module's steps 1-3."""
        candidates = self._candidates(branch, var, start, stop)
        ts = self.data.ts
        if table is None:  # the first variable: each candidate a partial match
            times = ts[candidates]
            out = _Table({var: candidates}, times, times)
            self._made_rows(len(out))
            return self._filter(branch, out, set(), var)
        lo, hi = self._interval(branch, table, bound, var, start, stop)
        for x, y, n in branch.next_match:
            if y == var and _needs(branch, x, n) <= bound:
                return self._first(branch, table, bound, var, n, lo, hi, start, stop)
        key = self._key(branch, bound, var)
        keyed = None
        if key is not None:
            other, (mine, theirs) = key
            keyed = mine[candidates], theirs[table.positions[other]]
        pick, first, last = _windowed(candidates, lo, hi, keyed)
        counts = np.maximum(last - first, 0)
        total = int(counts.sum())
        pairs = self._banded(branch, table, bound, var, pick, first, last, total)
        if pairs is None:
            self._made_rows(total)
            parent = np.repeat(np.arange(len(table), dtype=np.int64), counts)
            offset = within(counts)
            chosen = pick[np.repeat(first, counts) + offset]
        else:
            self._made_rows(len(pairs.parent))
            parent, chosen = pairs.parent, pick[pairs.index]
            ranged = self.ranged.setdefault(var, {"joins": 0, "window_pairs": 0, "pairs": 0})
            ranged["joins"] += 1
            ranged["window_pairs"] += total
            ranged["pairs"] += len(parent)
            total = len(parent)
        times = ts[chosen]
        positions = {v: p[parent] for v, p in table.positions.items()}
        distinct = np.ones(total, dtype=bool)
        for p in positions.values():
            distinct &= p != chosen
        positions[var] = chosen
        out = _Table(positions, np.minimum(table.low[parent], times), np.maximum(table.high[parent], times))
        self.stats.deleted(len(table))
        if not distinct.all():
            self.stats.deleted(int(np.count_nonzero(~distinct)))
            out = out.take(distinct)
        return self._filter(branch, out, bound, var)

    def _first(
        self,
        branch: Branch,
        table: _Table,
        bound: set[str],
        var: str,
        n: str,
        lo: np.ndarray,
        hi: np.ndarray,
        start: int,
        stop: int,
    ) -> _Table:
        """``table`` with ``var`` bound under skip-till-next-match after a bound ``x``: per
        partial match, the first event in ``[lo, hi)`` (``lo`` is right after ``x``'s) that
        could be ``var``'s, that is, an event of the strategy's negated variable ``n`` (its
        type and prefilter) for which ``n``'s conditions and ``[attr]`` hold; kept when it
        is one of ``var``'s candidates and ``var``'s own conditions hold. No event that could
        be ``var``'s then lies between: ``n``'s negation holds by construction. The search
        gallops: 1, 2, 4, ... of ``n``'s events per partial match and round, so it reads
        about twice the events it skips, never the window's pairs."""
        conditions = [c for c in branch.conditions if c.negated == n and not c.prefilter]
        chosen = self._search(branch, table, n, conditions, lo, hi, start, stop)
        mine = self._candidates(branch, var, start, stop)  # (the newest: from the new rows on)
        found = np.flatnonzero(chosen >= 0)
        found = found[_among(mine, chosen[found])]
        self.stats.deleted(len(table))
        picked = chosen[found]
        times = self.data.ts[picked]
        positions = {v: p[found] for v, p in table.positions.items()}
        positions[var] = picked
        out = _Table(positions, np.minimum(table.low[found], times), np.maximum(table.high[found], times))
        self._made_rows(len(out))
        return self._filter(branch, out, bound, var)

    def _run(
        self, branch: Branch, table: _Table, run: tuple[str, str, str, str], start: int, stop: int
    ) -> _Table:
        """``table`` with the Kleene variable ``b`` of ``run`` (``Branch.next_run``) bound, one
        run per partial match: its first element the first event after ``x``'s that could be
        it (``n1``'s conditions, as ``_first``), each next one the first event after the run's
        last that could follow it (``n2``'s conditions, with ``b[i-1]`` the run's last),
        within the window of the match, until there is none; an event that could follow but
        is no event of ``b`` leaves no match. Kept when the run has ``b``'s least number of
        elements. Every condition on ``b`` is one of those (``automata.columnar``), so the
        runs need no other check, and both negations hold by construction."""
        x, b, n1, n2 = run
        ts = self.data.ts
        mine = self.candidates[b]
        mine = mine[(mine >= start) & (mine < stop)]
        lo, hi = self._interval(branch, table, set(table.positions), b, start, stop)
        firsts = [c for c in branch.conditions if c.negated == n1 and not c.prefilter]
        chosen = self._search(branch, table, n1, firsts, lo, hi, start, stop)
        found = np.flatnonzero(chosen >= 0)
        found = found[_among(mine, chosen[found])]
        self.stats.deleted(len(table))
        table = table.take(found)
        first = chosen[found]
        self._made_rows(len(table))
        nexts = [
            replace(c, expr=_as_plain(c.expr, b))
            for c in branch.conditions
            if c.negated == n2 and not c.prefilter
        ]
        last = first.copy()
        rows, steps, elements = (
            [np.arange(len(table), dtype=np.int64)],
            [np.zeros(len(table), np.int64)],
            [first],
        )
        dead = np.zeros(len(table), dtype=bool)
        active = np.arange(len(table), dtype=np.int64)
        step = 0
        while len(active):
            step += 1
            positions = {v: p[active] for v, p in table.positions.items()}
            positions[b] = last[active]
            low = table.low[active]
            sofar = _Table(positions, low, np.maximum(table.high[active], ts[last[active]]))
            _, latest = self.window.reach(low, low)
            hi = np.minimum(np.searchsorted(ts, latest, "right"), stop)
            following = self._search(branch, sofar, n2, nexts, last[active] + 1, hi, start, stop)
            got = np.flatnonzero(following >= 0)
            ok = _among(mine, following[got])
            dead[active[got[~ok]]] = True  # (it lies between the run's last and any later element)
            active, last_now = active[got[ok]], following[got[ok]]
            last[active] = last_now
            rows.append(active)
            steps.append(np.full(len(active), step, np.int64))
            elements.append(last_now)
            self._made_rows(len(active))
            self.stats.deleted(len(active))
        row = np.concatenate(rows)
        order = np.lexsort((np.concatenate(steps), row))  # each run's elements in turn
        lengths = np.bincount(row, minlength=len(table))
        runs = Runs(
            np.concatenate(([0], np.cumsum(lengths))).astype(np.int64), np.concatenate(elements)[order]
        )
        keep = ~dead & (lengths >= self.pattern.variable(b).lo)
        positions = dict(table.positions)
        positions[b] = first
        out = _Table(positions, np.minimum(table.low, ts[first]), np.maximum(table.high, ts[last]), {b: runs})
        if not keep.all():
            self.stats.deleted(int(np.count_nonzero(~keep)))
            out = out.take(keep)
        return out

    def _search(
        self,
        branch: Branch,
        table: _Table,
        n: str,
        conditions: Sequence[Condition],
        lo: np.ndarray,
        hi: np.ndarray,
        start: int,
        stop: int,
    ) -> np.ndarray:
        """Per partial match, the first event of the negated variable ``n`` in ``[lo, hi)``
        for which ``conditions`` (with ``n`` at that event) and ``[attr]`` hold: its
        position, or -1 (see ``_first``)."""
        pool = self.candidates[n]
        pool = pool[(pool >= start) & (pool < stop)]
        attrs = branch.equiv if self.pattern.variable(n).keyed and table.positions else ()
        first_var = next(iter(sorted(table.positions))) if attrs else ""
        coded = next((a for a in attrs if self._codes(a, a) is not None), None)
        keyed = None
        if coded is not None:  # [attr]: within the run of the partial match's key (as ``_bind``'s key join)
            codes = self._codes(coded, coded)
            assert codes is not None
            keyed = codes[0][pool], codes[1][table.positions[first_var]]
            attrs = tuple(a for a in attrs if a != coded)
        pool, at, end = _windowed(pool, lo, hi, keyed)
        chosen = np.full(len(table), -1, dtype=np.int64)
        rows = np.flatnonzero(at < end)
        width = 1
        while len(rows):
            counts = np.minimum(end[rows] - at[rows], width)
            total = int(counts.sum())
            self._made_rows(total)
            parent = np.repeat(rows, counts)
            offset = within(counts)
            tried = pool[np.repeat(at[rows], counts) + offset]
            positions = {v: p[parent] for v, p in table.positions.items()}
            keep = np.ones(total, dtype=bool)
            for p in positions.values():
                keep &= p != tried  # (an event bound in the match is no other candidate)
            if attrs:
                keep &= self._same(attrs, positions[first_var], tried)
            positions[n] = tried
            pairs = _Table(positions, table.low[parent], table.high[parent])
            for cond in conditions:
                if not keep.any():
                    break
                keep &= self._holds(cond, pairs, keep)
            self.stats.deleted(total)
            hit = np.flatnonzero(keep)
            if len(hit):  # the first qualifying event of each partial match that has one
                owner = parent[hit]
                firsts = np.unique(owner, return_index=True)[1]
                chosen[owner[firsts]] = tried[hit[firsts]]
            at[rows] += counts
            rows = rows[(chosen[rows] < 0) & (at[rows] < end[rows])]
            width *= 2
        return chosen

    def _interval(
        self, branch: Branch, table: _Table, bound: set[str], var: str, start: int, stop: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per partial match, the positions ``[lo, hi)`` that ``var``'s event may take:
        its order constraints against the bound variables, and the window; next to a bound
        variable strict contiguity makes its neighbour, one position (``Branch.adjacent``:
        a join on the row after, as SQL's ``LEAD``; a strategy's negated variable of every
        row makes every row a position)."""
        ts = self.data.ts
        earliest, latest = self.window.reach(table.low, table.high)
        lo = np.maximum(np.searchsorted(ts, earliest, "left"), start)
        hi = np.minimum(np.searchsorted(ts, latest, "right"), stop)
        for other in branch.before(var) & bound:
            lo = np.maximum(lo, table.positions[other] + 1)
        for other in branch.after(var) & bound:
            hi = np.minimum(hi, table.positions[other])
        for x, y in branch.adjacent:  # strict contiguity: the row right after (every row is here)
            if var == y and x in bound:
                lo, hi = np.maximum(lo, table.positions[x] + 1), np.minimum(hi, table.positions[x] + 2)
            elif var == x and y in bound:
                lo, hi = np.maximum(lo, table.positions[y] - 1), np.minimum(hi, table.positions[y])
        return lo, hi

    def _banded(
        self,
        branch: Branch,
        table: _Table,
        bound: set[str],
        var: str,
        pick: np.ndarray,
        first: np.ndarray,
        last: np.ndarray,
        total: int,
    ) -> Pairs | None:
        """The join of ``var`` as a range join (``runtime.bands``), where an order between
        ``var``'s attribute and a bound variable's (``a.delay < b.delay``) is one of the
        conditions and the windows hold many candidates each (``total`` pairs); None: expand
        every pair."""
        if total <= bands.MIN_PAIRS or len(table) * bands.MIN_WINDOW > total:
            return None  # (few pairs, or windows of a few candidates: expanding them costs less)
        for attr, op, other, theirs in branch.orders(var, bound):
            mine_values, theirs_values = self._numbers(attr), self._numbers(theirs)
            if mine_values is None or theirs_values is None or mine_values[0].dtype != theirs_values[0].dtype:
                continue
            at = table.positions[other]
            threshold, present = theirs_values[0][at], theirs_values[1][at]
            last = np.where(present, last, first)  # (a missing value is in no order)
            pairs = Blocks.of(mine_values[0][pick]).pairs(first, last, threshold, op)
            if pairs is not None:
                self.stats.predicate_evaluations += pairs.compared + pairs.searched
            return pairs
        return None

    def _numbers(self, attr: str) -> tuple[np.ndarray, np.ndarray] | None:
        """A numeric column's values by position (a missing one as 0) and where they are
        present (not missing, not NaN); None for a column a range join cannot order
        (decimals, times, text, mixed)."""
        if attr in self.numbers:
            return self.numbers[attr]
        schema = self.schema
        column = whole(self.data.columns[schema.index(attr)]) if attr != schema.time_col else None
        out: tuple[np.ndarray, np.ndarray] | None = None
        if column is not None and column.type in _NUMBER_TYPES and schema.kind(attr) is not Kind.DECIMAL:
            values = np.asarray(pc.fill_null(column, 0).to_numpy(zero_copy_only=False))
            present = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            if values.dtype.kind == "f":
                present &= ~np.isnan(values)
            out = values, present
        self.numbers[attr] = out
        return out

    def _key(
        self, branch: Branch, bound: set[str], var: str
    ) -> tuple[str, tuple[np.ndarray, np.ndarray]] | None:
        """An exact key to join ``var`` with a bound variable on: an equality condition
        (``a.x = c.y``) or ``[attr]``, over columns whose equal values are equal keys."""
        if not bound:
            return None
        for attr, other, theirs in branch.equalities(var, bound):
            codes = self._codes(attr, theirs)
            if codes is not None:
                return other, codes
        for attr in branch.equiv:
            codes = self._codes(attr, attr)
            if codes is not None:
                return next(iter(sorted(bound))), codes
        return None

    def _codes(self, mine: str, theirs: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Both columns as codes of one dictionary (-1: missing), by position; None where
        equal keys might not be equal values (floats: -0.0 and 0.0; decimals; mixed types)."""
        if (mine, theirs) in self.codes:
            return self.codes[(mine, theirs)]
        schema = self.schema
        if schema.time_col in (mine, theirs):
            return None
        left = whole(self.data.columns[schema.index(mine)])
        right = whole(self.data.columns[schema.index(theirs)])
        if left.type != right.type or left.type not in _KEY_TYPES or schema.kind(mine) is Kind.DECIMAL:
            self.codes[(mine, theirs)] = None
            return None
        if mine == theirs:  # (one column: its codes once)
            codes = _indices(left.dictionary_encode())
            out = codes, codes
        else:
            codes = _indices(pa.concat_arrays([left, right]).dictionary_encode())
            out = codes[: len(left)], codes[len(left) :]
        self.codes[(mine, theirs)] = out
        return out

    # --- conditions ---------------------------------------------------------------------------

    def _filter(self, branch: Branch, table: _Table, bound: set[str], var: str) -> _Table:
        """``[attr]`` and the conditions that become bound when ``var`` is taken."""
        keep = np.ones(len(table), dtype=bool)
        if branch.equiv and bound:
            first = next(iter(sorted(bound)))
            keep &= self._same(branch.equiv, table.positions[first], table.positions[var])
        elif branch.equiv:
            keep &= self._present(branch.equiv, table.positions[var])
        for i in place(branch, frozenset(bound), var).check:
            if not keep.any():
                break
            keep &= self._holds(branch.conditions[i], table, keep)
        if keep.all():
            return table
        self.stats.deleted(int(np.count_nonzero(~keep)))
        return table.take(keep)

    def _holds(self, cond: Condition, table: _Table, rows: np.ndarray) -> np.ndarray:
        """Where ``cond`` holds, among ``rows`` (the others are left false)."""
        at = np.flatnonzero(rows)
        self.stats.predicate_evaluations += len(at)
        positions = {v: p[at] for v, p in table.positions.items()}
        result, unsure = evaluate(cond.expr, self._frame(positions, len(at)))
        if unsure is not None and unsure.any():
            which = np.flatnonzero(unsure)
            result[which] = self._reference(cond, positions, which)
        out = np.zeros(len(table), dtype=bool)
        out[at] = result
        return out

    def _frame(self, positions: dict[str, np.ndarray], size: int) -> Frame:
        data, schema = self.data, self.schema

        def column(var: str, attr: str) -> pa.Array:
            return whole(data.columns[schema.index(attr)].take(arrow(positions[var])))

        return Frame(size, schema, column, lambda var: data.ts[positions[var]])

    def _reference(self, cond: Condition, positions: dict[str, np.ndarray], rows: np.ndarray) -> list[bool]:
        """``cond`` on events made for some rows, by the compiled condition."""
        names = sorted(positions)
        fn = compile_condition(cond.expr, {n: i for i, n in enumerate(names)}, self.schema)
        wanted = np.unique(np.concatenate([positions[n][rows] for n in names]))
        made = dict(zip(wanted.tolist(), self.data.events(wanted), strict=True))
        return [bool(fn([made[int(positions[n][r])] for n in names])) for r in rows]

    def _same(self, attrs: tuple[str, ...], first: np.ndarray, new: np.ndarray) -> np.ndarray:
        """``[attr]``: the new event's values are present and equal to the first's (decimal
        text compared as the numbers it holds, in Python: ``0.10`` is ``0.1``)."""
        keep = np.ones(len(new), dtype=bool)
        for attr in attrs:
            at = self.schema.index(attr)
            column = self.data.columns[at]
            if self.schema.kind(attr) is Kind.DECIMAL:
                made = self.data.events(np.unique(np.concatenate((first, new))))
                value = {e.row: e.values[at] for e in made}
                rows = self.data.rows
                keep &= np.array(
                    [
                        present(value[rows[f]]) and value[rows[f]] == value[rows[n]]
                        for f, n in zip(first, new, strict=True)
                    ],
                    dtype=bool,
                )
                continue
            equal = pc.equal(column.take(arrow(first)), column.take(arrow(new)))
            keep &= np.asarray(pc.fill_null(equal, False).to_numpy(zero_copy_only=False), dtype=bool)
        return keep

    def _present(self, attrs: tuple[str, ...], at: np.ndarray) -> np.ndarray:
        keep = np.ones(len(at), dtype=bool)
        for attr in attrs:
            column = self.data.columns[self.schema.index(attr)].take(arrow(at))
            keep &= np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return keep

    def _constants(self, branch: Branch) -> bool:
        """The conditions that mention no variable (``WHERE 1 < 2``)."""
        return all(
            compile_condition(c.expr, {}, self.schema)([]) for c in branch.conditions if not c.variables
        )

    # --- negation -----------------------------------------------------------------------------

    def _violated(self, branch: Branch, table: _Table, name: str, start: int, stop: int) -> np.ndarray:
        """Per complete match: is there an event of the negated variable ``name`` in its
        interval, not bound in the match, that satisfies its conditions and ``[attr]``?"""
        bound = set(table.positions)
        lo, hi = self._interval(branch, table, bound, name, start, stop)
        lo = np.maximum(lo, start)
        candidates = self.candidates[name]
        first = np.searchsorted(candidates, lo, "left")
        last = np.searchsorted(candidates, hi, "left")
        counts = np.maximum(last - first, 0)
        conditions = [c for c in branch.conditions if c.negated == name and not c.prefilter]
        total = int(counts.sum())
        if not total:
            return np.zeros(len(table), dtype=bool)
        parent = np.repeat(np.arange(len(table), dtype=np.int64), counts)
        offset = within(counts)
        chosen = candidates[np.repeat(first, counts) + offset]
        self._made_rows(total)
        keep = np.ones(total, dtype=bool)
        positions = {v: p[parent] for v, p in table.positions.items()}
        for p in positions.values():
            keep &= p != chosen  # an event bound in the match violates nothing
        if branch.equiv and self.pattern.variable(name).keyed:
            first_var = next(iter(sorted(bound)))
            keep &= self._same(branch.equiv, positions[first_var], chosen)
        # the window over the match and the violating event: within reach by the interval
        positions[name] = chosen
        pairs = _Table(positions, np.minimum(table.low[parent], self.data.ts[chosen]), table.high[parent])
        for cond in conditions:
            if not keep.any():
                break
            keep &= self._holds(cond, pairs, keep)
        self.stats.deleted(total)
        violated = np.zeros(len(table), dtype=bool)
        violated[parent[keep]] = True
        return violated

    def _made_rows(self, count: int) -> None:
        """``count`` candidate tuples made: instances, bounded by ``--max-instances`` (and
        by ``STEP_TUPLES`` while the slice can be halved). While it can, a step that would
        pass either halves the slice instead: the limit counts what one slice holds at once,
        as the other engines' counts what their window holds."""
        limit = self.instances.limit
        over_limit = limit is not None and self.stats.alive_instances + count > limit
        if self.budget and (count > STEP_TUPLES or over_limit):
            raise _TooMany
        self.instances.made(count)


def _windowed(
    pool: np.ndarray, lo: np.ndarray, hi: np.ndarray, keyed: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A join's candidates (``pool``, ascending positions) each partial match may take:
    ``pool`` in the order searched, and per partial match ``[first, last)`` into it, the
    positions in ``[lo, hi)``. With ``keyed`` (the candidates' key codes, the partial
    matches' codes) only those of an equal key: the candidates ordered by key, then
    position, and each partial match's key run searched (a missing key equals nothing)."""
    if keyed is None:
        return pool, np.searchsorted(pool, lo, "left"), np.searchsorted(pool, hi, "left")
    keys, wanted = keyed
    sorter = _by_key(keys)
    pick = pool[sorter]
    composite = (keys[sorter] << 32) | pick
    first = np.searchsorted(composite, (wanted << 32) | lo, "left")
    last = np.searchsorted(composite, (wanted << 32) | hi, "left")
    return pick, first, np.where(wanted == _NO_KEY, first, last)


def _by_key(keys: np.ndarray) -> np.ndarray:
    """The order of positions (ascending) by their keys (dictionary codes, ``_NO_KEY`` for
    a missing one), then by position: a stable sort of the keys, by radix where they fit
    16 bits (10x numpy's ``lexsort`` of both)."""
    if not len(keys) or int(keys.max()) < 1 << 15:
        out: np.ndarray = np.argsort(keys.astype(np.int16), kind="stable")
        return out
    return np.argsort(keys, kind="stable")


def has_bit(masks: np.ndarray, bit: int) -> np.ndarray:
    """Where the int64 ``masks`` have ``bit`` (0-63) set, as booleans (whose positions
    ``flatnonzero`` finds 5x faster than an int64 array's)."""
    out: np.ndarray = (masks & as_mask(1 << bit)) != 0
    return out


def as_mask(bits: int) -> np.int64:
    """Bits 0-63 (a Python int up to 2**64 - 1) as the int64 a row's mask is: bit 63 is
    its sign (a pattern of 64 variables has it)."""
    return np.uint64(bits).view(np.int64)


def _indices(encoded: pa.DictionaryArray) -> np.ndarray:
    """A dictionary's indices as int64 codes, a missing value ``_NO_KEY``."""
    codes: np.ndarray = encoded.indices.fill_null(_NO_KEY).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes


def _among(sorted_positions: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Which of ``positions`` are in ``sorted_positions`` (a variable's candidates)."""
    if not len(sorted_positions):
        return np.zeros(len(positions), dtype=bool)
    slot = np.minimum(np.searchsorted(sorted_positions, positions), len(sorted_positions) - 1)
    found: np.ndarray = sorted_positions[slot] == positions
    return found


def _as_plain(expr: a.Expr, b: str) -> a.Expr:
    """``expr`` with ``b[last]`` (the run so far's last element, in a condition of a run's
    gaps) read as a plain variable ``b``: ``_Run._run`` binds ``b`` to that element."""

    def leaf(node: a.Attr | a.Agg) -> a.Expr | None:
        if isinstance(node, a.Attr) and node.var == b and node.index is a.Index.LAST:
            return replace(node, index=a.Index.PLAIN)
        return None

    return a.transformed(expr, leaf)


EQUAL_SHARE = 0.1  # a join's candidates an equality with a bound variable keeps, as estimated
OTHER_SHARE = 1 / 3  # ... and any other condition it shares with bound variables only


def _estimate(branch: Branch, name: str, bound: set[str], count: int) -> float:
    """The partial matches joining ``name`` after ``bound`` makes, relative to the other
    variables' (the join order's measure): its candidates, times the share each condition
    that becomes decided there is guessed to keep, System R's defaults (an equality 1/10,
    an order 1/3). Where a variable shares no condition with the bound ones, its join is
    their product with its window, which a rarer one's conditions can cut: ``SEQ(ORD a, DFW
    b, ATL c) WHERE a.delay > 60 AND b.delay > a.delay`` joins b before the rarer c (on 3M
    flights, 9,468 partial matches instead of 167,380)."""
    share = 1.0
    for cond in branch.conditions:
        others = cond.variables - {name}
        if bound and name in cond.variables and others and others <= bound and cond.negated is None:
            share *= EQUAL_SHARE if cond.join is not None else OTHER_SHARE
    return count * share


def _needs(branch: Branch, x: str, n: str) -> set[str]:
    """What must be bound before skip-till-next-match's ``y`` after ``x`` is searched for
    as the first event that could be it (``_Run._first``): ``x`` and every variable the
    conditions of its negated variable ``n`` read."""
    read = {v for c in branch.conditions if c.negated == n for v in c.variables}
    return ({x} | read) - {n}


def _runs(keys: list[tuple[tuple[str, int], ...]], data: Columns) -> list[Found]:
    """Bindings (each ``(name, position)`` pairs, by name) as ``Found``s, in their order:
    one per run of bindings of the same variables (OR branches bind different ones)."""
    out: list[Found] = []
    at = 0
    while at < len(keys):
        names = tuple(n for n, _ in keys[at])
        end = at + 1
        while end < len(keys) and tuple(n for n, _ in keys[end]) == names:
            end += 1
        rows = np.array([[p for _, p in key] for key in keys[at:end]], dtype=np.int64)
        out.append(Found(names, tuple(rows[:, i].copy() for i in range(len(names))), data))
        at = end
    return out


class _TooMany(Exception):
    """A join would make more than ``STEP_TUPLES`` partial matches: halve the slice."""


def one_array(values: list[object]) -> pa.Array:
    """Python values as one Arrow array; where Arrow cannot hold them as one type, nulls of
    no type: every condition on the column is then left to the reference, which reads the
    events themselves."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, ValueError):
        return pa.nulls(len(values))


def columns_of_events(events: Sequence[Event], schema: Schema) -> Columns:
    """Events already made (a Spark shard's, ``bench``'s), as ``Columns``: each column an
    Arrow array of the events' values (``one_array``)."""
    n = len(events)
    columns = [one_array([e.values[i] for e in events]) for i in range(len(schema.columns))]
    return Columns(
        np.fromiter((e.row for e in events), np.int64, n),
        np.fromiter((e.ts for e in events), np.int64, n),
        np.fromiter((e.mask for e in events), np.int64, n),
        columns,
        lambda positions: [events[int(p)] for p in positions],
    )


def evaluate_events(
    pattern: Pattern, events: Iterable[Event], schema: Schema, stats: Stats, options: EvalOptions
) -> Iterator[Match]:
    """The engine registry's form: the relevant events of a bounded input (clock ticks left
    out), in stream order, evaluated at once. A pattern it does not evaluate (a Kleene
    variable), or a pipe (unbounded: every match must be written as soon as it is decided),
    runs on the lazy tree instead, and the stats say so (``columnar_ran``)."""
    if options.live or not evaluates(pattern):
        from cepcli.automata.tree import build_tree
        from cepcli.runtime.tree import evaluate_tree

        why = "a pipe is unbounded" if options.live else "a Kleene variable"
        stats.extra["columnar_ran"] = f"tree: {why}"
        return evaluate_tree(build_tree(pattern), events, schema, stats, options)
    relevant = [e for e in events if e.mask]
    order = tuple(v.name for v in pattern.variables)
    return evaluate_columnar(pattern, order, columns_of_events(relevant, schema), schema, stats, options)
