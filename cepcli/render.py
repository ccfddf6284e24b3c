"""What a user sees drawn by rich: the table of matches, the stats panel, the progress
bar and bench's table. rich appears only here (and in the cli's consoles), always with an
injected ``Console``; the jsonl and csv writers are ``cepcli.writers``'."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from cepcli.bench import BenchResult
from cepcli.clock import iso_text
from cepcli.events import Event, Kind, Schema, events_of
from cepcli.output import cell_text, variables
from cepcli.plan.pattern import Pattern
from cepcli.runtime.matches import Binding, Match
from cepcli.runtime.stats import Stats

TABLE_ROWS = 20


class _Table:
    """One query's table: its first matches and its total."""

    def __init__(
        self, console: Console, schema: Schema, pattern: Pattern, show: Mapping[str, Sequence[str]], rows: int
    ) -> None:
        self.console, self.schema, self.names = console, schema, variables(pattern)
        self.show = {name: [schema.index(c) for c in show.get(name, ())] for name in self.names}
        self.rows = rows
        self.first: list[Match] = []
        self.total = 0

    def add(self, match: Match) -> None:
        self.total += 1
        if len(self.first) < self.rows:
            self.first.append(match)

    def print(self) -> None:
        table = Table(title=None, show_lines=False, header_style="bold")
        table.add_column("#", justify="right", style="dim")
        for name in self.names:
            table.add_column(name)
        for n, match in enumerate(self.first, 1):
            bound = dict(match.bindings)
            table.add_row(str(n), *(self._cell(name, bound.get(name)) for name in self.names))
        if self.first:
            self.console.print(table)
        shown = f" (first {len(self.first)} shown)" if self.total > len(self.first) else ""
        self.console.print(f"{self.total:,} match{'es' if self.total != 1 else ''}{shown}")

    def _cell(self, name: str, binding: Binding | None) -> str:
        lines = []
        schema = self.schema
        for e in events_of(binding):
            shown = "  ".join(
                f"{schema.columns[i]}={cell_text(e.values[i], schema.kind_at(i), schema.nulls) or '-'}"
                for i in self.show[name]
            )
            lines.append(f"row {e.row}  {_time_text(e, self.schema)}" + (f"  {shown}" if shown else ""))
        return "\n".join(lines)


class TableWriter:
    """A rich table of each query's first matches and its total, printed at the end (in a
    named run, each under its query's name, in the queries' order). Each event shows its
    row, its time and ``show[query][variable]``: the columns to show beside them."""

    def __init__(
        self,
        console: Console,
        schema: Schema,
        patterns: Mapping[str, Pattern],
        show: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        named: bool = False,
        rows: int = TABLE_ROWS,
    ) -> None:
        self.console, self.named = console, named
        self.tables = {
            q: _Table(console, schema, p, (show or {}).get(q, {}), rows) for q, p in patterns.items()
        }
        self.written = 0

    def write(self, named: tuple[str, Match]) -> int:
        self.written += 1
        self.tables[named[0]].add(named[1])
        return 0  # (printed when the run ends)

    def close(self) -> None:
        for query, table in self.tables.items():
            if self.named:
                self.console.print(f"[bold]{query}[/]")
            table.print()


def _time_text(event: Event, schema: Schema) -> str:
    """A number as written; any other time (text dates, native timestamps) as ISO-8601 UTC."""
    at = schema.index(schema.time_col)
    value = event.values[at]
    if isinstance(value, int | float) or (
        isinstance(value, str) and schema.kind_at(at) in (Kind.INT, Kind.FLOAT)
    ):
        return cell_text(value, schema.kind_at(at))
    return iso_text(event.ts)


