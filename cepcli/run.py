"""One run: compiled queries, by name, attached to one input, then evaluated.

Library code with no click and no rich. Every face goes through ``Run``: ``cepcli run``
(one query or many), ``cepcli.find``, ``cepcli check``/``explain``/``bench`` and the Spark
driver and workers. One query is a dict of one: nothing here is written twice for it.

The input is read, typed and prefiltered once for all the queries. Their variables get
bits of their own (``rebit``), so one mask per row says which variables of which queries
can use it (``Prefilter.merged``). Where every query's engine is columnar (``columnar``,
or ``adaptive`` on a pattern it can run), the queries run over the same columns: step by
step (a file or a pipe, the window's tail carried: each match written once its rows are
in; with ``--max-delay``, once the delay has passed them), or the whole input at once with
``--sort``. Otherwise each query's engine is fed the events its
variables can use, and the clock's ticks, in stream order, so that on a pipe every match
is written as soon as it is decided. A single query's events go straight to its
engine's own loop (the adaptive engine batches them there).

Every match comes with its query's name. Each query has its own statistics (``parts``;
with one query, the run's own); the input's are the run's. The clock starts when the
input is opened, so ``Stats.seconds`` covers everything after compiling: the sample, the
frequency order, reading, evaluating and handing the matches on.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from cepcli.engines import engine, run_pattern, start
from cepcli.errors import InputError, QueryError, UsageError, flag
from cepcli.events import Event, Schema
from cepcli.notes import Notes
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, RunOptions
from cepcli.query.checks import check_schema, text_orderings
from cepcli.runtime.loop import Runtime
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats, add_part, part_work
from cepcli.sources.options import InputOptions

if TYPE_CHECKING:  # pyarrow and numpy are imported with the input (see ``Run.__init__``)
    import numpy as np

    from cepcli.explain import Explanation
    from cepcli.runtime.columnar import Columns, Found, Increment
    from cepcli.sources.source import Source
    from cepcli.sources.times import TimeSpec
    from cepcli.sources.typed import TypedBatch

T = TypeVar("T")
EVALUATED_AHEAD = 4  # the columnar engine's slices evaluated ahead of their matches' writing, at most
MAX_BITS = 62  # the variables of all the queries together (a row's mask is an int64)
MADE_KEPT = 1 << 18  # events of matches kept for the other queries' matches, at most


def evaluated_ahead(make: Callable[[], Iterator[T]]) -> Iterator[T]:
    """The columnar engine's ``Found``s (``make()``), evaluated by a thread of their own a
    few slices ahead of the writing of their matches (numpy and Arrow let the GIL go: two
    cores work); closed early, the thread is waited for a moment only (Ctrl-C)."""
    from cepcli.sources.ahead import read_ahead

    return read_ahead(make, EVALUATED_AHEAD, "cepcli-evaluate", wait=0.2)


def taken(item: Match | Found, written: int, limit: int | None) -> tuple[Match | Found, int]:
    """A match, or the columnar engine's ``Found`` of several, cut to what ``--max-matches``
    (``limit``) leaves after ``written``; and how many matches it holds."""
    if isinstance(item, Match):  # (the other engines' path: one match at a time)
        return item, 1
    if limit is not None and written + len(item) > limit:
        item = item.head(limit - written)
    return item, len(item)


def rebit(pattern: Pattern, offset: int) -> Pattern:
    """``pattern`` with every variable's bit moved up by ``offset``."""
    if not offset:
        return pattern
    moved = {v.name: replace(v, bit=v.bit + offset) for v in pattern.variables}
    branches = tuple(
        replace(b, variables=tuple(moved[v.name] for v in b.variables)) for b in pattern.branches
    )
    return replace(pattern, branches=branches, variables=tuple(moved[v.name] for v in pattern.variables))


