"""``cepcli bench``: the engines compared on one query."""

from __future__ import annotations

import sys
from typing import Any

import click

from cepcli.cli.console import out, warn_line
from cepcli.cli.options import (
    Command,
    bad_row_option,
    input_options,
    one_query,
    prepared_queries,
    query_argument,
)
from cepcli.errors import EngineDisagreement


@click.command("bench", cls=Command)
@query_argument
@input_options
@bad_row_option
@click.option("--engines", default="eager,chain,tree,adaptive", show_default=True, help="Engines to compare.")
@click.option("--windows", default=None, help="Windows to try instead of the query's: 30min,1h,...")
@click.option(
    "--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Timed runs per cell."
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write every number as JSON.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Draw throughput and peak instances against the window (needs cepcli[plot]).",
)
@click.option("--wide", is_flag=True, help="Every counter, not only what fits 80 columns.")
def bench_command(
    query: tuple[str, ...],
    expression: tuple[str, ...],
    engines: str,
    windows: str | None,
    repeat: int,
    json_path: str | None,
    plot_path: str | None,
    wide: bool,
    **kw: Any,
) -> None:
    """Compare engines on QUERY: throughput, instances, work and memory, per window.

    The input is read once and replayed from memory; each cell is the median of
    --repeat runs after a warm-up. Engines must agree on the matches, or the command
    fails (exit code 1).

    \b
    Example:
      cepcli bench patterns/stocks_seq.sase --engines eager,chain,tree --windows 5min,10min,30min
      cepcli bench q.sase --input flights.parquet --repeat 5 --json bench.json --plot bench.png
    """
    from dataclasses import asdict

    from rich.console import Console

    from cepcli.bench import bench
    from cepcli.render import bench_table
    from cepcli.writing import check_file, write_json

    names = [e.strip() for e in engines.split(",") if e.strip()]
    spans = [w.strip() for w in windows.split(",")] if windows else []
    if plot_path:
        from cepcli.plot import require_matplotlib

        require_matplotlib()
    prepared = prepared_queries(query, expression, kw)
    compiled, options = one_query(prepared, "bench"), prepared.options
    for path, option in ((json_path, "--json"), (plot_path, "--plot")):
        if path:
            check_file(path, option)
    err = Console(stderr=True)
    with err.status("benchmarking") as status:
        result = bench(
            compiled, options, names, spans, repeat, lambda label: status.update(f"running {label}")
        )
    for message in result.warnings:
        warn_line(err, message)
    shown = out(highlight=False, width=None if sys.stdout.isatty() else (200 if wide else 80))
    shown.print(f"input read once in {result.read_seconds:.2f} s; then replayed from memory")
    shown.print(bench_table(result, wide))
    if json_path:
        write_json(json_path, asdict(result))
    if plot_path:
        from cepcli.plot import plot_bench

        plot_bench(result, plot_path)
    if not result.agree:
        raise EngineDisagreement("the engines found different matches (see the 'ok' column)")
