"""The options the commands share, and the one way each command turns QUERY/-e and the
input flags into prepared queries (``cepcli.prepare``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from cepcli.clock import TIME_UNITS
from cepcli.engine_names import DEFAULT_ENGINE, ENGINE_NAMES
from cepcli.errors import closest
from cepcli.query.options import FORMATS, ON_BAD_ROW
from cepcli.sources.options import CHUNK_ROWS, MAX_ROW_BYTES, InputOptions, from_text

if TYPE_CHECKING:
    from cepcli.prepare import Compiled, Prepared


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
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
            type=Choice(FORMATS),
            default=None,
            help="The input's format [default: from the file name (.parquet, .jsonl/.ndjson), else csv].",
        ),
        click.option("--type-col", default="type", show_default=True, help="Column with the event type."),
        click.option("--time-col", default="ts", show_default=True, help="Column with the timestamp."),
        click.option(
            "--time-unit",
            type=Choice(TIME_UNITS),
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
            help="Column kinds (int, float, decimal, bool, time, str) instead of those read from the"
            " first rows.",
        ),
        click.option("--no-header", is_flag=True, help="The input has no header row (use --columns)."),
        click.option("--columns", default=None, help="Column names of a headerless input: c1,c2,..."),
        click.option("--sort", is_flag=True, help="Sort the input by time (stable) before evaluating."),
        click.option(
            "--follow",
            is_flag=True,
            help="Read a file that another process appends to as it grows (as tail -f), until"
            " Ctrl-C; matches are written as their rows arrive.",
        ),
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


def bad_row_option(command: Callable[..., Any]) -> Callable[..., Any]:
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
        type=Choice(ON_BAD_ROW),
        default="fail",
        show_default=True,
        help="A bad row (wrong number of fields, unreadable or missing time, text in a numeric"
        " column the query reads, time going back without --sort): stop with an error naming it,"
        " or skip it, count it (bad_rows) and warn once.",
    )(command)


class Choice(click.Choice):  # type: ignore[type-arg]
    """click's choice, whose error names the closest choice ("did you mean 'columnar'?")."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            near = closest(str(value), [str(c) for c in self.choices])
            if near is None:
                raise
            shown = ", ".join(repr(c) for c in self.choices)
            self.fail(f"{value!r} is not one of {shown}: did you mean {near!r}?", param, ctx)


