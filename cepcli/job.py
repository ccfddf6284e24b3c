"""One evaluation: a query compiled and attached to its input, then run.

Library code with no click and no rich. ``cepcli.find`` (the Python API), the CLI,
``cepcli bench`` and the Spark workers all go through ``Job``. Its clock starts when the
input is opened, so ``Stats.seconds`` covers everything after compiling the query: the
sample, the frequency order, reading, evaluating and handing the matches on.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from cepcli.engines import DEFAULT_ENGINE, compile_pattern, engine, run_pattern
from cepcli.errors import InputError, QueryError, UsageError
from cepcli.events import Schema
from cepcli.notes import Notes
from cepcli.plan.pattern import Pattern
from cepcli.query.ast import Query
from cepcli.query.checks import check_schema, text_orderings
from cepcli.runtime.matches import Match
from cepcli.runtime.options import MAX_SUBSETS, EvalOptions
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions, from_text

if TYPE_CHECKING:  # pyarrow and numpy are imported with the input (see ``Job.__init__``)
    import numpy as np

    from cepcli.explain import Explanation
    from cepcli.runtime.columnar import Found
    from cepcli.sources.prefilter import Prefilter
    from cepcli.sources.source import Source
    from cepcli.sources.times import TimeSpec
    from cepcli.sources.typed import TypedBatch

T = TypeVar("T")
EVALUATED_AHEAD = 4  # the columnar engine's slices evaluated ahead of their matches' writing, at most


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


@dataclass(frozen=True, slots=True)
class RunOptions:
    engine: str = DEFAULT_ENGINE
    order: tuple[str, ...] | None = None
    max_matches: int | None = None
    stats_every: int = 0
    max_instances: int | None = None  # stop with an error past this many live instances
    max_subsets: int = MAX_SUBSETS  # warn when one Kleene candidate set allows more subsets


@dataclass(frozen=True, slots=True)
class Compiled:
    """Query text, parsed and normalised (no input opened yet)."""

    path: str
    text: str
    query: Query
    pattern: Pattern


def read_query(path: str) -> str:
    """The text of a query file."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not part of it
    except OSError as err:
        hint = ""
        if "pattern" in path.lower() and " " in path.strip():  # the query's text, given as a file
            text = path.strip() if len(path.strip()) <= 60 else path.strip()[:60] + "..."
            hint = f"; to give the query's text, use -e: cepcli run -e {text!r}"
        raise UsageError(f"{path[:80]}: cannot read the query file: {err.strerror}{hint}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: the query file is not UTF-8 text") from None


def compile_text(
    text: str, name: str = "<query>", time_unit: int = 10**9, parsed: Query | None = None
) -> Compiled:
    query, pattern = compile_pattern(text, name, time_unit, parsed)
    return Compiled(name, text, query, pattern)


def compile_file(query_path: str, time_unit: int = 10**9) -> Compiled:
    return compile_text(read_query(query_path), query_path, time_unit)


def with_query_options(
    options: InputOptions, parsed: Query, text: str, name: str = "<query>", given: Collection[str] = ()
) -> InputOptions:
    """``options`` with the input options of the query's ``FROM ... WITH (...)`` applied,
    except those named in ``given`` (set on the command line or in the call: they win).
    ``parsed`` is ``text`` parsed (errors point into ``text``); run before compiling it:
    ``time_unit`` decides what a bare WITHIN number means."""
    changes: dict[str, object] = {}
    for option in parsed.options:
        if option.name in given:
            continue
        try:
            changes[option.name] = (
                from_text(option.name, option.value) if isinstance(option.value, str) else option.value
            )
        except UsageError as err:  # a schema that is not col:kind pairs
            message = str(err).replace("--schema", "the input option schema")
            raise QueryError(message, option.span).located(text, name) from None
    return replace(options, **changes) if changes else options  # type: ignore[arg-type]


def input_path(compiled: Compiled, given: str | None) -> str:
    """``--input`` wins, then the query's FROM (relative to the query file), then stdin."""
    if given is not None:
        return given
    if compiled.query.source == "-":
        return "-"  # FROM '-': standard input (the query may still say how to read it)
    if compiled.query.source is not None:
        source = Path(compiled.query.source)
        return str(source if source.is_absolute() else Path(compiled.path).parent / source)
    return "-"


def checked_pieces(
    source: Source,
    prefilter: Prefilter,
    stats: Stats,
    typed: frozenset[str],
    floor: tuple[int, object, int] | None,
    latest: list[tuple[int, object, int] | None] | None,
) -> Iterator[tuple[TypedBatch, np.ndarray, InputError | None]]:
    """``Job.pieces`` (and ``Many.pieces``): the source's kept pieces from ``floor``; then
    ``latest`` gets the latest row kept (the order check's)."""
    checks: list[Any] = []
    yield from source.kept(prefilter, stats, typed, floor, checks)
    if latest is not None:
        latest.append(checks[0].latest)


