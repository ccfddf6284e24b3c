"""Many queries over one reading of the input (``cepcli run q1.sase q2.sase``, several
``-e``, a directory of queries; ``cepcli.find`` with a list or a dict of them).

Each query is evaluated as if alone, by the same engine; the input is read, typed and
prefiltered once. The queries' variables get bits of their own (``rebit``), so one mask
per row says which variables of which queries can use it (``Prefilter.merged``): on a
bounded input each query runs the columnar engine over the same columns; otherwise each
has a runtime of its own, fed the events its variables can use (and the clock ticks) in
stream order, so that on a pipe every match is still written as soon as it is decided.
Every match comes with the name of the query that found it, and each query has its own
statistics (``parts``); the input's are the run's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import IO, TYPE_CHECKING, cast

from cepcli.engines import engine, start
from cepcli.errors import InputError, UsageError
from cepcli.events import Event, Schema
from cepcli.job import Compiled, RunOptions, checked_pieces, ended, evaluated_ahead, open_checked, taken
from cepcli.notes import Notes
from cepcli.plan.pattern import Pattern
from cepcli.runtime.loop import Runtime
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats, add_part, part_work
from cepcli.sources.options import InputOptions

if TYPE_CHECKING:  # (pyarrow and numpy come with the input, as in ``cepcli.job``)
    import numpy as np

    from cepcli.runtime.columnar import Columns, Found
    from cepcli.sources.times import TimeSpec
    from cepcli.sources.typed import TypedBatch

MAX_BITS = 62  # the variables of all the queries together (a row's mask is an int64)
MADE_KEPT = 1 << 18  # events of matches kept for the other queries' matches, at most


def rebit(pattern: Pattern, offset: int) -> Pattern:
    """``pattern`` with every variable's bit moved up by ``offset``."""
    moved = {v.name: replace(v, bit=v.bit + offset) for v in pattern.variables}
    branches = tuple(
        replace(b, variables=tuple(moved[v.name] for v in b.variables)) for b in pattern.branches
    )
    return replace(pattern, branches=branches, variables=tuple(moved[v.name] for v in pattern.variables))


def agreed(names: Sequence[str], options: Sequence[InputOptions]) -> InputOptions:
    """The input options every query gives (each the command line's with its ``WITH``);
    where two differ, one line naming the option and the queries."""
    first = options[0]
    for name, other in zip(names[1:], options[1:], strict=True):
        for field in first.__dataclass_fields__:
            if getattr(first, field) != getattr(other, field):
                raise UsageError(
                    f"the queries must read the input alike: {names[0]} and {name} differ in"
                    f" {field} ({getattr(first, field)!r} and {getattr(other, field)!r}); give it on"
                    " the command line to set it for all"
                )
    return first


