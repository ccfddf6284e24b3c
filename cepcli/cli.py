"""The command line: thin click commands over ``cepcli.job``; errors become messages
and exit codes in exactly one place, ``_CepGroup.invoke``.

Only click and the option constants are imported at the top: a command imports what
it runs (the engines, pyarrow, rich), so ``cepcli --version`` and ``--help`` start quickly.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from cepcli import __version__
from cepcli.clock import TIME_UNITS
from cepcli.engine_names import DEFAULT_ENGINE, ENGINE_NAMES
from cepcli.errors import CepError, EngineDisagreement, OutputError
from cepcli.query.options import FORMATS, ON_BAD_ROW
from cepcli.signals import WholeLines, exit_code
from cepcli.sources.options import CHUNK_ROWS, MAX_ROW_BYTES, InputOptions, from_text

if TYPE_CHECKING:
    from rich.console import Console

    from cepcli.events import Schema
    from cepcli.job import Compiled
    from cepcli.plan.pattern import Pattern
    from cepcli.runtime.stats import Stats
    from cepcli.writers import MatchWriter


def _input_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that say how to read the input (shared by run and check)."""
    options = [
        click.option(
            "--input",
            "-i",
            "input_path",
            metavar="PATH|-",
            help="CSV (.gz and other compressions too), Parquet or JSON lines file, or - for standard"
            " input. Default: the query's FROM.",
        ),
        click.option(
            "--input-format",
            type=click.Choice(FORMATS),
            default=None,
            help="The input's format [default: from the file name (.parquet, .jsonl/.ndjson), else csv].",
        ),
        click.option("--type-col", default="type", show_default=True, help="Column with the event type."),
        click.option("--time-col", default="ts", show_default=True, help="Column with the timestamp."),
        click.option(
            "--time-unit",
            type=click.Choice(TIME_UNITS),
            default=None,
            help="The unit of numeric timestamps (and of a bare WITHIN number) [default: s].",
        ),
        click.option(
            "--time-format",
            default=None,
            help="strptime format of the time column, e.g. %Y%m%d%H%M; it must read the whole value"
            " (default: numbers or ISO-8601).",
        ),
        click.option(
            "--null-values",
            default=None,
            metavar="V1,V2,...",
            help="The markers of a missing value in numeric, boolean and time columns [default: NA,"
            " N/A, NaN, null, NULL, None and the others pandas and pyarrow use; an empty cell always].",
        ),
        click.option(
            "--schema",
            "schema_text",
            default=None,
            metavar="COL:KIND,...",
            help="Column kinds (int, float, bool, time, str) instead of those read from the first rows.",
        ),
        click.option("--no-header", is_flag=True, help="The input has no header row (use --columns)."),
        click.option("--columns", default=None, help="Column names of a headerless input: c1,c2,..."),
        click.option("--sort", is_flag=True, help="Sort the input by time (stable) before evaluating."),
        click.option(
            "--max-delay",
            default=None,
            metavar="DURATION",
            help="Rows may come up to this much later than the latest time read (5min, 30s; a"
            " bare number in time units): they are evaluated in time order; a later one is a bad row.",
        ),
        click.option(
            "--chunk-rows",
            type=click.IntRange(min=1),
            default=CHUNK_ROWS,
            show_default=True,
            help="Rows read and prefiltered at a time (memory vs. speed).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _bad_row_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--on-bad-row and --max-row-bytes (shared by run and bench)."""
    command = click.option(
        "--max-row-bytes",
        type=click.IntRange(min=1),
        default=None,
        help=f"A longer row (record) is a bad row, read past without being held in memory"
        f" [default: {MAX_ROW_BYTES} (16 MiB)].",
    )(command)
    return click.option(
        "--on-bad-row",
        type=click.Choice(ON_BAD_ROW),
        default="fail",
        show_default=True,
        help="A bad row (wrong number of fields, unreadable or missing time, text in a numeric"
        " column the query reads, time going back without --sort): stop with an error naming it,"
        " or skip it, count it (bad_rows) and warn once.",
    )(command)


def _engine_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--engine and --order (shared by run and explain)."""
    command = click.option(
        "--order", default=None, help="Frequency order for chain engines: v1,v2,... rarest first."
    )(command)
    return click.option(
        "--engine",
        type=click.Choice(ENGINE_NAMES),
        default=DEFAULT_ENGINE,
        show_default=True,
        help="adaptive: eager, the chain or the tree, chosen per time segment from the rates it"
        " measures (the default); tree: the lazy Tree NFA, it picks the rarest variable as it goes;"
        " chain: the lazy Chain NFA in a frequency order (--order, or measured); first-chance and"
        " post-processing: chain, checking negations as early as possible or after a match;"
        " eager: the classic NFA, every partial match on arrival; columnar: the lazy plan"
        " set-at-a-time over a whole bounded input (Kleene patterns and pipes run the tree)"
        " (see the README's table).",
    )(command)


def _query_argument(command: Callable[..., Any]) -> Callable[..., Any]:
    """QUERY (a .sase file) or -e TEXT (shared by every command)."""
    command = click.option(
        "--expression",
        "-e",
        metavar="TEXT",
        default=None,
        help="The query's text instead of a QUERY file: -e 'PATTERN SEQ(A a, B b) WITHIN 5 min'.",
    )(command)
    return click.argument("query", required=False, type=click.Path(dir_okay=False))(command)


def _queries_argument(command: Callable[..., Any]) -> Callable[..., Any]:
    """QUERY... (.sase files, or directories of them) or -e TEXT, each as often as wanted:
    several queries are evaluated over one reading of the input (``cepcli.many``)."""
    command = click.option(
        "--expression",
        "-e",
        metavar="TEXT",
        multiple=True,
        help="The query's text instead of a QUERY file: -e 'PATTERN SEQ(A a, B b) WITHIN 5 min'"
        " (several: each is a query, named e1, e2, ...).",
    )(command)
    return click.argument("query", nargs=-1, type=click.Path())(command)


def _named(
    queries: tuple[str, ...], expressions: tuple[str, ...]
) -> list[tuple[str, str | None, str | None]]:
    """Each query's name (its file's stem; ``e1``, ``e2``, ... for -e), file and text: a
    directory gives its ``.sase`` files in name order."""
    if queries and expressions:
        raise click.UsageError("give QUERY files or -e TEXT, not both")
    if expressions:
        return [(f"e{i}", None, text) for i, text in enumerate(expressions, 1)]
    files: list[str] = []
    for path in queries:
        if Path(path).is_dir():
            found = sorted(str(p) for p in Path(path).glob("*.sase"))
            if not found:
                raise click.UsageError(f"{path}: a directory with no .sase query file")
            files += found
        else:
            files.append(path)
    named: list[tuple[str, str | None, str | None]] = [(Path(f).stem, f, None) for f in files]
    stems = [n for n, _, _ in named]
    twice = sorted({n for n in stems if stems.count(n) > 1})
    if twice and len(named) > 1:
        raise click.UsageError(f"two query files are named {twice[0]!r}: the matches say their query by name")
    return named


def _streams(compiled: Compiled, inputs: InputOptions) -> bool:
    """Is the input a stream (standard input or a FIFO that is no regular file: rows are
    evaluated as they arrive, and the run may never end)?"""
    import stat

    from cepcli.job import input_path

    try:
        path = input_path(compiled, inputs.path)
        mode = os.fstat(sys.stdin.fileno()).st_mode if path == "-" else os.stat(path).st_mode
    except (OSError, AttributeError, ValueError):  # no such file (said later), or a test's stdin
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _waits_on_a_terminal(compiled: Compiled, inputs: InputOptions) -> bool:
    """Will the run read standard input, and is that a terminal (a user waiting)?"""
    from cepcli.job import input_path

    try:
        return input_path(compiled, inputs.path) == "-" and sys.stdin.isatty()
    except (AttributeError, ValueError):  # no real standard input (a test's runner)
        return False


def _prepare(query: str | None, expression: str | None, kw: dict[str, Any]) -> tuple[Compiled, InputOptions]:
    """The query compiled, and the input options: the command line's, then the query's
    ``FROM ... WITH (...)`` for every option the command line left at its default."""
    from cepcli.job import compile_text, read_query, with_query_options
    from cepcli.query.reuse import parse as parse_query

    if query is not None and expression is not None:
        raise click.UsageError("give a QUERY file or -e TEXT, not both")
    if query is None and expression is None:
        raise click.UsageError("missing QUERY: a .sase file, or the query's text with -e 'PATTERN ...'")
    text, name = (expression, "<-e>") if expression is not None else (read_query(str(query)), str(query))
    ctx = click.get_current_context()
    given = {_FIELD.get(p, p) for p in kw if ctx.get_parameter_source(p) is not ParameterSource.DEFAULT}
    parsed = parse_query(text, name)  # once: the input options, then the pattern
    inputs = with_query_options(_input(kw), parsed, text, name, given)
    inputs.check()
    return compile_text(text, name, inputs.unit, parsed), inputs


# The InputOptions field each input flag sets, where the names differ.
FOUND_LINES = 1 << 16  # the columnar engine's matches made into lines at once, at most

_FIELD = {"input_format": "format", "no_header": "header", "schema_text": "schema", "input_path": "path"}


def _order(order: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in order.split(",")) if order else None


def _input(kw: dict[str, Any]) -> InputOptions:
    """The input options the command line gives (checked once the query's are added)."""
    columns = from_text("columns", kw["columns"]) if kw["columns"] else None
    nulls = from_text("null_values", kw["null_values"]) if kw["null_values"] is not None else None
    return InputOptions(
        path=kw["input_path"],
        format=kw["input_format"],
        type_col=kw["type_col"],
        time_col=kw["time_col"],
        time_format=kw["time_format"],
        time_unit=kw["time_unit"],
        header=not kw["no_header"],
        columns=columns,
        sort=kw["sort"],
        max_delay=kw["max_delay"],
        chunk_rows=kw["chunk_rows"],
        on_bad_row=kw.get("on_bad_row", "fail"),
        max_row_bytes=kw.get("max_row_bytes"),
        null_values=nulls,
        schema=from_text("schema", kw["schema_text"]) if kw["schema_text"] else (),
    )


# The sections of each command's --help: section -> the options in it (the rest: "Other").
_SECTIONS = {
    "Query": ("expression",),
    "Input (also in the query: FROM 'file' WITH (name = value, ...))": (
        "input_path",
        "input_format",
        "type_col",
        "time_col",
        "time_unit",
        "time_format",
        "null_values",
        "schema_text",
        "no_header",
        "columns",
        "sort",
        "max_delay",
        "chunk_rows",
        "on_bad_row",
        "max_row_bytes",
    ),
    "Engine": ("engine", "order", "engines", "windows", "repeat"),
    "Output": ("fmt", "output", "show", "stats_json", "stats_every", "json_path", "plot_path", "quiet"),
    "Limits": ("max_matches", "max_instances", "max_subsets"),
    "Spark": ("use_spark", "master", "partitions", "table", "verbose"),
}


class _Command(click.Command):
    """A command whose --help lists its options in sections (input, engine, output...)."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                section = next((s for s, names in _SECTIONS.items() if param.name in names), "Other")
                records.setdefault(section, []).append(record)
        for section in [*_SECTIONS, "Other"]:
            if section in records:
                with formatter.section(section):
                    formatter.write_dl(records[section])


class _CepGroup(click.Group):
    """Turns every ``CepError`` (and anything unexpected) into a message and an exit
    code, so that ``CliRunner`` sees what a user sees."""

    command_class = _Command

    def invoke(self, ctx: click.Context) -> Any:
        debug = os.environ.get("CEPCLI_DEBUG") == "1"
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except CepError as err:
            if debug:
                traceback.print_exc()
            _error(err.render())
            ctx.exit(err.exit_code)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except KeyboardInterrupt:
            raise
        except Exception as err:
            if debug:
                traceback.print_exc()
            _error(f"internal error: {type(err).__name__}: {err} (set CEPCLI_DEBUG=1 for a traceback)")
            ctx.exit(1)


@click.group(cls=_CepGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="cepcli")
def cli() -> None:
    """cepcli: find complex event patterns (SASE+) in event streams (CSV, Parquet, JSON lines).

    \b
    Example:
      cepcli run patterns/stocks_seq.sase --format jsonl > matches.jsonl
    """


@cli.command("run")
@_queries_argument
@_input_options
@_bad_row_option
@_engine_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "csv", "parquet"]),
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
    """
    from cepcli.job import Job, RunOptions
    from cepcli.notes import Notes
    from cepcli.runtime.stats import Stats
    from cepcli.writers import JsonlWriter, shown_columns, writer_for
    from cepcli.writing import (
        LastMatch,
        check_outputs,
        close_quietly,
        flush_quietly,
        open_output,
        standard_output,
        write_ascii,
        write_error,
        write_json,
        written_to,
    )

    err = _Stderr()  # rich is imported only to print to standard error
    named = _named(query, expression)
    show_columns = tuple(c.strip() for c in show.split(",") if c.strip()) if show is not None else None
    many: list[tuple[str, Compiled]] | None = None
    if len(named) <= 1:
        _, one_file, one_text = named[0] if named else ("", None, None)
        compiled, inputs = _prepare(one_file, one_text, kw)
    else:
        from cepcli.many import agreed

        prepared = [_prepare(f, t, kw) for _, f, t in named]
        inputs = agreed([n for n, _, _ in named], [options for _, options in prepared])
        compiled = prepared[0][0]
        many = [(n, c) for (n, _, _), (c, _) in zip(named, prepared, strict=True)]
    options = RunOptions(engine, _order(order), max_matches, stats_every or 0, max_instances, max_subsets)
    if table is not None and not use_spark:
        raise click.UsageError("--table names a Spark table: with --spark")
    directory = output if use_spark else None  # with --spark the executors write --output
    if fmt is None and directory is None and not use_spark and _streams(compiled, inputs):
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
    if not use_spark and _waits_on_a_terminal(compiled, inputs):
        err.console.print(
            "[dim]reading events from standard input, a terminal: type or paste CSV rows (a header"
            " first), then Ctrl-D; or give the input with --input FILE[/]",
            soft_wrap=True,
        )
    stream = open_output(output) if output is not None and to_file else standard_output()
    name = output if output is not None and to_file else "<stdout>"
    from cepcli.runtime.columnar import Found

    writers: list[MatchWriter] = []
    lines = WholeLines()
    last = LastMatch(stream)  # where the output ends after its last complete match (a regular file)
    batched = last.regular and fmt in ("jsonl", "csv")

    def start(
        schema: Schema, pattern: Pattern, patterns: dict[str, tuple[Pattern, Compiled]] | None = None
    ) -> Callable[[Any], None]:
        columns = list(show_columns) if show_columns is not None else None
        with written_to(name):  # a csv header is written at once, and kept
            shown = shown_columns(pattern, compiled.query, schema, columns)
            if patterns is not None:  # several queries: each match says its query's name
                from cepcli.writers import ManyWriter

                by_name = {q: p for q, (p, _) in patterns.items()}
                if fmt == "table":
                    from cepcli.render import ManyTableWriter

                    console = _out(file=stream, soft_wrap=False, width=None if stream.isatty() else 1_000)
                    each = {q: shown_columns(p, c.query, schema, columns) for q, (p, c) in patterns.items()}
                    writers.append(ManyTableWriter(console, schema, by_name, each))  # type: ignore[arg-type]
                elif fmt == "parquet":
                    from cepcli.writers import ParquetWriter

                    writers.append(ParquetWriter(stream, schema, by_name, columns))  # type: ignore[arg-type]
                else:
                    writers.append(ManyWriter(fmt, stream, schema, by_name, columns))  # type: ignore[arg-type]
            elif fmt == "table":
                from cepcli.render import TableWriter

                # in a file or a pipe as wide as it needs to be (a terminal: the terminal's width)
                console = _out(file=stream, soft_wrap=False, width=None if stream.isatty() else 1_000)
                writers.append(TableWriter(console, schema, pattern, shown))
            else:
                writers.append(writer_for(fmt, stream, schema, pattern, columns))
            stream.flush()
            last.mark()
        writer = writers[0]

        def put(match: Any) -> None:  # a Match; a str: --spark's jsonl lines; several queries: (name, Match)
            if isinstance(match, str):
                assert isinstance(writer, JsonlWriter)
                writer.write_lines(match)
                last.mark()
            elif not batched:  # a pipe or a terminal sees each match at once
                writer.write(match)
                stream.flush()
                last.mark()
            elif last.wrote(writer.write(match)):  # a file gets them in blocks: a block's worth out now
                stream.flush()
                last.mark()

        def put_found(named: Any) -> None:  # the columnar engine's matches, lines made at once
            text, ends = writer.found_text(named)  # type: ignore[attr-defined]
            due = last.wrote_lines(ends)  # (before the write: it may reach the file, and fail)
            write_ascii(stream, text)
            if not batched or due:
                stream.flush()
                last.mark()

        def whole(match: Any) -> None:
            try:
                found = match[1] if isinstance(match, tuple) else match
                if not isinstance(found, Found):
                    lines.call(put, match)  # (a signal waits for the end of the line)
                    return
                query = (match[0],) if isinstance(match, tuple) else ()
                if getattr(writer, "takes_found", False):
                    for piece in found.pieces(FOUND_LINES):  # (a signal: the end of a piece)
                        lines.call(put_found, (*query, piece) if query else piece)
                else:
                    for one in found.matches():
                        lines.call(put, (*query, one) if query else one)
            except BrokenPipeError:
                raise
            except OSError as err:
                raise write_error(name, err) from None

        return whole

    def warn(message: str) -> None:
        _warn(err.console, message)

    live = Stats()
    notes = Notes(live.warnings, warn)
    try:
        with lines:
            if use_spark:
                from cepcli.spark import SparkOptions, run_spark, run_spark_many

                spark = SparkOptions(
                    master,
                    partitions,
                    directory,
                    fmt,
                    verbose,
                    lines=fmt == "jsonl" and show is None,
                    show=show_columns,
                    table=table,
                )
            if use_spark and many is not None:
                queries = {q: (c.pattern, c) for q, c in many}
                stats = run_spark_many(
                    many, inputs, options, spark, lambda s, p: start(s, p, queries), warn, live
                )
            elif use_spark:
                stats = run_spark(compiled, inputs, options, spark, start, warn, live)
            elif many is not None:
                from cepcli.many import Many

                runner = Many(many, inputs, options, stats=live, notes=notes)
                queries = dict(
                    zip(runner.names, zip(runner.patterns, runner.queries, strict=True), strict=True)
                )
                on_many = start(runner.schema, runner.patterns[0], queries)
                with _progress(
                    err, runner.source.progress()[1], not quiet, live, lambda: writers[0].written
                ) as step:
                    runner.source.on_chunk = lambda source: step(source.progress()[0])
                    for found in runner.found():
                        on_many(found)
                stats = runner.stats
            else:
                job = Job(compiled, inputs, options, stats=live, notes=notes)
                total = job.source.progress()[1]
                on_match = start(job.schema, job.pattern)
                matches = writers[0]
                with _progress(err, total, not quiet, live, lambda: matches.written) as advance:
                    job.source.on_chunk = lambda source: advance(source.progress()[0])
                    for match in job.found():
                        on_match(match)
                stats = job.stats
            with written_to(name):
                if writers:
                    writers[0].close()
                stream.flush()
    except KeyboardInterrupt as stop:
        if fmt == "parquet" and writers and not use_spark:  # the matches so far, as a whole file
            with suppress(OSError):
                writers[0].close()
        flush_quietly(stream)
        if writers:  # with --spark --output DIR, the executors' files are Spark's to finish
            live.matches = writers[0].written
        live.extra["interrupted"] = True
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
    except OutputError as failed:
        if failed.path == name:
            last.cut()  # a regular file ends at its last complete match (a pipe cannot be cut)
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


@cli.command("check")
@_query_argument
@_input_options
def check_command(query: str | None, expression: str | None, **kw: Any) -> None:
    """Parse and validate QUERY; with an input, also against its columns.

    \b
    Examples:
      cepcli check patterns/stocks_seq.sase
      cepcli check q.sase --input ticks.csv
      cepcli check -e "PATTERN SEQ(A a, B b) WITHIN 5 min"
    """
    from cepcli.job import Job
    from cepcli.query.printer import print_duration

    compiled, options = _prepare(query, expression, kw)
    pattern = compiled.pattern
    against = ""
    if options.path is not None or compiled.query.source is not None:
        job = Job(compiled, options)
        job.close()
        against = f", checked against {job.source.name}"
    names = ", ".join(v.name for v in pattern.variables)
    branches = len(pattern.branches)
    click.echo(
        f"{compiled.path}: ok ({branches} branch{'es' if branches != 1 else ''};"
        f" variables {names}; window {print_duration(compiled.query.window)}{against})"
    )


@cli.command("explain")
@_query_argument
@_input_options
@_engine_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "json"]),
    default="text",
    show_default=True,
    help="text to read, dot for Graphviz, json as data.",
)
def explain_command(
    query: str | None, expression: str | None, engine: str, order: str | None, fmt: str, **kw: Any
) -> None:
    """Show the automaton ENGINE builds for QUERY, without running it.

    \b
    Examples:
      cepcli explain patterns/stocks_seq.sase --engine chain --order c,b,a
      cepcli explain q.sase --format dot | dot -Tpng > nfa.png
    """

    from cepcli.explain import to_dot, to_json, to_text
    from cepcli.job import explain_query

    compiled, options = _prepare(query, expression, kw)
    has_input = options.path is not None or compiled.query.source is not None
    explanation = explain_query(compiled, options if has_input else None, engine, _order(order))
    if fmt == "json":
        click.echo(to_json(explanation), nl=False)
    elif fmt == "dot":
        click.echo(to_dot(explanation), nl=False)
    else:
        console = _out(highlight=False, soft_wrap=True)
        for text, style in to_text(explanation):
            console.print(text, style=style or None, markup=False)