def open_checked(
    queries: Sequence[Compiled],
    options: InputOptions,
    data: object,
    stdin: IO[bytes] | None,
    stats: Stats,
    notes: Notes,
) -> tuple[Source, Schema]:
    """The input (``data``, or the path of ``options``, as ``prepare`` resolved it, else
    standard input) opened, its schema read and checked against each query (an error
    points into that query's text); closed again when that fails. (The readers and pyarrow
    are imported here, not with this module: ``cepcli check`` and ``explain`` without an
    input need neither, and pyarrow's import is most of their start.)"""
    from cepcli.sources.source import Source

    if data is None and options.path is None:
        options = replace(options, path="-")
    source = Source(options, data, stdin, stats, notes)
    try:
        schema = source.schema()
        for compiled in queries:
            try:
                check_schema(compiled.query, schema)
            except QueryError as err:
                raise err.located(compiled.text, compiled.path) from None
    except BaseException:
        source.close()
        raise
    return source, schema


def check_order(pattern: Pattern, order: tuple[str, ...]) -> None:
    names = [v.name for v in pattern.variables]
    positives = {v.name for v in pattern.variables if not v.negated}
    unknown = [v for v in order if v not in names]
    if unknown or len(set(order)) != len(order) or not positives <= set(order):
        raise UsageError(
            f"{flag('order')} lists variables rarest first, each once, every positive one included"
            f" (the pattern has {', '.join(names)})" + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )


