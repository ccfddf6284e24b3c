"""Stage 5 of ``--spark``, the output: the shards' results (``Work``: their matches and
statistics) delivered, their statistics merged (``cepcli.spark.merge``).

With ``--output DIR`` the executors write the matches (JSON lines, CSV or Parquet, Spark's
writers; Parquet in the result schema, typed by each shard, ``typed_shard``, its decimals
checked against Spark's before anything is written, ``Widths``); otherwise they stream to
the driver's writer, the local one (``on_match``): jsonl as the lines the executors made
(written as they are), csv and the table from the matches themselves
(``cepcli.output.MatchCodec``: rows, times, types and typed values). A large result under a
local master reaches the driver through files the executors write (``SPOOLED``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cepcli.errors import LimitError, OutputError
from cepcli.events import Kind, Schema
from cepcli.notes import Notes
from cepcli.output import MatchCodec
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, RunOptions
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.signals import interruption
from cepcli.spark.merge import merge
from cepcli.spark.options import SparkOptions
from cepcli.spark.reading import Reading

if TYPE_CHECKING:
    import pyarrow as pa


def on_match(
    start: Callable[[Schema, Pattern], Callable[[Match | str], None]],
    reading: Reading,
    compiled: Compiled,
    interrupted: Any,
) -> Callable[[Match | str], None]:
    """Where the driver hands a query's matches: its sink, unless Ctrl-C was pressed."""
    write = start(reading.schema, compiled.pattern)

    def on_match(match: Match | str) -> None:
        if interrupted.is_set():
            raise interruption(interrupted.signum)
        write(match)

    return on_match


@dataclass(frozen=True, slots=True)
class Work:
    """How a shard turns its rows into rows of ``out`` (made by ``cepcli.spark.evaluate``,
    delivered here): its matches (``kind`` ``match``, as the output wants them) and
    statistics (``stats``, and with ``typed`` the facts of its times and decimals)."""

    one_shard: Callable[..., Iterator[pa.RecordBatch]]  # (shard, rows[, when its work began])
    out: pa.Schema
    typed_schema: pa.Schema  # the typed result's columns (Parquet to a directory), else none
    names: list[str]  # the flat columns (csv to a directory)
    typed: bool  # the typed result (Parquet to a directory)


def deliver(
    result: Any,
    reported: list[tuple[str, str]],
    work: Work,
    context: Any,
    reading: Reading,
    options: RunOptions,
    spark: SparkOptions,
    stats: Stats,
    notes: Notes,
    on_match: Callable[[Match | str], None] | None,
    lap: Callable[[str], float],
) -> None:
    """The shards' statistics merged, and their matches written: by the executors into
    ``spark.output``, or streamed to the driver's ``on_match``."""
    from cepcli.results import spark_facts

    shard_stats = [json.loads(text) for kind, text in reported if kind == "stats"]
    lap("evaluate")
    merge(stats, shard_stats, notes)
    matches = result.filter(result.kind == "match")
    if spark.output is not None:
        context.setJobDescription(f"cepcli: write the matches to {spark.output}")
        if work.typed:
            typed = [json.loads(text) for kind, text in reported if kind == "typed"]
            wide = too_wide(merged_digits(typed))
            if wide is not None:  # before anything is written
                raise OutputError(spark.output, wide)
            scales, finer = spark_facts(typed)
            if finer:
                notes.warn(
                    f"{finer:,} times of matched events had digits finer than a microsecond: Spark's"
                    " timestamps hold microseconds, and the Parquet files have them cut there"
                )
            from cepcli.results import decimal_columns

            decimal = set(decimal_columns(reading.schema))
            matches = matches.select(*[decimals(f, decimal, scales) for f in work.typed_schema])
        _write(matches, spark, work.names)
        lap("write")
        stats.matches = sum(int(s["matches"]) for s in shard_stats)
        return
    assert on_match is not None
    largest = max((int(s["matches"]) for s in shard_stats), default=0)
    spooled = largest > SPOOLED and str(context.master).startswith("local")
    gathered = not spooled and sum(int(s["matches"]) for s in shard_stats) <= GATHERED
    if spooled:
        stats.extra["spark_spooled"] = True
    if gathered:
        stats.extra["spark_gathered"] = True
    written = 0
    lines = spark.lines  # the executors' lines are the local writer's
    codec = MatchCodec()  # else each match as the executor had it, for the local writers
    with _to_driver(matches.select("text"), context, spooled, gathered) as packs:
        for text in packs:
            pack = text.split("\n")  # a few matches
            if options.max_matches is not None:
                pack = pack[: options.max_matches - written]
            if lines:
                on_match("\n".join(pack))  # written as they are, at once
            else:
                for line in pack:
                    on_match(codec.decode(line))
            written += len(pack)
            if options.max_matches is not None and written >= options.max_matches:
                stats.extra["stopped_at_max_matches"] = True
                break
    lap("write")
    stats.matches = written