@cli.command("bench")
@_query_argument
@_input_options
@_bad_row_option
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
def bench_command(
    query: str | None,
    expression: str | None,
    engines: str,
    windows: str | None,
    repeat: int,
    json_path: str | None,
    plot_path: str | None,
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
    compiled, options = _prepare(query, expression, kw)
    for path, option in ((json_path, "--json"), (plot_path, "--plot")):
        if path:
            check_file(path, option)
    err = Console(stderr=True)
    with err.status("benchmarking") as status:
        result = bench(
            compiled, options, names, spans, repeat, lambda label: status.update(f"running {label}")
        )
    for message in result.warnings:
        _warn(err, message)
    out = _out(highlight=False, width=None if sys.stdout.isatty() else 140)
    out.print(f"input read once in {result.read_seconds:.2f} s; then replayed from memory")
    out.print(bench_table(result))
    if json_path:
        write_json(json_path, asdict(result))
    if plot_path:
        from cepcli.plot import plot_bench

        plot_bench(result, plot_path)
    if not result.agree:
        raise EngineDisagreement("the engines found different matches (see the 'agree' column)")


class _WithoutPandas:
    """An import finder that says pandas is not installed.

    pyarrow imports pandas, when it can, on its first array or scalar made from Python or
    NumPy data (to recognise pandas objects): a good part of a short run's start-up, and
    every such array costs more after it (BENCHMARKS.md, "Start-up"). A local run never hands pyarrow
    a pandas object (a DataFrame comes only through the Python API), so the program runs as
    if pandas were absent, which pyarrow supports. Not with ``--spark``: PySpark needs it."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (a local run does without it)", name=name)


def main(argv: list[str] | None = None) -> None:
    """Entry point: the CLI, plus a quiet exit on a closed pipe and 130 on Ctrl-C."""
    if "--spark" not in (sys.argv[1:] if argv is None else argv) and "pandas" not in sys.modules:
        sys.meta_path.insert(0, _WithoutPandas())
    try:
        code = cli.main(args=argv, prog_name="cepcli", standalone_mode=False)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except KeyboardInterrupt as stop:
        sys.exit(exit_code(stop))
    except BrokenPipeError:
        _quiet_broken_pipe()
    sys.exit(code if isinstance(code, int) else 0)


class _Stderr:
    """Standard error's rich console, made when first printed to: a quiet run that writes
    jsonl or csv imports no rich."""

    def __init__(self) -> None:
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True)
        return self._console

    def panel(self, stats: Stats) -> None:
        from cepcli.render import stats_panel

        self.console.print(stats_panel(stats))


def _progress(
    err: _Stderr, total: int | None, wanted: bool, stats: Stats, matches: Callable[[], int]
) -> AbstractContextManager[Callable[[int], None]]:
    """The progress bar on a terminal's standard error when wanted, else a no-op updater."""
    if not wanted or not err.console.is_terminal:
        return nullcontext(lambda done: None)
    from cepcli.render import progress_bar

    return progress_bar(err.console, total, stats, matches)


def _warn(console: Console, message: str) -> None:
    """One warning line on standard error (data in it is not markup; never wrapped)."""
    from rich.markup import escape

    console.print(f"[yellow]warning:[/] {escape(message)}", markup=True, soft_wrap=True)


def _error(message: str) -> None:
    first, *rest = message.splitlines() or [""]
    click.echo(f"cepcli: error: {first}" if not rest else f"{first}", err=True)
    for line in rest:
        click.echo(line, err=True)


def _out(**kw: Any) -> Console:
    """A rich console for standard output (or ``file``) that stops quietly, exit 0, when
    the reader goes away (rich's own choice is exit 1)."""
    from rich.console import Console

    console = Console(**kw)
    console.on_broken_pipe = _quiet_broken_pipe  # type: ignore[method-assign]
    return console


def _quiet_broken_pipe() -> None:
    """The reader went away (``cepcli run ... | head``): stop quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