class Run:
    """Compiled queries, by name (one query: a dict of one), attached to their input
    (``data``, or the path of ``options``, else standard input) and checked against its
    columns (see the module). ``named``: the matches carry their query's name (default:
    several queries)."""

    def __init__(
        self,
        queries: Mapping[str, Compiled],
        options: InputOptions,
        run: RunOptions | None = None,
        data: object = None,
        stdin: IO[bytes] | None = None,
        stats: Stats | None = None,
        notes: Notes | None = None,
        named: bool | None = None,
    ) -> None:
        if not queries:
            raise UsageError("no query to run")
        self.run = run or RunOptions()
        engine(self.run.engine)  # fail fast on an unknown engine
        self.names = list(queries)
        self.queries = list(queries.values())
        self.named = len(self.names) > 1 if named is None else named
        if self.run.order is not None:
            if len(self.queries) > 1:
                raise UsageError(
                    f"{flag('order')} names the variables of one query: not with several queries"
                )
            check_order(self.queries[0].pattern, self.run.order)
        patterns, offset = [], 0
        for compiled in self.queries:
            patterns.append(rebit(compiled.pattern, offset))
            offset += len(compiled.pattern.variables)
        if len(patterns) > 1 and offset > MAX_BITS:  # (one query alone may have all 64)
            raise UsageError(
                f"the queries have {offset} variables in all, more than {MAX_BITS} for one reading of the"
                " input: run them in groups"
            )
        self.patterns = patterns
        self.stats = stats if stats is not None else Stats()
        self.notes = notes if notes is not None else Notes(self.stats.warnings)
        # each query's work: with one query, the run's own counters
        self.parts = (
            {self.names[0]: self.stats}
            if len(self.names) == 1
            else {name: Stats(engine=self.run.engine) for name in self.names}
        )
        if self.run.stats_every:  # each query's counters every so many of its relevant events
            for part in self.parts.values():
                part.series = []
        if self.run.order is not None and not engine(self.run.engine).lazy:
            self.notes.warn(
                f"--order is for the chain engines (chain, first-chance, post-processing);"
                f" {self.run.engine} ignores it"
            )
        from cepcli.sources.prefilter import Prefilter

        self.started = time.perf_counter()
        self.source, self.schema = open_checked(self.queries, options, data, stdin, self.stats, self.notes)
        try:
            for compiled in self.queries:
                self._warn_text_order(compiled, dict(options.schema))
        except BaseException:
            self.source.close()
            raise
        # opening the input and reading its sample (the kinds, the time's reading) is input work
        self.stats.input_seconds += time.perf_counter() - self.started
        self.prefilter = Prefilter.merged([Prefilter.of(p, self.schema) for p in patterns])
        self.typed: frozenset[str] = frozenset().union(*(p.columns for p in patterns))

    @property
    def compiled(self) -> Compiled:
        """The first query (the only one, where a caller takes one)."""
        return self.queries[0]

    @property
    def pattern(self) -> Pattern:
        """The first query's pattern."""
        return self.patterns[0]

    @property
    def by_name(self) -> dict[str, Pattern]:
        """Each query's pattern (its variables' bits as in this run), by name."""
        return dict(zip(self.names, self.patterns, strict=True))

    @property
    def time_reading(self) -> TimeSpec:
        """How the input's times are read (decided from the sample, as the kinds are): as
        numbers in the time unit, ISO-8601 text, by ``--time-format``, or native timestamps
        (``how``), so that another reader of the same input (a Spark executor reading a
        split) reads them the same way."""
        return self.source.typer(self.typed).time

    def pieces(
        self,
        floor: tuple[int, object, int] | None = None,
        stats: Stats | None = None,
        latest: list[tuple[int, object, int] | None] | None = None,
    ) -> Iterator[tuple[TypedBatch, np.ndarray, InputError | None]]:
        """The input as ``matches`` reads it, before events are made: each piece typed (the
        columns the queries read, as locally), its bad rows failed or skipped, its time
        order checked (from ``floor``: the latest row before it, as time, text and row id)
        and prefiltered. Yields the rows kept, their variable masks (every query's bits: a
        Spark executor reads a split once for all), and the error that ends the input after
        them (``--on-bad-row fail``). Counts go to ``stats`` (the run's if None). The events
        of a piece are ``cepcli.sources.rows.make_events`` of its rows whose mask is not 0.
        ``latest`` gets the latest row kept when the input ends (with ``--max-delay``: the
        one of the latest time), the floor of the input after it."""
        checks: list[Any] = []
        yield from self.source.kept(
            self.prefilter, self.stats if stats is None else stats, self.typed, floor, checks
        )
        if latest is not None:
            latest.append(checks[0].latest)

    def order(self) -> tuple[str, ...]:
        """The frequency order of a lazy engine for the (only) query: ``--order``, else
        measured from a bounded prefix of the input (``Source.count_variables``), with how
        in the stats."""
        return self.orders()[0]

    def orders(self) -> list[tuple[str, ...]]:
        """Each query's frequency order for a lazy engine (``--order``, else from one count
        of the input's first rows: each variable's bit is its own); () for other engines."""
        stats = self.stats
        if self.run.order is not None:
            stats.extra["order_source"] = "--order"
            return [self.run.order]
        if not engine(self.run.engine).lazy:
            return [() for _ in self.patterns]
        started = time.perf_counter()
        counts, _, where = self.source.count_variables(self.prefilter, self.typed)
        if len(self.patterns) == 1:
            stats.extra["order_seconds"] = round(time.perf_counter() - started, 6)
            stats.extra["frequencies"] = {v.name: counts[v.bit] for v in self.pattern.variables}
            stats.extra["order_source"] = f"measured over {where}"
        return [p.rarest_first(counts) for p in self.patterns]

    @property
    def evaluation(self) -> EvalOptions:
        """How the engines run: the input's kind (a pipe: nothing may wait), the limits, the
        warnings' destination."""
        run = self.run
        return EvalOptions(
            self.source.streaming, run.stats_every, run.max_subsets, run.max_instances, self.notes
        )

    def matches(self) -> Iterator[tuple[str, Match]]:
        """Every query's matches, each with its query's name, as they are found. The
        statistics are complete when the iteration ends (also when stopped early, or when
        it fails)."""
        return cast(Iterator[tuple[str, Match]], self._counted(batches=False))

    def found(self) -> Iterator[tuple[str, Match | Found]]:
        """``matches``, where the columnar engine runs as ``Found`` positions, a slice's
        matches at a time (a writer makes their text from columns: ``lines.found_lines``)."""
        return self._counted(batches=True)

    def _counted(self, batches: bool) -> Iterator[tuple[str, Match | Found]]:
        limit, stats = self.run.max_matches, self.stats
        several = len(self.names) > 1
        written = 0
        for part in self.parts.values():
            part.matches = 0  # what was handed on (also when stopped early), as it goes
        completed = False
        if not several:  # (a lazy engine's automaton says its own order as it starts)
            stats.order = tuple(v.name for v in self.pattern.variables if not v.negated)
        try:
            for name, found in self._found(batches):
                item, count = taken(found, written, limit)
                yield name, item
                self.parts[name].matches += count
                written += count
                if limit is not None and written >= limit:
                    stats.extra["stopped_at_max_matches"] = True
                    break
            else:
                completed = True
        finally:
            if several:
                stats.engine = self.run.engine
                for part in self.parts.values():
                    add_part(stats, part_work(part))  # the run's work: every query's
                stats.extra["queries"] = {name: part.as_dict() for name, part in self.parts.items()}
            self._ended(written, completed)

    def _ended(self, written: int, completed: bool) -> None:
        """What every run does when its matches end (also when stopped early, or failing):
        after the whole input, a word on the types no row had; the warnings held for the end
        said, the bad rows skipped counted, the matches handed on, the time and the peak
        memory taken, the input closed."""
        stats, notes = self.stats, self.notes
        if completed:
            self._warn_unseen()
        notes.flush()  # the warnings said once for the run's largest case
        notes.bad_rows(stats.bad_rows, stats.first_bad_row)
        stats.matches = written  # what was handed on, also when stopped early
        stats.seconds = time.perf_counter() - self.started
        stats.peak_rss_mb = peak_rss_mb()
        self.source.close()

    def _found(self, batches: bool) -> Iterator[tuple[str, Match | Found]]:
        """The engines' matches, each with its query's name: for the columnar engine on a
        bounded input, the input's relevant rows as columns (no event made but for the
        matches; ``batches``: none at all, the matches as ``Found``); else events from the
        source to each query's runtime. Then the error that ended the input."""
        chosen, evaluation = engine(self.run.engine), self.evaluation
        if not evaluation.every and all(chosen.columnar(p) for p in self.patterns):
            options = self.source.options
            if not options.sort:  # step by step (--max-delay: as the rows are in)
                yield from self._columnar(batches, self._steps())
                return
            if not evaluation.live:
                yield from self._columnar(batches, self._whole())
                return
        orders = self.orders()
        events = self.source.events(self.prefilter, self.stats, self.typed)
        if len(self.patterns) == 1:  # its engine's own loop (the adaptive engine batches)
            name, pattern = self.names[0], self.patterns[0]
            for match in run_pattern(
                pattern, self.run.engine, events, self.schema, self.stats, orders[0], evaluation
            ):
                yield name, match
            return
        yield from self._fanned(events, orders, evaluation)

    def _whole(self) -> Iterator[tuple[Columns, Increment | None]]:
        """The whole input's relevant rows at once (``--sort``), then the error that ended
        the input."""
        data, error = self.source.columns(self.prefilter, self.stats, self.typed)
        yield data, None
        if error is not None:
            raise error

    def _steps(self) -> Iterator[tuple[Columns, Increment | None]]:
        """The input's relevant rows step by step, the window's tail carried
        (``Source.steps``): memory bounded by the window, not the input."""
        window = max(p.window for p in self.patterns)
        waits = any(b.trailing for p in self.patterns for b in p.branches)
        extra, steps = self.stats.extra, 0
        extra["columnar_steps"] = steps
        queries = len(self.patterns)
        for step in self.source.steps(self.prefilter, self.stats, self.typed, window, waits, queries):
            steps += 1
            extra["columnar_steps"] = steps  # (as it goes: a run stopped by Ctrl-C says its steps)
            yield step

    def _columnar(
        self, batches: bool, steps: Iterator[tuple[Columns, Increment | None]]
    ) -> Iterator[tuple[str, Match | Found]]:
        """The columnar engine over ``steps`` of the input (every query over each step's
        rows, one after another), evaluated a few steps ahead of the writing."""
        import numpy as np

        from cepcli.runtime.columnar import Increment, evaluate_found

        run, evaluation = self.run, self.evaluation
        relevant = 0
        for name in self.names:
            part = self.parts[name]
            part.engine = run.engine
            if run.engine != "columnar":
                part.extra["adaptive_ran"] = "columnar"

        def evaluated() -> Iterator[tuple[str, Found]]:
            nonlocal relevant
            for data, increment in steps:
                fresh = 0 if increment is None else increment.fresh
                relevant += len(data) - fresh
                for name, pattern in zip(self.names, self.patterns, strict=True):  # one after another
                    order = tuple(v.name for v in pattern.variables)
                    bits = pattern.bits
                    mine = (
                        data
                        if len(self.patterns) == 1
                        else _rows_of(data, bits, self.schema, pattern.columns)
                    )
                    step = increment
                    if increment is not None and mine is not data:  # its rows' positions
                        step = Increment(
                            int(np.count_nonzero(data.masks[:fresh] & bits)), increment.before, increment.now
                        )
                    part = self.parts[name]
                    for found in evaluate_found(pattern, order, mine, self.schema, part, evaluation, step):
                        yield name, found

        try:
            for name, found in evaluated_ahead(evaluated):
                if batches:
                    yield name, found
                else:
                    for match in found.matches():
                        yield name, match
        finally:
            if len(self.names) > 1:
                self.stats.relevant_events = relevant

    def _fanned(
        self, events: Iterator[Event], orders: list[tuple[str, ...]], evaluation: EvalOptions
    ) -> Iterator[tuple[str, Match]]:
        """Several queries' runtimes fed from one stream: each gets the events its
        variables can use, and every clock tick."""
        every = self.run.stats_every
        runtimes: list[Runtime] = [
            start(pattern, self.run.engine, self.schema, self.parts[name], order, evaluation)
            for name, pattern, order in zip(self.names, self.patterns, orders, strict=True)
        ]
        masks = [p.bits for p in self.patterns]
        named = list(zip(self.names, runtimes, masks, strict=True))
        try:
            for event in events:
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

    def _warn_text_order(self, compiled: Compiled, given: dict[str, object]) -> None:
        """``a.x < b.x`` over text columns whose values are numbers compares characters
        (``'10' < '9'``): a warning, unless --schema made them text on purpose."""
        from cepcli.query.printer import print_expr

        for compare, columns in text_orderings(compiled.query, self.schema):
            numeric = [c for c in columns if c not in given and self.source.looks_numeric(c)]
            if numeric:
                fix = ",".join(f"{c}:float" for c in numeric)
                self.notes.warn(
                    f"{print_expr(compare)} compares text character by character ('10' < '9'), and"
                    f" {', '.join(map(repr, numeric))} holds numbers written as text: give --schema {fix}"
                    " to compare numbers"
                )

    def _warn_unseen(self) -> None:
        """After the whole input: a type of a pattern that no row had (a typo, or the wrong
        --type-col) gets a warning rather than a silent zero."""
        column = self.source.options.type_col
        for name, alike in self.prefilter.unseen():
            hint = f"; it has {', '.join(map(repr, alike))} (types are case-sensitive)" if alike else ""
            self.notes.warn(f"no row of the input has the type {name!r} (column {column!r}){hint}")

    def close(self) -> None:
        self.source.close()