# matches of one shard past which a local master's driver reads them from files the
# executors write (``_to_driver``), not from Spark's iterator (which holds a shard whole)
SPOOLED = 1 << 20
SPOOLED_BYTES = 1 << 20  # text read at once from those files
# matches in all up to which they reach the driver in one job, not a job per shard (Spark's
# iterator runs one for each partition: 40 shards of a few matches took 2-3 s more)
GATHERED = 1 << 16


@contextlib.contextmanager
def _to_driver(texts: Any, context: Any, spooled: bool, gathered: bool = False) -> Iterator[Iterator[str]]:
    """The texts of the result's matches (each one or more, joined by newlines), as they
    reach the driver: ``gathered`` (few in all), in one job; else from ``toLocalIterator``,
    a job per partition, which holds a partition of the result (a shard's matches) whole
    in the driver's JVM, so that 800 MB of them fail with Java's ``OutOfMemoryError`` on
    its default heap; or, ``spooled`` (a local master, whose executors write where the
    driver reads), from text files the executors write into a directory of their own, read
    in order a megabyte at a time, and removed at the end."""
    import shutil
    import tempfile

    if gathered:
        context.setJobDescription("cepcli: collect the matches to the driver")
        yield (row[0] for row in texts.collect())
        return
    if not spooled:
        context.setJobDescription("cepcli: stream the matches to the driver")
        yield (row[0] for row in texts.toLocalIterator(prefetchPartitions=True))
        return
    folder = tempfile.mkdtemp(prefix="cepcli-matches-")
    try:
        context.setJobDescription("cepcli: write the matches for the driver")
        texts.write.mode("overwrite").text(folder)
        yield _spooled(Path(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _spooled(folder: Path) -> Iterator[str]:
    """The lines of the text files Spark wrote into ``folder`` (its parts, in order), a
    megabyte of whole lines at a time, joined by newlines."""
    for part in sorted(folder.glob("part-*")):
        with open(part, encoding="utf-8") as f:
            while chunk := f.readlines(SPOOLED_BYTES):
                yield "".join(chunk).rstrip("\n")


def _write(matches: Any, spark: SparkOptions, names: list[str]) -> None:
    from pyspark.sql import functions as F

    assert spark.output is not None
    if spark.output_format == "jsonl":
        text = F.col("text")
        if spark.name is not None:  # each line first says its query, as locally
            key = (
                json.dumps({"query": spark.name}, separators=(",", ":"))[:-1]
                .replace("\\", "\\\\")
                .replace("$", "\\$")
            )
            text = F.regexp_replace(text, r"(^|\n)\{", f"$1{key},")
        matches.select(text.alias("text")).write.mode("errorifexists").text(spark.output)
    elif spark.output_format == "csv":
        flat = matches.select(*[F.col(f"`{n}`") for n in names])
        flat.write.mode("errorifexists").option("header", True).csv(spark.output)
    else:  # the result schema's columns, typed (typed_shard, decimals)
        write_result_parquet(matches, spark.output)


def write_result_parquet(matches: Any, directory: str) -> None:
    """Matches in the result schema (Spark's types) written as Parquet to a new directory,
    the times as UTC instants in microseconds (Spark's own ``INT96`` is no instant type)."""
    matches.sparkSession.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    matches.write.mode("errorifexists").parquet(directory)


def typed_shard(
    found: Iterator[dict[str, Any]],
    reading: Reading,
    pattern: Pattern,
    show: tuple[str, ...] | None,
    result: pa.Schema,
    out: pa.Schema,
    scales: Mapping[str, int] | None = None,
) -> pa.Table:
    """A shard's matches in the result schema as Spark receives it (``results.shipped``),
    then its stats row and a ``typed`` row: its decimals' scales, its finer times, and the
    digits its decimals need (``Widths``). When they need more than Spark's decimals hold,
    no match is typed: with ``scales`` (the scales every decimal is cast to, known before:
    ``cepcli.spark.find``) the task fails with the one-line ``LimitError``; else the
    ``typed`` row says so (``digits``), and the driver does before it writes."""
    import pyarrow as pa

    from cepcli.results import Results, shipped

    results = Results(reading.schema, {None: pattern}, show)
    widths = Widths(reading.schema, results.columns, scales)
    others = []
    for row in found:
        if row["kind"] == "match":
            if widths.add(row["match"]):
                results.add(row["match"])
        else:
            others.append(row)
    wide = widths.too_wide()
    if wide is not None and scales is not None:
        raise LimitError(wide)
    facts: dict[str, Any] = {}
    if wide is None:
        table, facts = shipped(results.table(), result)
    else:
        table = result.empty_table()
    facts["digits"] = widths.digits
    n = table.num_rows
    matches = pa.table([pa.array(["match"] * n), pa.nulls(n, pa.string()), *table.columns], schema=out)
    others.append({"kind": "typed", "text": json.dumps(facts)})
    rest = pa.table(
        [
            pa.array([r["kind"] for r in others], pa.string()),
            pa.array([r.get("text") for r in others], pa.string()),
            *(pa.nulls(len(others), f.type) for f in result),
        ],
        schema=out,
    )
    return pa.concat_tables([matches, rest])


SPARK_DIGITS = 38  # the digits of Spark's widest decimal (DecimalType(38, s))


class Widths:
    """The digits the decimals of matched events need, by ``variable.column`` (as the
    result's columns are): the most before the point and the row of such a value, the most
    after it and its row. Spark's decimals hold ``SPARK_DIGITS`` in all, of a scale the
    column shares: a column fits when its most before the point and its most after (of any
    shard, ``scales``) add up to no more (``too_wide``)."""

    def __init__(self, schema: Schema, columns: list[str], scales: Mapping[str, int] | None = None) -> None:
        self.at = [(c, schema.index(c)) for c in columns if schema.kind(c) is Kind.DECIMAL]
        self.nulls = schema.nulls
        self.scales = dict(scales or {})
        self.digits: dict[str, list[int]] = {}  # key -> [before, its row, after, its row]
        self.wide = False
        self.seen: set[tuple[str, int]] = set()  # (variable, row): an event counted

    def add(self, match: Match) -> bool:
        """Counts the digits of ``match``'s decimals: whether all still fit."""
        from cepcli.results import decimal_digits

        if not self.at:
            return True
        for name, binding in match.bindings:
            for event in binding if isinstance(binding, tuple) else (binding,):
                if event is None or (name, event.row) in self.seen:
                    continue
                self.seen.add((name, event.row))
                for column, i in self.at:
                    counted = decimal_digits(event.values[i], self.nulls)
                    if counted is None:
                        continue
                    key = f"{name}.{column}"
                    most = self.digits.setdefault(key, [0, event.row, 0, event.row])
                    if counted[0] > most[0]:
                        most[0:2] = [counted[0], event.row]
                    if counted[1] > most[2]:
                        most[2:4] = [counted[1], event.row]
                    if most[0] + max(most[2], self.scales.get(key, 0)) > SPARK_DIGITS:
                        self.wide = True
        return not self.wide

    def too_wide(self) -> str | None:
        """One line saying which column's decimals Spark cannot hold, or None."""
        return too_wide(self.digits, self.scales)


def too_wide(digits: Mapping[str, list[int]], scales: Mapping[str, int] | None = None) -> str | None:
    """The first column (``variable.column``) of ``digits`` (``Widths.digits``, of one
    shard or merged) whose decimals need more digits than Spark's hold, said in one line."""
    for key, (before, row, after, after_row) in sorted(digits.items()):
        scale = max(after, (scales or {}).get(key, 0))
        if before + scale <= SPARK_DIGITS:
            continue
        if not scale:
            need = f"{before} digits (row {row})"
        elif after < scale:
            need = f"{before} digits before the point (row {row}) and {scale} after it (its column's scale)"
        elif row == after_row:
            need = f"{before + scale} digits (row {row})"
        else:
            need = f"{before} digits before the point (row {row}) and {after} after it (row {after_row})"
        return (
            f"{key} is a decimal that needs {need}, and Spark's decimals hold {SPARK_DIGITS} digits at"
            " most: the matches cannot be typed as Spark's (--output DIR --format parquet); write"
            " --format jsonl or csv, or run without --spark"
        )
    return None


def merged_digits(reports: Iterable[Mapping[str, Any]]) -> dict[str, list[int]]:
    """The ``digits`` of the shards' ``typed`` reports as one: the most of each, its row."""
    merged: dict[str, list[int]] = {}
    for report in reports:
        for key, (before, row, after, after_row) in dict(report.get("digits") or {}).items():
            most = merged.setdefault(key, [before, row, after, after_row])
            if before > most[0]:
                most[0:2] = [before, row]
            if after > most[2]:
                most[2:4] = [after, after_row]
    return merged


def decimals(field: pa.Field, decimal: set[str], scales: dict[str, int]) -> Any:
    """A variable's column with its decimals' text (``decimal``: the columns of that kind)
    cast to Spark decimals of the largest scale any shard met (38 digits in all, Spark's
    most); the other columns as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type

    column = F.col(field.name)
    spark_type: Any = from_arrow_type(field.type)
    listed = isinstance(spark_type, T.ArrayType)
    struct: Any = spark_type.elementType if listed else spark_type
    if not any(f.name in decimal for f in struct.fields):
        return column
    typed = T.StructType(
        [
            T.StructField(
                f.name,
                T.DecimalType(38, scales.get(f"{field.name}.{f.name}", 0))
                if f.name in decimal
                else f.dataType,
                f.nullable,
            )
            for f in struct.fields
        ]
    )
    return column.cast(T.ArrayType(typed) if listed else typed).alias(field.name)