def open_checked(
    queries: Sequence[Compiled],
    options: InputOptions,
    data: object,
    stdin: IO[bytes] | None,
    stats: Stats,
    notes: Notes,
) -> tuple[Source, Schema]:
    """The input of ``queries`` (``data``, or the path of ``options``, else the first
    query's FROM, else standard input) opened, its schema read and checked against each
    query (an error points into that query's text); closed again when that fails. (The
    readers and pyarrow are imported here, not with this module: ``cepcli check`` and
    ``explain`` without an input need neither, and pyarrow's import is most of their start.)"""
    from cepcli.sources.source import Source

    if data is None:
        options = replace(options, path=input_path(queries[0], options.path))
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


def ended(stats: Stats, notes: Notes, source: Source, started: float, written: int) -> None:
    """What every run does when its matches end (also when stopped early, or failing): the
    warnings held for the end said, the bad rows skipped counted, the matches handed on, the
    time and the peak memory taken, the input closed."""
    notes.flush()  # the warnings said once for the run's largest case
    notes.bad_rows(stats.bad_rows, stats.first_bad_row)
    stats.matches = written  # what was handed on, also when stopped early
    stats.seconds = time.perf_counter() - started
    stats.peak_rss_mb = peak_rss_mb()
    source.close()


class Job:
    """A compiled query attached to its input (``data``, or the path of ``options``,
    else the query's FROM, else standard input) and checked against its columns."""

    def __init__(
        self,
        compiled: Compiled,
        options: InputOptions,
        run: RunOptions | None = None,
        data: object = None,
        stdin: IO[bytes] | None = None,
        stats: Stats | None = None,
        notes: Notes | None = None,
    ) -> None:
        self.run = run or RunOptions()
        engine(self.run.engine)  # fail fast on an unknown engine
        if self.run.order is not None:
            _check_order(compiled.pattern, self.run.order)
        self.compiled = compiled
        self.stats = stats if stats is not None else Stats()
        self.notes = notes if notes is not None else Notes(self.stats.warnings)
        if self.run.stats_every:
            self.stats.series = []  # recorded as the run goes
        if self.run.order is not None and not engine(self.run.engine).lazy:
            self.notes.warn(
                f"--order is for the chain engines (chain, first-chance, post-processing);"
                f" {self.run.engine} ignores it"
            )
        from cepcli.sources.prefilter import Prefilter

        self.started = time.perf_counter()
        self.source, self.schema = open_checked([compiled], options, data, stdin, self.stats, self.notes)
        try:
            self._warn_text_order(dict(options.schema))
        except BaseException:
            self.source.close()
            raise
        # opening the input and reading its sample (the kinds, the time's reading) is input work
        self.stats.input_seconds += time.perf_counter() - self.started
        self.prefilter = Prefilter.of(compiled.pattern, self.schema)
        self.typed = compiled.pattern.columns

    @property
    def pattern(self) -> Pattern:
        return self.compiled.pattern

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
        columns the query reads, as locally), its bad rows failed or skipped, its time order
        checked (from ``floor``: the latest row before it, as time, text and row id) and
        prefiltered. Yields the rows kept, their variable masks, and the error that ends the
        input after them (``--on-bad-row fail``). Counts go to ``stats`` (the job's if
        None). The events of a piece are ``cepcli.sources.rows.make_events`` of its rows
        whose mask is not 0. ``latest`` gets the latest row kept when the input ends (with
        ``--max-delay``: the one of the latest time), the floor of the input after it."""
        return checked_pieces(
            self.source, self.prefilter, self.stats if stats is None else stats, self.typed, floor, latest
        )

    def order(self) -> tuple[str, ...]:
        """The frequency order of a lazy engine: ``--order``, else measured from a bounded
        prefix of the input (``Source.count_variables``), with how in the stats."""
        stats = self.stats
        if self.run.order is not None:
            stats.extra["order_source"] = "--order"
            return self.run.order
        if not engine(self.run.engine).lazy:
            return ()
        started = time.perf_counter()
        counts, _, where = self.source.count_variables(self.prefilter, self.typed)
        stats.extra["order_seconds"] = round(time.perf_counter() - started, 6)
        stats.extra["frequencies"] = {v.name: counts[v.bit] for v in self.pattern.variables}
        stats.extra["order_source"] = f"measured over {where}"
        return self.pattern.rarest_first(counts)

    @property
    def evaluation(self) -> EvalOptions:
        """How the engines run: the input's kind (a pipe: nothing may wait), the limits, the
        warnings' destination."""
        run = self.run
        return EvalOptions(
            self.source.streaming, run.stats_every, run.max_subsets, run.max_instances, self.notes
        )

    def matches(self) -> Iterator[Match]:
        """Evaluate, yielding each match as it is found. The statistics are complete when
        the iteration ends (also when it is stopped early, or fails)."""
        return cast(Iterator[Match], self._counted(batches=False))

    def found(self) -> Iterator[Match | Found]:
        """``matches``, where the columnar engine runs as ``Found`` positions, a slice's
        matches at a time (a writer makes their text from columns: ``lines.found_lines``)."""
        return self._counted(batches=True)

    def _counted(self, batches: bool) -> Iterator[Match | Found]:
        stats, pattern, limit = self.stats, self.pattern, self.run.max_matches
        written = 0
        try:
            order = self.order()
            stats.order = tuple(v.name for v in pattern.variables if not v.negated)
            for found in self._found(order, batches):
                item, count = taken(found, written, limit)
                yield item
                written += count
                if limit is not None and written >= limit:
                    stats.extra["stopped_at_max_matches"] = True
                    break
            else:
                self._warn_unseen()
        finally:
            ended(stats, self.notes, self.source, self.started, written)

    def _found(self, order: tuple[str, ...], batches: bool = False) -> Iterator[Match | Found]:
        """The engine's matches: events from the source to a runtime, or, for the columnar
        engine on a bounded input, the input's relevant rows as columns (no event made
        but for the matches; ``batches``: none at all, the matches as ``Found``), then
        the error that ended the input."""
        stats, pattern, evaluation = self.stats, self.pattern, self.evaluation
        if not evaluation.live and not evaluation.every and engine(self.run.engine).columnar(pattern):
            from cepcli.runtime.columnar import evaluate_found

            stats.engine = self.run.engine
            if self.run.engine != "columnar":
                stats.extra["adaptive_ran"] = "columnar"
            data, error = self.source.columns(self.prefilter, stats, self.typed)
            names = tuple(v.name for v in pattern.variables)

            def evaluated() -> Iterator[Found]:
                return evaluate_found(pattern, names, data, self.schema, stats, evaluation)

            for found in evaluated_ahead(evaluated):
                if batches:
                    yield found
                else:
                    yield from found.matches()
            if error is not None:
                raise error
            return
        events = self.source.events(self.prefilter, stats, self.typed)
        yield from run_pattern(pattern, self.run.engine, events, self.schema, stats, order, evaluation)

    def _warn_text_order(self, given: dict[str, object]) -> None:
        """``a.x < b.x`` over text columns whose values are numbers compares characters
        (``'10' < '9'``): a warning, unless --schema made them text on purpose."""
        from cepcli.query.printer import print_expr

        for compare, columns in text_orderings(self.compiled.query, self.schema):
            numeric = [c for c in columns if c not in given and self.source.looks_numeric(c)]
            if numeric:
                fix = ",".join(f"{c}:float" for c in numeric)
                self.notes.warn(
                    f"{print_expr(compare)} compares text character by character ('10' < '9'), and"
                    f" {', '.join(map(repr, numeric))} holds numbers written as text: give --schema {fix}"
                    " to compare numbers"
                )

    def _warn_unseen(self) -> None:
        """After the whole input: a type of the pattern that no row had (a typo, or the
        wrong --type-col) gets a warning rather than a silent zero."""
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
        _check_order(pattern, order)
        source = "--order"
    elif chosen.lazy and options is not None:
        job = Job(compiled, options, RunOptions(engine_name))
        try:
            order = job.order()
        finally:
            job.close()
        source = str(job.stats.extra["order_source"])
    elif chosen.lazy:
        order = tuple(v.name for v in pattern.variables)
        source = "the pattern's order: no --order and no input to measure"
    automaton = chosen.build(pattern, order or ())
    from cepcli.explain import explain  # (its views: for this command only)

    return explain(pattern, engine_name, automaton, source)


def _check_order(pattern: Pattern, order: tuple[str, ...]) -> None:
    names = [v.name for v in pattern.variables]
    positives = {v.name for v in pattern.variables if not v.negated}
    unknown = [v for v in order if v not in names]
    if unknown or len(set(order)) != len(order) or not positives <= set(order):
        raise UsageError(
            f"--order lists variables rarest first, each once, every positive one included"
            f" (the pattern has {', '.join(names)})" + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )


def peak_rss_mb() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage / (1024 * 1024) if sys.platform == "darwin" else usage / 1024


__all__ = [
    "Compiled",
    "Job",
    "RunOptions",
    "compile_file",
    "compile_text",
    "ended",
    "explain_query",
    "open_checked",
]