def explain_query(
    compiled: Compiled, options: InputOptions | None, engine_name: str, order: tuple[str, ...] | None
) -> Explanation:
    """What ``cepcli explain`` shows: the automaton of ``engine_name``, with the order
    ``run`` would use (``--order``; else, for a lazy engine with an input, measured as
    ``run`` measures it; else the pattern's order)."""
    chosen = engine(engine_name)
    pattern = compiled.pattern
    source = ""
    if order is not None:
        check_order(pattern, order)
        source = "--order"
    elif chosen.lazy and options is not None:
        run = Run({compiled.path: compiled}, options, RunOptions(engine_name))
        try:
            order = run.order()
        finally:
            run.close()
        source = str(run.stats.extra["order_source"])
    elif chosen.lazy:
        order = tuple(v.name for v in pattern.variables)
        source = "the pattern's order: no --order and no input to measure"
    automaton = chosen.build(pattern, order or ())
    from cepcli.explain import explain  # (its views: for this command only)

    return explain(pattern, engine_name, automaton, source)


def peak_rss_mb() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage / (1024 * 1024) if sys.platform == "darwin" else usage / 1024


def _rows_of(data: Columns, mask: int, schema: Schema, reads: frozenset[str]) -> Columns:
    """The rows of ``data`` some variable of one query can use (its bits in ``mask``), with
    the columns its conditions read (the others are nulls: its matches' events are made
    from ``data``): the query's joins and slices then see no other query's rows. (With one
    query: ``data`` itself.)"""
    import numpy as np
    import pyarrow as pa

    from cepcli.arrays import arrow
    from cepcli.runtime.columnar import Columns

    at = np.flatnonzero((data.masks & mask) != 0)  # (a bool's: 5x an int64's; bits 0-61)
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


__all__ = ["Run", "check_order", "explain_query", "open_checked", "peak_rss_mb", "rebit"]