class Many:
    """Several compiled queries, named, attached to one input (see the module)."""

    def __init__(
        self,
        queries: Sequence[tuple[str, Compiled]],
        options: InputOptions,
        run: RunOptions | None = None,
        data: object = None,
        stdin: IO[bytes] | None = None,
        stats: Stats | None = None,
        notes: Notes | None = None,
    ) -> None:
        self.run = run or RunOptions()
        engine(self.run.engine)
        if self.run.order is not None:
            raise UsageError("--order names the variables of one query: not with several queries")
        self.names = [name for name, _ in queries]
        self.queries = [compiled for _, compiled in queries]
        patterns, offset = [], 0
        for compiled in self.queries:
            patterns.append(rebit(compiled.pattern, offset))
            offset += len(compiled.pattern.variables)
        if offset > MAX_BITS:
            raise UsageError(
                f"the queries have {offset} variables in all, more than {MAX_BITS} for one reading of the"
                " input: run them in groups"
            )
        self.patterns = patterns
        self.stats = stats if stats is not None else Stats()
        self.notes = notes if notes is not None else Notes(self.stats.warnings)
        self.parts = {name: Stats(engine=self.run.engine) for name in self.names}  # each query's work
        if self.run.stats_every:  # each query's counters every so many of its relevant events
            for part in self.parts.values():
                part.series = []
        from cepcli.sources.prefilter import Prefilter

        self.started = time.perf_counter()
        self.source, self.schema = open_checked(self.queries, options, data, stdin, self.stats, self.notes)
        self.stats.input_seconds += time.perf_counter() - self.started
        self.prefilter = Prefilter.merged([Prefilter.of(p, self.schema) for p in patterns])
        self.typed = frozenset().union(*(p.columns for p in patterns))

    @property
    def time_reading(self) -> TimeSpec:
        """How the input's times are read (``Job.time_reading``)."""
        return self.source.typer(self.typed).time

    def pieces(
        self,
        floor: tuple[int, object, int] | None = None,
        stats: Stats | None = None,
        latest: list[tuple[int, object, int] | None] | None = None,
    ) -> Iterator[tuple[TypedBatch, np.ndarray, InputError | None]]:
        """``Job.pieces`` for every query at once: each row's mask has every query's bits
        (``rebit``), so that a Spark executor reads a split once for all of them."""
        return checked_pieces(
            self.source, self.prefilter, self.stats if stats is None else stats, self.typed, floor, latest
        )

    def matches(self) -> Iterator[tuple[str, Match]]:
        """Every query's matches, each with its query's name, as they are found. The
        statistics are complete when the iteration ends (also when stopped early)."""
        return cast(Iterator[tuple[str, Match]], self._counted(batches=False))

    def found(self) -> Iterator[tuple[str, Match | Found]]:
        """``matches``, where the columnar engine runs as ``Found`` positions
        (``Job.found``)."""
        return self._counted(batches=True)

    def _counted(self, batches: bool) -> Iterator[tuple[str, Match | Found]]:
        limit = self.run.max_matches
        written = 0
        for part in self.parts.values():
            part.matches = 0  # what was handed on (also when stopped early), as it goes
        try:
            for name, found in self._found(batches):
                item, count = taken(found, written, limit)
                yield name, item
                self.parts[name].matches += count
                written += count
                if limit is not None and written >= limit:
                    self.stats.extra["stopped_at_max_matches"] = True
                    break
        finally:
            self.stats.engine = self.run.engine
            for part in self.parts.values():
                add_part(self.stats, part_work(part))  # the run's work: every query's
            self.stats.extra["queries"] = {name: part.as_dict() for name, part in self.parts.items()}
            ended(self.stats, self.notes, self.source, self.started, written)

    def _found(self, batches: bool) -> Iterator[tuple[str, Match | Found]]:
        run, source = self.run, self.source
        every = run.stats_every
        evaluation = EvalOptions(source.streaming, every, run.max_subsets, run.max_instances, self.notes)
        chosen = engine(run.engine)
        if not evaluation.live and not every and all(chosen.columnar(p) for p in self.patterns):
            from cepcli.runtime.columnar import evaluate_found

            data, error = source.columns(self.prefilter, self.stats, self.typed)

            def evaluated() -> Iterator[tuple[str, Found]]:
                for name, pattern in zip(self.names, self.patterns, strict=True):
                    part = self.parts[name]
                    part.engine = run.engine
                    order = tuple(v.name for v in pattern.variables)
                    bits = sum(1 << v.bit for v in pattern.variables)
                    mine = _rows_of(data, bits, self.schema, pattern.columns)
                    for found in evaluate_found(pattern, order, mine, self.schema, part, evaluation):
                        yield name, found

            for name, found in evaluated_ahead(evaluated):  # (the queries one after another)
                if batches:
                    yield name, found
                else:
                    for match in found.matches():
                        yield name, match
            self.stats.relevant_events = len(data.ts)
            if error is not None:
                raise error
            return
        orders = self._orders()
        runtimes: list[Runtime] = [
            start(pattern, run.engine, self.schema, self.parts[name], order, evaluation)
            for name, pattern, order in zip(self.names, self.patterns, orders, strict=True)
        ]
        masks = [sum(1 << v.bit for v in p.variables) for p in self.patterns]
        named = list(zip(self.names, runtimes, masks, strict=True))
        try:
            for event in source.events(self.prefilter, self.stats, self.typed):
                if event.mask:
                    self.stats.relevant_events += 1
                for name, runtime, mask in named:
                    if not event.mask or event.mask & mask:  # a clock tick reaches every query
                        part = self.parts[name]
                        if event.mask:
                            part.relevant_events += 1
                        for match in runtime.process(event):
                            yield name, match
                        if every and event.mask and part.relevant_events % every == 0:
                            part.snapshot()
            for name, runtime, _ in named:
                for match in runtime.finish():
                    yield name, match
        finally:
            for runtime in runtimes:
                runtime.report()

    def _orders(self) -> list[tuple[str, ...]]:
        """A lazy engine's frequency order for each query, from one count of the input's
        first rows (each variable's bit is its own)."""
        if not engine(self.run.engine).lazy:
            return [() for _ in self.patterns]
        counts, _, _ = self.source.count_variables(self.prefilter, self.typed)
        return [p.rarest_first(counts) for p in self.patterns]

    def close(self) -> None:
        self.source.close()


def _rows_of(data: Columns, mask: int, schema: Schema, reads: frozenset[str]) -> Columns:
    """The rows of ``data`` some variable of one query can use (its bits in ``mask``), with
    the columns its conditions read (the others are nulls: its matches' events are made
    from ``data``): the query's joins and slices then see no other query's rows."""
    import numpy as np
    import pyarrow as pa

    from cepcli.arrays import arrow
    from cepcli.runtime.columnar import Columns

    at = np.flatnonzero(data.masks & mask)
    if len(at) == len(data):
        return data
    taken = arrow(at)
    columns = [
        column.take(taken) if name in reads else pa.nulls(len(at), column.type)
        for name, column in zip(schema.columns, data.columns, strict=True)
    ]
    made = data.made  # by position in ``data``: an event in two queries' matches is made once

    def events(positions: np.ndarray) -> list[Event]:
        wanted = at[positions]
        missing = [int(p) for p in wanted if int(p) not in made]
        if missing and len(made) > MADE_KEPT:  # (memory: the matches' events, not the input's)
            made.clear()
            missing = [int(p) for p in wanted]
        if missing:
            made.update(zip(missing, data.events(np.array(missing, dtype=np.int64)), strict=True))
        return [made[int(p)] for p in wanted]

    given = data.values

    def values(positions: np.ndarray) -> list[pa.Array]:
        assert given is not None
        return given(at[positions])

    return Columns(
        data.rows[at],
        data.ts[at],
        data.masks[at],
        columns,
        events,
        data.until,
        values if given else None,
        data.decimal_text,
    )
