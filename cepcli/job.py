"""One ``cepcli run``: resolve the query and its input, evaluate, hand matches on.

Library code with no click and no rich: the CLI passes in where matches go and how
progress is shown.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from cepcli.engines import DEFAULT_ENGINE, compile_pattern, engine, run_pattern
from cepcli.errors import QueryError, UsageError
from cepcli.events import Schema
from cepcli.explain import Explanation, explain
from cepcli.plan.pattern import Pattern
from cepcli.query.ast import Query
from cepcli.query.checks import check_schema
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.sources.csv import CsvOptions, CsvSource
from cepcli.sources.prefilter import Prefilter


@dataclass(frozen=True, slots=True)
class RunOptions:
    query_path: str
    input: CsvOptions = field(default_factory=lambda: CsvOptions(path=None))
    engine: str = DEFAULT_ENGINE
    order: tuple[str, ...] | None = None
    max_matches: int | None = None
    stats_every: int = 0


@dataclass(slots=True)
class Prepared:
    """A query compiled and checked against its input, ready to run."""

    query: Query
    pattern: Pattern
    source: CsvSource
    schema: Schema


def read_query(path: str) -> tuple[str, str]:
    """The query text and the name errors use for it."""
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except OSError as err:
        raise UsageError(f"{path}: cannot read the query file: {err.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: the query file is not UTF-8 text") from None


def input_path(query: Query, query_path: str, given: str | None) -> str:
    """``--input`` wins, then the query's FROM (relative to the query file), then stdin."""
    if given is not None:
        return given
    if query.source is not None:
        source = Path(query.source)
        return str(source if source.is_absolute() else Path(query_path).parent / source)
    return "-"


@dataclass(frozen=True, slots=True)
class Compiled:
    """A query file, parsed and normalised (no input opened yet)."""

    path: str
    text: str
    query: Query
    pattern: Pattern


def compile_file(query_path: str) -> Compiled:
    text, name = read_query(query_path)
    query, pattern = compile_pattern(text, name)
    return Compiled(name, text, query, pattern)


def attach_input(compiled: Compiled, options: CsvOptions, stdin: IO[bytes] | None = None) -> Prepared:
    """Open the input (``options.path`` None means the query's FROM, then standard input)
    and check the query against its columns."""
    _check_columns(options)
    path = input_path(compiled.query, compiled.path, options.path)
    source = CsvSource(replace(options, path=path), stdin=stdin)
    schema = source.schema()
    try:
        check_schema(compiled.query, schema)
    except QueryError as err:
        source.close()
        raise err.located(compiled.text, compiled.path) from None
    return Prepared(compiled.query, compiled.pattern, source, schema)


def prepare(query_path: str, options: CsvOptions, stdin: IO[bytes] | None = None) -> Prepared:
    """Compile the query file and open its input."""
    return attach_input(compile_file(query_path), options, stdin)


def _check_columns(options: CsvOptions) -> None:
    if not options.header and not options.columns:
        raise UsageError("--no-header needs --columns c1,c2,... to name the columns")
    if options.header and options.columns:
        raise UsageError("--columns names the columns of a headerless file: add --no-header")


def run(
    options: RunOptions,
    on_match: Callable[[Match], None],
    prepared: Prepared | None = None,
    stdin: IO[bytes] | None = None,
    on_progress: Callable[[int], None] | None = None,
    stats: Stats | None = None,
) -> Stats:
    """Evaluate; ``on_match`` is called with each match as it is found, and
    ``on_progress`` with the bytes read after each chunk. ``stats`` (made here if not
    given) holds the counters so far if the run is interrupted."""
    engine(options.engine)  # fail fast on an engine that is not built
    prepared = prepared or prepare(options.query_path, options.input, stdin)
    pattern = prepared.pattern
    if on_progress is not None:
        report = on_progress
        prepared.source.on_chunk = lambda source: report(source.progress()[0])
    stats = stats if stats is not None else Stats()
    stats.every = options.stats_every
    prefilter = Prefilter.of(pattern)
    order = _frequency_order(options, prepared, prefilter, stats)
    stats.order = tuple(v.name for v in pattern.variables if not v.negated)
    events = prepared.source.events(prefilter, stats, pattern.columns | {prepared.schema.time_col})
    started = time.perf_counter()
    written = 0
    try:
        for match in run_pattern(pattern, options.engine, events, prepared.schema, stats, order):
            on_match(match)
            written += 1
            if options.max_matches is not None and written >= options.max_matches:
                stats.extra["stopped_at_max_matches"] = True
                break
    finally:
        stats.report_bad_rows()  # also when stopped early, by an error or --max-matches
        stats.matches = written  # what was handed on, also when stopped early
        stats.seconds = time.perf_counter() - started
        stats.peak_rss_mb = peak_rss_mb()
        prepared.source.close()
    return stats


def explain_query(
    query_path: str, options: CsvOptions, engine_name: str, order: tuple[str, ...] | None
) -> Explanation:
    """What ``cepcli explain`` shows: the automaton of ``engine_name``, with the order
    ``run`` would use (``--order``; else, for a lazy engine with an input, measured
    from it; else the pattern's order)."""
    chosen = engine(engine_name)
    compiled = compile_file(query_path)
    pattern = compiled.pattern
    source = ""
    if order is not None:
        _check_order(pattern, order)
        source = "--order"
    elif chosen.lazy and (options.path is not None or compiled.query.source is not None):
        prepared = attach_input(compiled, options)
        stats = Stats()
        order = _frequency_order(
            RunOptions(query_path, options, engine_name), prepared, Prefilter.of(pattern), stats
        )
        prepared.source.close()
        source = str(stats.extra["order_source"])
    elif chosen.lazy:
        order = tuple(v.name for v in pattern.variables)
        source = "the pattern's order: no --order and no input to measure"
    automaton = chosen.build(pattern, order or ())
    return explain(pattern, engine_name, automaton, source)


def _frequency_order(
    options: RunOptions, prepared: Prepared, prefilter: Prefilter, stats: Stats
) -> tuple[str, ...]:
    """The order a lazy engine builds its chains in: ``--order``, else measured from
    the input (events per variable after the type and single-variable filters)."""
    pattern = prepared.pattern
    if options.order is not None:
        _check_order(pattern, options.order)
        stats.extra["order_source"] = "--order"
        return options.order
    if not engine(options.engine).lazy:
        return ()
    started = time.perf_counter()
    typed = pattern.columns | {prepared.schema.time_col}
    counts, rows, sample = prepared.source.count_variables(prefilter, typed)
    stats.extra["order_seconds"] = round(time.perf_counter() - started, 6)
    stats.extra["frequencies"] = {v.name: counts[v.bit] for v in pattern.variables}
    where = f"the first {rows:,} rows (standard input)" if sample else f"all {rows:,} rows"
    stats.extra["order_source"] = f"measured over {where}"
    return pattern.rarest_first(counts)


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


__all__ = ["Compiled", "Prepared", "RunOptions", "attach_input", "compile_file", "prepare", "run"]
