"""``cepcli bench``: the engines side by side on one query and input, over windows.

The input is read once and replayed from memory, so the engines are timed, not the CSV
reader (its time is reported apart). For every engine and window: one warm-up run
(which also measures peak memory with ``tracemalloc``), then the median of ``repeat``
timed runs. Every engine's matches are hashed; engines that disagree on a window are
flagged, and the command fails.
"""

from __future__ import annotations

import hashlib
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from cepcli.engines import ENGINES, engine, run_pattern
from cepcli.errors import QueryError, UsageError
from cepcli.events import Event, Schema
from cepcli.notes import Notes
from cepcli.plan.normalize import normalize
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled
from cepcli.query import ast as a
from cepcli.query.parser import parse_query
from cepcli.run import Run
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions

_MOD = 1 << 64


@dataclass(frozen=True, slots=True)
class Cell:
    """One engine on one window: medians over the timed runs."""

    engine: str
    window: str
    events_per_second: float
    seconds: float
    peak_instances: int
    peak_buffered_events: int
    predicate_evaluations_per_event: float
    memory_operations_per_event: float
    peak_memory_mb: float
    matches: int
    match_hash: str
    agrees: bool = True


@dataclass(slots=True)
class BenchResult:
    query: str
    events: int
    relevant_events: int
    read_seconds: float
    windows: list[str]
    engines: list[str]
    cells: list[Cell] = field(default_factory=list)
    bad_rows: int = 0  # input rows skipped (--on-bad-row skip)
    warnings: list[str] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return all(c.agrees for c in self.cells)


def bench(
    compiled: Compiled,
    options: InputOptions,
    engines: Sequence[str],
    windows: Sequence[str],
    repeat: int,
    progress: Callable[[str], None] = lambda label: None,
) -> BenchResult:
    for name in engines:
        engine(name)
    window_texts = list(windows) or [_window_text(compiled.query.window)]
    patterns = {w: with_window(compiled.query, w, options.unit) for w in windows}  # checked before reading
    started = time.perf_counter()
    events, schema, read_stats = read_events(compiled, options)
    read_seconds = time.perf_counter() - started
    Notes(read_stats.warnings).bad_rows(read_stats.bad_rows, read_stats.first_bad_row)
    result = BenchResult(
        str(compiled.query.structure.span),
        read_stats.events,
        sum(1 for e in events if e.mask),  # as ``run`` counts them: the clock ticks are no events
        read_seconds,
        window_texts,
        list(engines),
    )
    result.query = compiled.text.strip()
    result.bad_rows, result.warnings = read_stats.bad_rows, list(read_stats.warnings)
    counts = variable_counts(compiled.pattern, events)
    for window in window_texts:
        pattern = patterns.get(window, compiled.pattern)
        order = pattern.rarest_first(counts)
        cells = []
        for name in engines:
            progress(f"{name}, {window}")
            cells.append(_cell(pattern, name, window, events, schema, read_stats.events, order, repeat))
        first = cells[0].match_hash
        result.cells += [replace(c, agrees=c.match_hash == first) for c in cells]
    return result


def read_events(compiled: Compiled, options: InputOptions) -> tuple[list[Event], Schema, Stats]:
    """The input's relevant events in memory, to replay to the engines; its schema; the
    reading's stats (rows, bad rows, warnings)."""
    stats = Stats()
    run = Run({compiled.path: compiled}, options, stats=stats)
    try:
        return list(run.source.events(run.prefilter, stats, run.typed)), run.schema, stats
    finally:
        run.close()


def _window_text(duration: a.Duration) -> str:
    from cepcli.query.printer import print_duration

    return print_duration(duration)


def with_window(query: a.Query, window: str, time_unit: int = 10**9) -> Pattern:
    """The query with its WITHIN replaced (``window`` as written: ``30min``, ``2 h``...)."""
    try:
        duration = parse_query(f"PATTERN A a WITHIN {window}").window
        return normalize(replace(query, window=duration), time_unit=time_unit)
    except QueryError as err:  # about the window alone: the query itself compiled already
        raise UsageError(f"--windows: {window!r} is not a window: {err.message}") from None


def variable_counts(pattern: Pattern, events: list[Event]) -> dict[int, int]:
    counts = {v.bit: 0 for v in pattern.variables}
    for e in events:
        for bit in counts:
            if e.mask >> bit & 1:
                counts[bit] += 1
    return counts


def run_once(
    pattern: Pattern, name: str, events: list[Event], schema: Schema, rows: int, order: tuple[str, ...]
) -> tuple[Stats, str]:
    """One run; the matches are hashed as they come (a sum of per-match hashes, so the
    order they come in does not matter and none is kept in memory)."""
    stats = Stats()
    digest = 0
    count = 0
    started = time.perf_counter()
    for match in run_pattern(pattern, name, iter(events), schema, stats, order if ENGINES[name].lazy else ()):
        digest = (
            digest + int.from_bytes(hashlib.sha256(repr(match.key).encode()).digest()[:8], "big")
        ) % _MOD
        count += 1
    stats.seconds = time.perf_counter() - started
    stats.events = rows
    stats.matches = count
    return stats, f"{digest:016x}"


def _cell(
    pattern: Pattern,
    name: str,
    window: str,
    events: list[Event],
    schema: Schema,
    rows: int,
    order: tuple[str, ...],
    repeat: int,
) -> Cell:
    run_once(pattern, name, events, schema, rows, order)  # warm-up: the caches a first run fills
    tracemalloc.start()  # then the peak of a run of its own (the first cell paid for them otherwise)
    run_once(pattern, name, events, schema, rows, order)
    peak = tracemalloc.get_traced_memory()[1] / (1024 * 1024)
    tracemalloc.stop()
    runs = [run_once(pattern, name, events, schema, rows, order) for _ in range(max(1, repeat))]
    stats = [s for s, _ in runs]
    per = max(1, rows)  # per input event, like the throughput
    return Cell(
        engine=name,
        window=window,
        events_per_second=statistics.median(s.events_per_second for s in stats),
        seconds=statistics.median(s.seconds for s in stats),
        peak_instances=int(statistics.median(s.peak_instances for s in stats)),
        peak_buffered_events=int(statistics.median(s.peak_buffered_events for s in stats)),
        predicate_evaluations_per_event=statistics.median(s.predicate_evaluations for s in stats) / per,
        memory_operations_per_event=statistics.median(s.memory_operations for s in stats) / per,
        peak_memory_mb=round(peak, 3),
        matches=stats[0].matches,
        match_hash=runs[0][1],
    )
