"""``cepcli.spark.find``: a query over a PySpark DataFrame, whose matches are a DataFrame
(docs/spark.md, "A DataFrame in, a DataFrame out").

The DataFrame is read by the local reader, as ``--spark`` reads a file's splits: its rows
are events numbered in the DataFrame's own order (partition after partition, each in the
order Spark holds it; with ``order_col``, after ``orderBy``), and evaluated in time order,
equal times by row id, as a local run with ``sort=True`` evaluates them.

At call time, two small Spark jobs plan the evaluation:

1. **The sample**: the first ``SAMPLE_ROWS`` rows, as Arrow on the driver, read by the local
   ``Run``, decide the column kinds, how times are read and a chain engine's order, as the
   sample of a file does.
2. **A first reading** (``mapInArrow``, each partition in its own task, with the kinds
   given): a report per partition, no rows: its rows, its bad rows, the rows some variable
   can use with a sample of their times, and the largest scale of each decimal column's
   values among them. From the reports the driver takes each partition's first row id, the
   first bad row (``on_bad_row="fail"``: the local ``InputError``, raised there), the time
   shards' bounds and the decimals' scales.

What is returned is lazy: each partition is read again with its first row id, the rows cut
into the time shards of ``cepcli.spark`` (with the window's overlap, each match owned by
one shard), each shard evaluated by the local engines and its matches typed in the result
schema (``cepcli.results.shipped_schema``), the decimals cast to Spark's decimals of the
scale found in step 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import TYPE_CHECKING, Any

from cepcli.engine_names import DEFAULT_ENGINE
from cepcli.engines import engine as engine_named
from cepcli.errors import InputError, LimitError, UsageError, as_python, no_such_keyword
from cepcli.events import Schema
from cepcli.notes import Notes
from cepcli.output import kept, variables
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, RunOptions, compile_text
from cepcli.run import peak_rss_mb
from cepcli.runtime.matches import Match
from cepcli.runtime.options import MAX_SUBSETS
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import SAMPLE_ROWS
from cepcli.sources.options import InputOptions, format_of
from cepcli.spark.arguments import (
    Arguments,
    checked_count,
    checked_show,
    from_command_line,
    parts,
    prepared,
    sample_of,
)
from cepcli.spark.deliver import decimals, typed_shard, write_result_parquet
from cepcli.spark.evaluate import SHIPPED_ROWS, by_shard, quantiles, shard_bounds
from cepcli.spark.options import SparkOptions
from cepcli.spark.reading import TIME_SAMPLE, Reading, arrow_schema, read_table
from cepcli.spark.scan import spark_schema
from cepcli.spark.session import new_output, spark_failures
from cepcli.spark.ship import ship

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["find"]

NAME = "<data>"  # the input's name in messages, as the local reader of a table names it


def find(
    query: str,
    df: Any,
    *,
    type_col: str = "type",
    time_col: str = "ts",
    engine: str = DEFAULT_ENGINE,
    time_unit: str | None = None,
    time_format: str | None = None,
    schema: Mapping[str, str] | None = None,
    null_values: Sequence[str] | None = None,
    on_bad_row: str = "fail",
    max_instances: int | None = None,
    partitions: int | None = None,
    show: Sequence[str] | None = None,
    order_col: str | None = None,
    max_delay: str | None = None,
    late_rows: bool = False,
    **unknown: object,
) -> Any:
    """The matches of ``query`` (SASE+ text) over the PySpark DataFrame ``df``, as a lazy
    Spark DataFrame in the result schema of ``cepcli.find(...).to_arrow()``, in Spark's
    types: a struct column per positive variable (its ``_row`` and the columns, or those of
    ``show``), a Kleene variable an array of them, a variable the match's OR branch does not
    bind null; times ``TimestampType`` (UTC, microseconds), durations
    ``DayTimeIntervalType``, decimals ``DecimalType(38, s)``.

    Row ids follow the DataFrame's own order (partition by partition), or with
    ``order_col`` the order of ``df.orderBy(order_col)`` (ties in the DataFrame's own
    order); the rows are evaluated in time order, equal times by row id (a local run's
    ``sort=True``). Two small Spark jobs run here (the sample, and a first reading that
    finds each partition's rows, the bad rows, the time shards and the decimals' scales);
    ``on_bad_row="fail"`` raises the local ``InputError`` here. ``partitions`` is the number
    of time shards (default twice Spark's default parallelism). The query's ``WITH`` gives
    ``time_unit``, ``time_format``, ``schema`` and ``null_values`` where they are None.

    Over a streaming DataFrame (``df.isStreaming``): a streaming DataFrame of the matches,
    each once it is decided (``cepcli.spark.streams``); ``max_delay`` is how far out of
    time order its rows may come, ``late_rows=True`` adds the late rows to it (a column
    ``late_row``). Several queries (a dict of name to text): a dict of their results."""
    if unknown:
        raise no_such_keyword(find, unknown)
    if isinstance(query, Mapping):  # each query its own result (each a query of its own, for a stream)
        given: dict[str, Any] = {
            "type_col": type_col, "time_col": time_col, "engine": engine, "time_unit": time_unit,
            "time_format": time_format, "schema": schema, "null_values": null_values,
            "on_bad_row": on_bad_row, "max_instances": max_instances, "partitions": partitions,
            "show": show, "order_col": order_col, "max_delay": max_delay, "late_rows": late_rows,
        }  # fmt: skip
        return {str(name): find(text, df, **given) for name, text in query.items()}
    arguments = Arguments(
        query, df, type_col, time_col, engine, time_unit, time_format, schema, null_values,
        on_bad_row, max_instances, partitions, show, order_col,
    )  # fmt: skip
    with as_python():  # (the local reader's messages name the flags; said here as find's keywords)
        if getattr(df, "isStreaming", False):
            from cepcli.spark.streams import find_stream

            return find_stream(arguments, max_delay, late_rows)
        if late_rows:
            raise UsageError(
                "late_rows= is a stream's: a batch DataFrame is evaluated in time order, no row is late"
            )
        return _find(arguments)


def _find(arguments: Arguments, then: Callable[[Plan], Any] | None = None) -> Any:
    """``find``, its arguments checked and the evaluation planned; then the lazy result
    (``then``: what else to do with the plan, the command line's run to the driver)."""
    from pyspark.sql import DataFrame

    df, order_col = arguments.df, arguments.order_col
    if not isinstance(df, DataFrame):
        raise UsageError(
            "cepcli.spark.find reads a PySpark DataFrame: for a path, a pandas DataFrame or an Arrow"
            " table, call cepcli.find"
        )
    compiled, options = prepared(arguments)
    engine_named(arguments.engine)
    run = RunOptions(arguments.engine, max_instances=checked_count(arguments.max_instances, "max_instances"))
    shards = checked_count(arguments.partitions, "partitions")
    shown = checked_show(arguments.show)
    frame = df
    if order_col is not None:
        if order_col not in df.columns:
            raise UsageError(
                f"order_col={order_col!r} names no column of the DataFrame ({', '.join(df.columns)})"
            )
        tie = "__cepcli_order"  # equal values keep the DataFrame's own order
        numbered = df.withColumn(tie, _increasing_id())
        frame = numbered.orderBy(numbered[order_col], numbered[tie]).drop(tie)
    session = df.sparkSession
    context = session.sparkContext
    described = context.getLocalProperty("spark.job.description")
    try:
        with spark_failures([]):
            reading, order = _sample(compiled, options, run, frame, context)
            unknown = [c for c in shown or () if c not in reading.schema.columns]
            if unknown:
                columns = ", ".join(reading.schema.columns)
                raise UsageError(f"show= names no column {unknown[0]!r} (columns: {columns})")
            ship(context)
            reports = _first_reading(frame, reading, context)
            plan = Plan(frame, compiled, reading, order, run, shards, shown, reports, context)
            return (then or _typed)(plan)
    finally:
        with contextlib.suppress(Exception):  # the JVM may be gone
            context.setLocalProperty("spark.job.description", described)  # type: ignore[arg-type]


def _increasing_id() -> Any:
    from pyspark.sql import functions as F

    return F.monotonically_increasing_id()


def _partition() -> int:
    """The partition a task of the DataFrame reads (inside ``mapInArrow``)."""
    from pyspark import TaskContext

    task = TaskContext.get()
    assert task is not None
    return task.partitionId()


# --- 1. the sample -------------------------------------------------------------------------


def _sample(
    compiled: Compiled, options: InputOptions, run: RunOptions, frame: Any, context: Any
) -> tuple[Reading, tuple[str, ...]]:
    """The kinds, the time reading, the engine's order and the types the columns travel in,
    from the DataFrame's first rows read locally (as ``cepcli.spark.plan.sample`` reads a file's)."""
    context.setJobDescription(f"cepcli: sample the first {SAMPLE_ROWS:,} rows")
    return sample_of(compiled, options, run, frame.limit(SAMPLE_ROWS).toArrow())


# --- 2. the first reading ------------------------------------------------------------------


def _first_reading(frame: Any, reading: Reading, context: Any) -> list[dict[str, Any]]:
    """Every partition read once, in parallel: a report of each (``_report``), in
    partition order, with the row id of its first row (``first_row``)."""
    import pyarrow as pa

    from cepcli.results import decimal_columns

    fail = reading.inputs.on_bad_row == "fail"
    decimal = decimal_columns(reading.schema)
    nulls = reading.schema.nulls

    def report(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition = _partition()
        compiled = compile_text(reading.query, "<query>", reading.inputs.unit)
        found = []
        for part in parts(batches, 0):
            rows, said = read_table(reading, part, compiled)
            said["scales"] = {c: _scale(rows.column(c), nulls) for c in decimal}
            found.append(said)
            if said["error"] or (fail and said["bad"]):
                break  # the driver stops there
        text = json.dumps({"partition": partition, **_merged(found)})
        yield pa.RecordBatch.from_pydict({"report": [text]})

    context.setJobDescription("cepcli: read the DataFrame once (rows per partition, bad rows, time shards)")
    reports = sorted(
        (json.loads(r[0]) for r in frame.mapInArrow(report, "report string").collect()),
        key=lambda r: int(r["partition"]),
    )
    first = 0
    for said in reports:
        said["first_row"] = first
        if said["error"]:
            message, row, _ = said["error"]
            raise InputError(message, None if row is None else first + int(row), NAME)
        if fail and said["bad"]:
            raise InputError(str(said["bad"][1]), first + int(said["bad"][0]), NAME)
        first += int(said["rows"])
    return reports


def _merged(found: list[dict[str, Any]]) -> dict[str, Any]:
    """The reports of a partition's parts as one: counts summed, the first bad row and
    error, the largest scales, ``TIME_SAMPLE`` times spread as the parts' are."""
    merged: dict[str, Any] = {
        "rows": sum(int(r["rows"]) for r in found),
        "bad_rows": sum(int(r["bad_rows"]) for r in found),
        "relevant": sum(int(r["relevant"]) for r in found),
        "bad": next((r["bad"] for r in found if r["bad"]), None),
        "error": next((r["error"] for r in found if r["error"]), None),
        "scales": {},
    }
    for said in found:
        for column, scale in said["scales"].items():
            merged["scales"][column] = max(merged["scales"].get(column, 0), scale)
    samples = [(r["times"], int(r["relevant"])) for r in found if r["times"]]
    if len(samples) == 1:
        merged["times"] = samples[0][0]
    else:
        merged["times"] = list(quantiles(samples, TIME_SAMPLE + 1)) if samples else []
    return merged


def _scale(values: pa.ChunkedArray, nulls: frozenset[str]) -> int:
    """The largest scale (digits after the point) of a decimal column's values as they
    travel (text: the exact decimal, or the input's own text), as the result types them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_string(values.type):
        return 0
    text = pc.utf8_trim_whitespace(values)
    plain = pc.match_substring_regex(text, r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$")
    fraction = pc.struct_field(pc.extract_regex(text.filter(plain), r"\.(?P<f>[0-9]*)$"), [0])
    scale = int(pc.max(pc.utf8_length(fraction)).as_py() or 0) if len(fraction) else 0
    others = text.filter(pc.invert(pc.fill_null(plain, False)))
    for value in pc.unique(others).to_pylist():  # exponents, markers, words: as the result reads them
        if value is None or value in nulls:
            continue
        try:
            number = Decimal(value)
        except InvalidOperation:
            continue
        exponent = number.as_tuple().exponent
        if number.is_finite() and isinstance(exponent, int):
            scale = max(scale, -exponent)
    return min(scale, 38)


# --- 3. the lazy evaluation ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """What the call planned (the sample and the first reading): enough to evaluate."""

    frame: Any  # the DataFrame, in the order its rows are numbered
    compiled: Compiled
    reading: Reading
    order: tuple[str, ...]
    run: RunOptions
    shards: int | None
    show: tuple[str, ...] | None
    reports: list[dict[str, Any]]  # the first reading's, one per partition
    context: Any


def _relevant(plan: Plan) -> Any:
    """The rows some variable can use (``arrow_schema``), not computed: each partition read
    again from its first row id."""

    reading = plan.reading
    first_rows = {int(r["partition"]): int(r["first_row"]) for r in plan.reports}
    counts = {int(r["partition"]): int(r["rows"]) for r in plan.reports}
    fail = reading.inputs.on_bad_row == "fail"

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition = _partition()
        compiled = compile_text(reading.query, "<query>", reading.inputs.unit)
        read = 0
        for part in parts(batches, first_rows.get(partition, 0)):
            relevant, said = read_table(reading, part, compiled)
            read += part.num_rows
            if said["error"] or (fail and said["bad"]) or partition not in first_rows:
                break
            yield from relevant.to_batches()
        if read != counts.get(partition, 0) or partition not in first_rows:
            raise InputError(
                f"partition {partition} of the DataFrame has {read:,} rows now, {counts.get(partition, 0):,}"
                " when cepcli.spark.find read it: the DataFrame changes from one reading to the next"
                " (cache it, df.cache(), before calling find)",
                filename=NAME,
            )

    return plan.frame.mapInArrow(rows, spark_schema(arrow_schema(reading)))


def _typed(plan: Plan) -> Any:
    """The matches as a DataFrame, not computed: the relevant rows spread over the time
    shards, each shard evaluated and typed."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from cepcli.results import decimal_columns, shipped_schema
    from cepcli.spark.shards import Evaluation, evaluate

    reading, pattern, show, reports = plan.reading, plan.compiled.pattern, plan.show, plan.reports
    data = _relevant(plan)
    relevant = sum(int(r["relevant"]) for r in reports)
    bounds = shard_bounds(data, SparkOptions(partitions=plan.shards), plan.context, relevant, reports)
    job = Evaluation(
        reading,
        plan.run.engine,
        plan.order,
        bounds,
        pattern.window,
        None,
        plan.run.max_instances,
        MAX_SUBSETS,
        False,
        False,
        True,
        kept(reading.schema, show),
    )
    typed_schema = shipped_schema(reading.schema, pattern, show)
    out = pa.schema([pa.field("kind", pa.string()), pa.field("text", pa.string()), *typed_schema])
    decimal = set(decimal_columns(reading.schema))
    largest = dict.fromkeys(decimal, 0)
    for said in reports:
        for column, scale in said["scales"].items():
            largest[column] = max(largest[column], int(scale))
    scales = {f"{v}.{c}": s for v in variables(pattern) for c, s in largest.items()}

    def one_shard(shard: int, table: pa.Table) -> Iterator[pa.RecordBatch]:
        # (a decimal Spark's of these scales cannot hold fails the task, in one line)
        evaluated = _limited(evaluate(job, shard, table))
        found = typed_shard(evaluated, reading, pattern, show, typed_schema, out, scales)
        return iter(found.to_batches(max_chunksize=SHIPPED_ROWS))

    result = by_shard(data, bounds, pattern, one_shard, out)
    matches = result.filter(F.col("kind") == "match")
    return matches.select(*[decimals(f, decimal, scales) for f in typed_schema])


def _on_the_driver(
    plan: Plan,
    options: RunOptions,
    spark: SparkOptions,
    stats: Stats,
    start: Callable[[Schema, Pattern], Callable[[Match | str], None]],
    notes: Notes,
) -> None:
    """The command line's run without ``--output DIR``: the plan evaluated as a file's
    splits are (``cepcli.spark.evaluate.evaluate``: the shards' matches streamed to the driver and
    written by the local writers, their statistics merged), its counters in ``stats``."""
    from cepcli.spark.deliver import on_match
    from cepcli.spark.evaluate import evaluate
    from cepcli.spark.merge import Laps
    from cepcli.spark.session import spark_job

    reports, reading, compiled = _counted(plan, stats).reports, plan.reading, plan.compiled
    with spark_job(plan.context) as (interrupted, held):
        evaluate(
            plan.frame.sparkSession,
            compiled,
            reading,
            options,
            spark,
            _relevant(plan),
            None,
            plan.order,
            stats,
            notes,
            on_match(start, reading, compiled, interrupted),
            Laps(stats),
            reports,
            held,
        )


def _typed_counted(plan: Plan, stats: Stats) -> Any:
    """``_typed``, the input's counters in ``stats``."""
    return _typed(_counted(plan, stats))


def _counted(plan: Plan, stats: Stats) -> Plan:
    """The input's counters in ``stats``, from the plan's first reading."""
    reports = plan.reports
    stats.events = sum(int(r["rows"]) for r in reports)
    stats.bad_rows = sum(int(r["bad_rows"]) for r in reports)
    stats.relevant_events = sum(int(r["relevant"]) for r in reports)
    bad = [(int(r["first_row"]) + int(r["bad"][0]), str(r["bad"][1])) for r in reports if r["bad"]]
    if bad:  # (a partition's bad row is counted from its first row)
        stats.first_bad_row = min(bad)
    return plan


def _limited(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A shard's rows; past ``max_instances`` its task fails with the local message (the
    result has no other way to say it)."""
    for row in rows:
        if row["kind"] == "stats":
            limit = json.loads(row["text"]).get("limit")
            if limit:
                raise LimitError(limit)
        yield row


def spark_path(path: str | None) -> bool:
    """A path for Spark's own readers rather than the local exact one: a URI (``hdfs://``,
    ``s3a://``, ``file://``) or a glob (``data/*.parquet``) that names no file as it is."""
    if path is None or path == "-":
        return False
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        return True
    return any(c in path for c in "*?[") and not os.path.exists(path)


def run_frame(
    queries: list[tuple[str, Compiled]],
    inputs: InputOptions,
    options: RunOptions,
    spark: SparkOptions,
    path: str | None,
    stats: Stats,
    starts: Mapping[str, Callable[[Schema, Pattern], Callable[[Match | str], None]]],
    notes: Notes,
) -> dict[str, Stats]:
    """``--spark`` over a Spark table (``--table``) or a path Spark reads (``spark_path``):
    the DataFrame Spark's own reader gives (Parquet and JSON lines typed by Spark; CSV as
    text, typed by cepcli's rule), evaluated as ``find`` plans it. With ``--output DIR`` its
    matches are written by the executors in the result schema (Parquet, or Spark's JSON
    lines of it); else they go to the driver's writers (``starts[name]``), as a file's do.
    Row ids follow the DataFrame's order; rows are evaluated in time order (``--sort``).

    Several queries (``cepcli run rules/``): the DataFrame is read by Spark once and kept in
    its cache, and each query is planned and evaluated over it in turn, with its own
    counters (the result, by name; ``stats`` holds the input's), its matches to its name's
    sink or to ``DIR/query=NAME/``."""
    import time

    from cepcli.spark.session import session

    where = f"table {spark.table}" if spark.table else path
    if spark.output is not None and spark.output_format not in ("parquet", "jsonl"):
        raise UsageError(
            "--spark --output DIR over a table or a path Spark reads writes --format parquet or jsonl:"
            " a match's columns are nested (a struct per variable), which CSV cannot hold"
        )
    if spark.output is not None and options.max_matches is not None:
        raise UsageError("--max-matches stops what the driver writes: not with --spark --output DIR")
    started = time.perf_counter()
    spark_session, archive = session(spark.master, spark.verbose)
    stats.engine = options.engine
    stats.extra["spark_class_archive"] = archive
    stats.extra["spark_input"] = where
    many = len(queries) > 1
    parts = {name: Stats(engine=options.engine) if many else stats for name, _ in queries}
    held: list[Any] = []
    # (a run to the driver is also a spark_job: Ctrl-C cancels its jobs)
    with new_output(spark_session, spark.output), spark_failures(held):
        if spark.table:
            df = spark_session.table(spark.table)
        else:
            assert path is not None
            df = _spark_read(spark_session, path, inputs)
        if many:  # read once: each query reads Spark's cache of it
            df = df.persist()
            held.append(df)
        for name, compiled in queries:
            part = parts[name]
            out = spark
            if many and spark.output is not None:
                out = replace(spark, output=f"{spark.output.rstrip('/')}/query={name}", name=name)
            csv = not spark.table and format_of(path or "", inputs.format) == "csv"
            arguments = from_command_line(compiled.text, df, inputs, options, spark, csv=csv)
            # (not ``find``: the command line's messages keep its flags)
            if out.output is None:
                _find(
                    arguments,
                    partial(
                        _on_the_driver,
                        options=options,
                        spark=out,
                        stats=part,
                        start=starts[name],
                        notes=notes,
                    ),
                )
                continue
            result = _find(arguments, partial(_typed_counted, stats=part))
            context = spark_session.sparkContext
            context.setJobDescription(f"cepcli: write the matches to {out.output}")
            if out.output_format == "parquet":
                write_result_parquet(result, out.output)
                part.matches = spark_session.read.parquet(out.output).count()
            else:
                result.write.mode("errorifexists").json(out.output)
                part.matches = spark_session.read.text(out.output).count()
    first = parts[queries[0][0]]  # (the input's counters: every query read all of it)
    for key in ("events", "bad_rows", "first_bad_row"):
        setattr(stats, key, getattr(first, key))
    notes.bad_rows(stats.bad_rows, stats.first_bad_row)
    stats.seconds = time.perf_counter() - started
    stats.peak_rss_mb = peak_rss_mb()
    stats.extra["spark_master"] = spark_session.sparkContext.master
    stats.extra["spark_seconds"] = round(stats.seconds, 3)
    if many:
        stats.extra["spark_reads"] = 1  # the input, once for every query (then Spark's cache)
    return parts


def _spark_read(spark_session: Any, path: str, inputs: InputOptions) -> Any:
    """``path`` read by Spark: Parquet and JSON lines as Spark types them, CSV as text (the
    sample then types it by cepcli's rule), with its header unless ``--no-header``."""
    fmt = format_of(path, inputs.format)
    if fmt == "parquet":
        return spark_session.read.parquet(path)
    if fmt == "jsonl":
        return spark_session.read.json(path)
    reader = spark_session.read.option("header", inputs.header).option("inferSchema", False)
    if not inputs.header and inputs.columns:
        return reader.csv(path).toDF(*inputs.columns)
    return reader.csv(path)