def stats_panel(stats: Stats) -> Panel:
    """The stats panel shown on standard error after a run."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    ran = _adaptive_ran(stats)
    rows = [
        ("engine", stats.engine),
        *([("ran", ran)] if ran else [("order", (", ".join(stats.order) or "-") + _order_note(stats))]),
        ("events", f"{stats.events:,}"),
        *([("bad rows skipped", f"{stats.bad_rows:,}")] if stats.bad_rows else []),
        ("relevant events", f"{stats.relevant_events:,}"),
        ("matches", f"{stats.matches:,}"),
        ("time", f"{stats.seconds:.3f} s"),
        ("events/s", f"{stats.events_per_second:,.0f}"),
        ("peak instances", f"{stats.peak_instances:,}"),
        ("peak buffered events", f"{stats.peak_buffered_events:,}"),
        ("predicate evaluations", f"{stats.predicate_evaluations:,}"),
        (
            "prefilter evaluations",
            f"{stats.prefilter_evaluations:,}",
        ),  # (the rows' single-variable conditions)
        ("memory operations", f"{stats.memory_operations:,}"),
        ("peak RSS", f"{stats.peak_rss_mb:,.1f} MB"),
    ]
    for key, value in rows:
        grid.add_row(key, value)
    return Panel(grid, title="cepcli stats", expand=False)


def _adaptive_ran(stats: Stats) -> str:
    """What the adaptive engine ran: segments by engine, and the runtimes it started
    (``--stats-json`` has when each change was made, and at what ratio)."""
    if stats.extra.get("adaptive_ran") == "columnar":
        steps = stats.extra.get("columnar_steps")
        if isinstance(steps, int):
            return f"columnar, in {steps:,} step{'s' if steps != 1 else ''} (set-at-a-time)"
        return "columnar (the whole input, set-at-a-time)"
    segments = stats.extra.get("adaptive_segments")
    if not isinstance(segments, dict):
        return ""
    counts = ", ".join(f"{name} {n:,}" for name, n in segments.items() if n)
    return f"segments: {counts or '-'}; runtimes: {stats.extra.get('adaptive_runtimes', 0):,}"


def _order_note(stats: Stats) -> str:
    source = stats.extra.get("order_source")
    return f" ({source})" if source and stats.engine != "eager" else ""


class _Counts(ProgressColumn):
    """The rows read, the events evaluated and the matches so far, read from the live
    counters each time rich redraws the bar (ten times a second): the run never pays for an
    update per event or per match."""

    def __init__(self, stats: Stats, matches: Callable[[], int]) -> None:
        super().__init__()
        self.stats, self.matches = stats, matches

    def render(self, task: Task) -> Text:
        reading = task.description == "reading"
        counted = (
            f"{self.stats.events:,} rows" if reading else f"{self.stats.relevant_events:,} events evaluated"
        )
        found = self.matches()
        return Text(f"{counted}  {found:,} match{'es' if found != 1 else ''}", style="progress.download")


@contextmanager
def progress_bar(
    console: Console, total: int | None, stats: Stats, matches: Callable[[], int]
) -> Iterator[Callable[[int], None]]:
    """Progress on standard error (``cli._progress`` decides whether to draw it). With a
    known size (a file): a bar of the bytes read, then "matching" once the input is read
    (with --sort, or while the last events are evaluated); without (a pipe): the rows read so
    far. The counts of rows, events evaluated and matches are live in both."""
    sized = [BarColumn(), DownloadColumn(), TimeRemainingColumn()] if total else [SpinnerColumn()]
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        *sized,
        _Counts(stats, matches),
        console=console,
        transient=True,
    )
    with progress:
        task = progress.add_task("reading", total=total or None)

        def advance(done: int) -> None:
            progress.update(
                task, completed=done, description="matching" if total and done >= total else "reading"
            )

        yield advance


def bench_table(result: BenchResult, wide: bool = False) -> Table:
    """The engines side by side per window, led by what ``run`` would measure: the input's
    reading plus the engine (``run s``, and the events per second of that), then the engine
    alone (the events replayed from memory), the peak instances, memory and matches; in
    80 columns. ``wide``: every counter as well (relative throughput and instances, buffered
    events, evaluations and memory operations per event)."""
    first_name = result.engines[0]
    caption = (
        "run s: reading the input once plus the engine, as `cepcli run` spends them (without"
        " writing); ev/s: the input's rows over that; eng ev/s: over the engine's own time,"
        " the rows replayed from memory; inst: peak instances"
    )
    if wide:
        caption += f"; vs {first_name}: engine throughput relative to it; fewer: its peak instances / these"
    table = Table(
        title=f"cepcli bench: {result.events:,} events ({result.relevant_events:,} relevant)",
        caption=caption,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    columns = ["window", "engine", "run s", "ev/s", "eng ev/s", "inst", "MB", "matches", "ok"]
    if wide:
        columns[6:6] = [f"vs {first_name}", "fewer", "peak buffered", "evals/event", "memops/event"]
    for column in columns:
        left = column in ("window", "engine", "ok")
        table.add_column(column, justify="left" if left else "right", no_wrap=column in ("engine", "matches"))
    for window in result.windows:
        cells = [c for c in result.cells if c.window == window]
        first = cells[0]
        for c in cells:
            run_seconds = result.read_seconds + c.seconds
            row = [
                window,
                c.engine,
                f"{run_seconds:.3f}" if run_seconds < 1 else f"{run_seconds:.2f}",
                _compact(result.events / run_seconds if run_seconds else 0.0),
                _compact(c.events_per_second),
                f"{c.peak_instances:,}",
                f"{c.peak_memory_mb:,.1f}" if c.peak_memory_mb >= 10 else f"{c.peak_memory_mb:.2f}",
                f"{c.matches:,}",
                "yes" if c.agrees else "[bold red]NO[/]",
            ]
            if wide:
                speed = c.events_per_second / first.events_per_second if first.events_per_second else 0.0
                fewer = first.peak_instances / c.peak_instances if c.peak_instances else float("inf")
                row[6:6] = [
                    f"{speed:.1f}x",
                    f"{fewer:,.1f}x",
                    f"{c.peak_buffered_events:,}",
                    f"{c.predicate_evaluations_per_event:.3f}",
                    f"{c.memory_operations_per_event:.3f}",
                ]
            table.add_row(*row)
    return table


def _compact(rate: float) -> str:
    """A rate in about three significant digits: 153k, 72.1M, 4.05M."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if rate >= size:
            value = rate / size
            return (
                f"{value:.2f}{unit}"
                if value < 10
                else f"{value:.1f}{unit}"
                if value < 100
                else f"{value:.0f}{unit}"
            )
    return f"{rate:.0f}"