def engine_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--engine and --order (shared by run and explain)."""
    command = click.option(
        "--order", default=None, help="Frequency order for chain engines: v1,v2,... rarest first."
    )(command)
    return click.option(
        "--engine",
        type=Choice(ENGINE_NAMES),
        default=DEFAULT_ENGINE,
        show_default=True,
        help="adaptive: the default, columnar where the pattern allows, else eager, the chain or"
        " the tree, chosen per time segment from the rates it measures; tree: the lazy Tree NFA,"
        " it picks the rarest variable as it goes;"
        " chain: the lazy Chain NFA in a frequency order (--order, or measured); first-chance and"
        " post-processing: chain, checking negations as early as possible or after a match;"
        " eager: the classic NFA, every partial match on arrival; columnar: the lazy plan"
        " set-at-a-time, files and pipes step by step (Kleene patterns run the tree, but one"
        " run per start under skip_till_next_match and bounded closures B{l,m})"
        " (see the README's table).",
    )(command)


def query_argument(command: Callable[..., Any]) -> Callable[..., Any]:
    """QUERY (a .sase file) or -e TEXT (explain and bench take one query)."""
    command = click.option(
        "--expression",
        "-e",
        metavar="TEXT",
        multiple=True,
        help="The query's text instead of a QUERY file: -e 'PATTERN SEQ(A a, B b) WITHIN 5 min'.",
    )(command)
    return click.argument("query", nargs=-1, type=click.Path())(command)


def queries_argument(command: Callable[..., Any]) -> Callable[..., Any]:
    """QUERY... (.sase files, or directories of them) or -e TEXT, each as often as wanted:
    several queries are evaluated over one reading of the input (``cepcli.run``)."""
    command = click.option(
        "--expression",
        "-e",
        metavar="TEXT",
        multiple=True,
        help="The query's text instead of a QUERY file: -e 'PATTERN SEQ(A a, B b) WITHIN 5 min'"
        " (several: each is a query, named e1, e2, ...).",
    )(command)
    return click.argument("query", nargs=-1, type=click.Path())(command)


def prepared_queries(queries: tuple[str, ...], expressions: tuple[str, ...], kw: dict[str, Any]) -> Prepared:
    """The queries (QUERY files, directories of them, or -e texts) prepared over the input
    options of the command line (``cepcli.prepare``: a flag given wins over the query's
    ``FROM ... WITH``). A file's query is named by its stem; -e's ``e1``, ``e2``, ..."""
    from cepcli.prepare import QueryText, prepare, query_files, read_query

    if queries and expressions:
        raise click.UsageError("give a QUERY file or -e TEXT, not both")
    if not queries and not expressions:
        raise click.UsageError("missing QUERY: a .sase file, or the query's text with -e 'PATTERN ...'")
    directory = False
    if expressions:
        several = len(expressions) > 1  # (each says which -e a message points into)
        texts = [
            QueryText(f"e{i}", t, f"<e{i}>" if several else "<-e>") for i, t in enumerate(expressions, 1)
        ]
    else:
        files, directory = query_files(queries)
        texts = [QueryText(Path(f).stem, read_query(f), f) for f in files]
    ctx = click.get_current_context()
    given = {FIELD.get(p, p) for p in kw if ctx.get_parameter_source(p) is not ParameterSource.DEFAULT}
    return prepare(texts, input_options_of(kw), given, named=len(texts) > 1 or directory)


def one_query(prepared: Prepared, command: str) -> Compiled:
    """The query of a command that takes one."""
    if len(prepared.queries) > 1:
        raise click.UsageError(f"{command} takes one query ({len(prepared.queries)} given)")
    return prepared.only


def streams(path: str | None) -> bool:
    """Is the input a stream (standard input or a FIFO that is no regular file: rows are
    evaluated as they arrive, and the run may never end)?"""
    import stat

    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode if path in ("-", None) else os.stat(str(path)).st_mode
    except (OSError, AttributeError, ValueError):  # no such file (said later), or a test's stdin
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def waits_on_a_terminal(path: str | None) -> bool:
    """Will the run read standard input, and is that a terminal (a user waiting)?"""
    try:
        return path in ("-", None) and sys.stdin.isatty()
    except (AttributeError, ValueError):  # no real standard input (a test's runner)
        return False


# The InputOptions field each input flag sets, where the names differ.
FIELD = {"input_format": "format", "no_header": "header", "schema_text": "schema", "input_path": "path"}


def order_of(order: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in order.split(",")) if order else None


def input_options_of(kw: dict[str, Any]) -> InputOptions:
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
        follow=kw["follow"],
        chunk_rows=kw["chunk_rows"],
        on_bad_row=kw.get("on_bad_row", "fail"),
        max_row_bytes=kw.get("max_row_bytes"),
        null_values=nulls,
        schema=from_text("schema", kw["schema_text"]) if kw["schema_text"] else (),
    )


# The sections of each command's --help: section -> the options in it (the rest: "Other").
SECTIONS = {
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
        "follow",
        "chunk_rows",
        "on_bad_row",
        "max_row_bytes",
    ),
    "Engine": ("engine", "order", "engines", "windows", "repeat"),
    "Output": ("fmt", "output", "show", "stats_json", "stats_every", "json_path", "plot_path", "quiet"),
    "Limits": ("max_matches", "max_instances", "max_subsets"),
    "Spark": (
        "use_spark",
        "master",
        "partitions",
        "table",
        "stream",
        "checkpoint",
        "available_now",
        "verbose",
    ),
}


class Command(click.Command):
    """A command whose --help lists its options in sections (input, engine, output...)."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                section = next((s for s, names in SECTIONS.items() if param.name in names), "Other")
                records.setdefault(section, []).append(record)
        for section in [*SECTIONS, "Other"]:
            if section in records:
                with formatter.section(section):
                    formatter.write_dl(records[section])
