"""``cepcli run``: the queries prepared, delivered (``cepcli.delivery``), the stats shown."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from typing import Any

import click

from cepcli.cli.console import Stderr, out, progress, warn_line
from cepcli.cli.options import (
    Choice,
    Command,
    bad_row_option,
    engine_options,
    input_options,
    order_of,
    prepared_queries,
    queries_argument,
    streams,
    waits_on_a_terminal,
)
from cepcli.signals import exit_code


@click.command("run", cls=Command)
@queries_argument
@input_options
@bad_row_option
@engine_options
@click.option(
    "--format",
    "fmt",
    type=Choice(["table", "jsonl", "csv", "parquet"]),
    default=None,
    help="How matches are written [default: table; on a stream, jsonl; with --spark --output DIR,"
    " jsonl]; parquet: one file in the typed result schema, written at the end (with --output FILE or"
    " a redirected standard output).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(writable=True),
    default=None,
    help="Write matches to this file instead of standard output (with --spark: a directory, written"
    " by the executors).",
)
@click.option(
    "--show",
    default=None,
    metavar="COL,...",
    help="The columns each event has in every format, beside its row (the table: and its time)"
    " [default: jsonl, csv and parquet all; the table those the WHERE clause reads of its variable,"
    " and the [attr] columns].",
)
@click.option(
    "--stats-json",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the run's statistics as one JSON object to this file.",
)
@click.option("--max-matches", type=click.IntRange(min=1), default=None, help="Stop after this many matches.")
@click.option(
    "--stats-every",
    type=click.IntRange(min=1),
    default=None,
    help="With --stats-json: also record the counters every N relevant events ('series').",
)
@click.option(
    "--max-subsets",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Warn when one Kleene candidate set allows more subsets than this.",
)
@click.option(
    "--max-instances",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Stop with an error when more partial matches (instances) are alive at once than this.",
)
@click.option("--spark", "use_spark", is_flag=True, help="Run as a parallel PySpark job (the same matches).")
@click.option(
    "--master",
    default=None,
    help="Spark master URL, with --spark [default: spark-submit's or Spark's configuration, else local[*]].",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    help="Time shards, with --spark [default: twice Spark's default parallelism].",
)
@click.option(
    "--table",
    default=None,
    metavar="NAME",
    help="With --spark: read this Spark table or view instead of a path.",
)
@click.option(
    "--stream",
    "spark_stream",
    is_flag=True,
    help="With --spark: read the files arriving in the --input directory as a Structured Streaming"
    " query, until Ctrl-C, each match written to --output DIR once it is decided.",
)
@click.option(
    "--checkpoint",
    default=None,
    metavar="DIR",
    help="With --stream: where Spark keeps the stream's progress and state; a query restarted"
    " with it goes on where it stopped, no match lost or repeated.",
)
@click.option(
    "--available-now",
    is_flag=True,
    help="With --stream: process the files there now, then stop.",
)
@click.option("--verbose", is_flag=True, help="With --spark: show Spark's own log on standard error.")
@click.option("--quiet", "-q", is_flag=True, help="No stats panel and no progress bar.")
def run_command(
    query: tuple[str, ...],
    expression: tuple[str, ...],
    engine: str,
    order: str | None,
    fmt: str,
    output: str | None,
    show: str | None,
    stats_json: str | None,
    max_matches: int | None,
    stats_every: int | None,
    max_subsets: int,
    max_instances: int,
    use_spark: bool,
    master: str | None,
    partitions: int | None,
    table: str | None,
    spark_stream: bool,
    checkpoint: str | None,
    available_now: bool,
    verbose: bool,
    quiet: bool,
    **kw: Any,
) -> None:
    """Find every match of QUERY (a .sase file, or -e TEXT) in the input. Several QUERY
    files (or a directory of them, or several -e) are evaluated over one reading of the
    input, each match saying which query found it.

    \b
    Examples:
      cepcli run patterns/stocks_seq.sase
      cepcli run q.sase --input ticks.csv --format jsonl --output matches.jsonl
      cepcli run rules/ --input ticks.csv --format jsonl
      cepcli run -e "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5 min" -i events.csv.gz
      tail -f events.csv | cepcli run q.sase --input - --format jsonl
      cepcli run q.sase --spark --output matches/ --format parquet
      cepcli run q.sase -i incoming/ --spark --stream --output matches/ --checkpoint ck/
    """
    from cepcli.delivery import Delivery
    from cepcli.prepare import RunOptions
    from cepcli.runtime.stats import Stats
    from cepcli.writing import check_outputs, close_quietly, open_output, standard_output, write_json

    err = Stderr()  # rich is imported only to print to standard error
    prepared = prepared_queries(query, expression, kw)
    inputs = prepared.options
    show_columns = tuple(c.strip() for c in show.split(",") if c.strip()) if show is not None else None
    options = RunOptions(engine, order_of(order), max_matches, stats_every or 0, max_instances, max_subsets)
    if table is not None and not use_spark:
        raise click.UsageError("--table names a Spark table: with --spark")
    if (spark_stream or checkpoint or available_now) and not use_spark:
        raise click.UsageError("--stream, --checkpoint and --available-now run a Spark stream: with --spark")
    if (checkpoint or available_now) and not spark_stream:
        raise click.UsageError("--checkpoint and --available-now are a stream's: with --stream")
    directory = output if use_spark else None  # with --spark the executors write --output
    if fmt is None and directory is None and not use_spark and streams(inputs.path):
        fmt = "jsonl"  # the table waits for the end: on a pipe each match is written as found
        if not quiet:
            err.console.print(
                "[dim]the input is a stream: matches are written as jsonl lines as they are found"
                " (--format table shows them at its end)[/]",
                soft_wrap=True,
            )
    fmt = fmt or ("jsonl" if directory else "table")
    if directory is not None and fmt == "table":
        raise click.UsageError("--spark --output DIR writes jsonl, csv or parquet: choose one with --format")
    to_file = output is not None and directory is None
    check_outputs(output if to_file else None, directory, stats_json)
    if not use_spark and table is None and waits_on_a_terminal(inputs.path):
        err.console.print(
            "[dim]reading events from standard input, a terminal: type or paste CSV rows (a header"
            " first), then Ctrl-D; or give the input with --input FILE[/]",
            soft_wrap=True,
        )
    stream = open_output(output) if output is not None and to_file else standard_output()
    name = output if output is not None and to_file else "<stdout>"
    spark = None
    if use_spark:
        from cepcli.spark import SparkOptions

        spark = SparkOptions(
            master,
            partitions,
            directory,
            fmt,
            verbose,
            lines=fmt == "jsonl" and show is None,
            show=show_columns,
            table=table,
            stream=spark_stream,
            checkpoint=checkpoint,
            available_now=available_now,
        )

    def table_console(to: Any) -> Any:  # in a file or a pipe as wide as it needs to be (a terminal: its own)
        return out(file=to, soft_wrap=False, width=None if to.isatty() else 1_000)

    def warn(message: str) -> None:
        warn_line(err.console, message)

    delivery = Delivery(prepared, fmt, stream, name, show_columns, table_console)
    live = Stats()

    def watched(
        total: int | None, written: Callable[[], int]
    ) -> AbstractContextManager[Callable[[int], None]]:
        return progress(err, total, not quiet, live, written)

    try:
        stats = delivery.run(options, spark, live, warn, watched)
    except KeyboardInterrupt as stop:
        if use_spark:
            err.console.print(
                "[yellow]interrupted:[/] the Spark job was cancelled; what was written is complete"
            )
        else:
            err.console.print("[yellow]interrupted:[/] the matches written so far are complete")
        if stats_json:
            write_json(stats_json, live.as_dict())
        if not quiet:
            err.panel(live)
        click.get_current_context().exit(exit_code(stop))
    except BrokenPipeError:  # the reader of the output left (| head -1): exit 0, stats as they were
        if stats_json:
            write_json(stats_json, live.as_dict())
        raise
    except Exception:
        if to_file and fmt == "parquet" and output is not None:  # a Parquet file is whole or absent
            close_quietly(stream)
            with suppress(OSError):
                os.remove(output)
        raise
    finally:
        if to_file:
            close_quietly(stream)
    if stats.extra.get("stopped_at_max_matches"):
        err.console.print(f"[yellow]warning:[/] stopped after --max-matches {max_matches} matches")
    if stats_json:
        write_json(stats_json, stats.as_dict())
    if not quiet:
        err.panel(stats)
