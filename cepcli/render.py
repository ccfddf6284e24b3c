"""Everything a user sees: match writers (table, jsonl, csv), the stats panel and the
progress bar. rich appears only here, always with an injected ``Console``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Protocol

from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from cepcli.bench import BenchResult
from cepcli.events import Event, Schema, events_of
from cepcli.output import cell_text, event_object, flat_columns, flat_row, ordered, variables
from cepcli.plan.pattern import Pattern
from cepcli.runtime.matches import Binding, Match
from cepcli.runtime.stats import Stats
from cepcli.sources.times import iso_text

TABLE_ROWS = 20


class MatchWriter(Protocol):
    written: int  # matches written so far

    def write(self, match: Match) -> None: ...

    def close(self) -> None: ...


class JsonlWriter:
    """One JSON object per line and match, flushed as it is written."""

    def __init__(self, stream: IO[str], schema: Schema, pattern: Pattern) -> None:
        self.stream, self.schema, self.names = stream, schema, variables(pattern)
        self.written = 0

    def write(self, match: Match) -> None:
        parts = []
        for name, b in ordered(match, self.names):
            if isinstance(b, tuple):
                value = "[" + ",".join(self._event(e) for e in b) + "]"
            else:
                value = self._event(b)
            parts.append(f"{json.dumps(name)}:{value}")
        text = "{" + ",".join(parts) + "}\n"
        self.written += 1  # counted first: an interrupted write still leaves the whole line buffered
        self.stream.write(text)
        self.stream.flush()

    def _event(self, event: Event) -> str:
        """An event's JSON, made once: an event is often part of many matches."""
        text = event.text
        if text is None:
            text = event.text = json.dumps(
                event_object(event, self.schema), separators=(",", ":"), default=str, allow_nan=False
            )
        return text

    def close(self) -> None:
        self.stream.flush()


class CsvWriter:
    """One line per match: for each variable ``v``, ``v._row`` and ``v.<column>``.
    A Kleene variable's values are joined with ``;`` in row order; a variable that
    the match's OR branch does not bind is left empty."""

    def __init__(self, stream: IO[str], schema: Schema, pattern: Pattern) -> None:
        self.stream, self.schema, self.pattern = stream, schema, pattern
        self.written = 0
        self.writer = csv.writer(stream, lineterminator="\n")
        self.writer.writerow(flat_columns(schema, pattern))

    def write(self, match: Match) -> None:
        line = flat_row(match, self.schema, self.pattern)
        self.written += 1
        self.writer.writerow(line)
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


class TableWriter:
    """A rich table of the first matches and the total, printed at the end."""

    def __init__(self, console: Console, schema: Schema, pattern: Pattern, rows: int = TABLE_ROWS) -> None:
        self.console, self.schema, self.names = console, schema, variables(pattern)
        self.rows = rows
        self.first: list[Match] = []
        self.total = 0
        self.written = 0

    def write(self, match: Match) -> None:
        self.total += 1
        self.written = self.total
        if len(self.first) < self.rows:
            self.first.append(match)

    def close(self) -> None:
        table = Table(title=None, show_lines=False, header_style="bold")
        table.add_column("#", justify="right", style="dim")
        for name in self.names:
            table.add_column(name)
        for n, match in enumerate(self.first, 1):
            bound = dict(match.bindings)
            table.add_row(str(n), *(self._cell(bound.get(name)) for name in self.names))
        if self.first:
            self.console.print(table)
        shown = f" (first {len(self.first)} shown)" if self.total > len(self.first) else ""
        self.console.print(f"{self.total} matches{shown}")

    def _cell(self, binding: Binding | None) -> str:
        return "\n".join(f"row {e.row}  {_time_text(e, self.schema)}" for e in events_of(binding))


def _time_text(event: Event, schema: Schema) -> str:
    value = event.values[schema.index(schema.time_col)]
    return (
        cell_text(value, schema.kinds[schema.index(schema.time_col)])
        if value is not None
        else iso_text(event.ts)
    )


def writer_for(fmt: str, stream: IO[str], console: Console, schema: Schema, pattern: Pattern) -> MatchWriter:
    if fmt == "jsonl":
        return JsonlWriter(stream, schema, pattern)
    if fmt == "csv":
        return CsvWriter(stream, schema, pattern)
    return TableWriter(console, schema, pattern)


def stats_panel(stats: Stats) -> Panel:
    """The stats panel shown on standard error after a run."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    rows = [
        ("engine", stats.engine),
        ("order", (", ".join(stats.order) or "-") + _order_note(stats)),
        ("events", f"{stats.events:,}"),
        *([("bad rows skipped", f"{stats.bad_rows:,}")] if stats.bad_rows else []),
        ("relevant events", f"{stats.relevant_events:,}"),
        ("matches", f"{stats.matches:,}"),
        ("time", f"{stats.seconds:.3f} s"),
        ("events/s", f"{stats.events_per_second:,.0f}"),
        ("peak instances", f"{stats.peak_instances:,}"),
        ("peak buffered events", f"{stats.peak_buffered_events:,}"),
        ("predicate evaluations", f"{stats.predicate_evaluations:,}"),
        ("memory operations", f"{stats.memory_operations:,}"),
        ("peak RSS", f"{stats.peak_rss_mb:,.1f} MB"),
    ]
    for key, value in rows:
        grid.add_row(key, value)
    return Panel(grid, title="cepcli stats", expand=False)


def _order_note(stats: Stats) -> str:
    source = stats.extra.get("order_source")
    return f" ({source})" if source and stats.engine != "eager" else ""


@contextmanager
def progress_bar(console: Console, total: int | None, enabled: bool) -> Iterator[Any]:
    """A bytes-read progress bar on standard error, or a no-op updater."""
    if not enabled or not total:
        yield lambda done: None
        return
    progress = Progress(
        TextColumn("[bold]reading"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    with progress:
        task = progress.add_task("read", total=total)
        yield lambda done: progress.update(task, completed=done)


def bench_table(result: BenchResult) -> Table:
    """The engines side by side per window: throughput relative to the first engine listed,
    and how many times fewer peak instances than it."""
    first_name = result.engines[0]
    table = Table(
        title=f"cepcli bench: {result.events:,} events ({result.relevant_events:,} relevant)",
        caption=f"vs {first_name}: throughput relative to it; fewer: its peak instances / these",
        header_style="bold",
    )
    for column in (
        "window",
        "engine",
        "events/s",
        f"vs {first_name}",
        "peak instances",
        "fewer",
        "peak buffered",
        "evals/event",
        "memops/event",
        "peak MB",
        "matches",
        "agree",
    ):
        table.add_column(column, justify="left" if column in ("window", "engine", "agree") else "right")
    for window in result.windows:
        cells = [c for c in result.cells if c.window == window]
        first = cells[0]
        for c in cells:
            speed = c.events_per_second / first.events_per_second if first.events_per_second else 0.0
            fewer = first.peak_instances / c.peak_instances if c.peak_instances else float("inf")
            table.add_row(
                window,
                c.engine,
                f"{c.events_per_second:,.0f}",
                f"{speed:.1f}x",
                f"{c.peak_instances:,}",
                f"{fewer:,.1f}x",
                f"{c.peak_buffered_events:,}",
                f"{c.predicate_evaluations_per_event:.3f}",
                f"{c.memory_operations_per_event:.3f}",
                f"{c.peak_memory_mb:.1f}",
                f"{c.matches:,}",
                "yes" if c.agrees else "[bold red]DIFFERENT[/]",
            )
    return table
