"""``cepcli run --spark``: the same engines as a parallel Spark job, with the local result.

The input is read by the executors with the local reader, not by Spark's readers (whose
CSV pads or drops ragged rows, replaces bad UTF-8 and splits quoted line breaks): so row
ids, quoting, null markers, kinds, times and bad rows are exactly the local run's. This
module holds the entry points and the job's steps in order (``_run``; its options are
``options.SparkOptions``); each stage has a module:

1. **The sample** (driver, ``plan.sample``): the first rows of the first file, read locally,
   decide the column kinds, how times are read and a chain engine's frequency order, as locally.
2. **Splits** (``plan.splits``, ``splits``): the files are cut into parts that start where a
   record starts, each with the row id of its first row, from a parallel scan of their bytes
   (CSV, JSON lines), their rows (Parquet: runs of row groups, a large one cut), or a
   parallel count (a compressed file, one part).
3. **Reading** (``scan``; ``reading``, one task per split, in parallel): the rows some
   variable can use, as Arrow, and a report per split. The time order is checked in each
   split and then chained: the rows a split keeps, read on its own, are in time order, so a
   split whose first kept time is earlier than the latest time of the splits before it is
   read again from that floor (only then). Bad rows are failed (the first of the whole
   input) or skipped, as locally.
4. **Evaluation** (``evaluate``; ``shards``, one task per shard, in parallel): time shards
   cut at the quantiles of the relevant rows' times, overlapping by the window (and, with
   ``[attr]``, grouped by the key too, but for ``strict_contiguity``: ``evaluate.keyed``);
   each owns the matches whose earliest event falls in its range. A time-sorted Parquet
   input is read by time range instead, each shard reading its own rows (``ranges``).
   The events are the local run's: the split readers ship the columns of the local typed
   pieces, and the local row factory (``cepcli.sources.rows``) makes the events from them.
5. **Output** (``deliver``): with ``--output DIR`` the executors write the matches (JSON
   lines, CSV or Parquet, Spark's writers); otherwise they stream to the driver's writer,
   the local one: jsonl as the lines the executors made (written as they are), csv and the
   table from the matches themselves (``cepcli.output.MatchCodec``: rows, times, types and
   typed values).

Statistics are merged (``merge``): rows and bad rows from the splits, the engines' counters
summed over the shards (events in the overlaps are counted in each), peaks the largest of
any shard, and each split's and shard's time span (``spark_splits``, ``spark_shards``).
The session, Ctrl-C and Spark's failures are ``session``'s; a query over a PySpark
DataFrame, and a path Spark reads, ``frames``' (``find``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cepcli.engines import engine
from cepcli.errors import InputError, UsageError
from cepcli.events import Schema
from cepcli.notes import Notes
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, RunOptions, input_path
from cepcli.run import peak_rss_mb
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats, add_part, part_work
from cepcli.sources.options import InputOptions
from cepcli.spark import deliver, evaluate, merge, plan, scan
from cepcli.spark.options import SparkOptions
from cepcli.spark.reading import MASK
from cepcli.spark.session import SparkError, new_output, session, spark_job
from cepcli.spark.ship import ship

if TYPE_CHECKING:
    from cepcli.spark.frames import find


__all__ = ["OUTPUT_FORMATS", "SparkError", "SparkOptions", "find", "run_spark"]

OUTPUT_FORMATS = ("jsonl", "csv", "parquet")


def __getattr__(name: str) -> Any:
    """``find`` (``cepcli.spark.frames``, which builds on the stages), imported on first use."""
    if name == "find":
        from cepcli.spark import frames

        return frames.find
    raise AttributeError(f"module 'cepcli.spark' has no attribute {name!r}")


def _need_pyspark() -> None:
    """PySpark is the ``spark`` extra: without it, one line saying how to get it."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError(
            "--spark needs PySpark, which the base install leaves out: pip install 'cepcli[spark]'"
            " (and Java 17)"
        ) from None


def run_spark_many(
    queries: list[tuple[str, Compiled]],
    inputs: InputOptions,
    options: RunOptions,
    spark: SparkOptions,
    start: Callable[[Schema, Pattern], Callable[[tuple[str, Match]], None]],
    on_warning: Callable[[str], None] | None = None,
    stats: Stats | None = None,
) -> Stats:
    """Several queries (``cepcli.run.Run``'s) in one Spark job: the input is read, typed,
    checked and prefiltered once for all of them (each row's mask holds every query's bits,
    ``cepcli.run.rebit``), then each query's time shards are evaluated from the cached rows
    its variables can use. Every match goes to one sink, ``start(schema, pattern)``'s (called
    once), with its query's name; with ``spark.output``, each query's matches go to
    ``DIR/query=NAME/`` (jsonl lines begin with ``"query"``, as locally). The run's stats:
    the input's counters, every query's matches and work, each query's under
    ``extra["queries"]``."""
    stats = stats if stats is not None else Stats()
    sink: list[Callable[[tuple[str, Match]], None]] = []

    def named(name: str) -> Callable[[Schema, Pattern], Callable[[Match | str], None]]:
        def begin(schema: Schema, pattern: Pattern) -> Callable[[Match | str], None]:
            if not sink:
                sink.append(start(schema, pattern))
            return lambda match: sink[0]((name, match))  # type: ignore[arg-type]

        return begin

    lines = spark.lines and spark.output is not None  # the driver's writer adds the query's name
    starts = {name: named(name) for name, _ in queries}
    parts = _run(queries, inputs, options, replace(spark, lines=lines), starts, on_warning, stats)
    stats.engine = options.engine
    stats.matches = sum(p.matches for p in parts.values())
    for part in parts.values():
        add_part(stats, part_work(part))
        for key in ("events", "bad_rows", "input_seconds", "first_bad_row", "seconds"):
            setattr(part, key, getattr(stats, key))
    stats.extra["queries"] = {name: part.as_dict() for name, part in parts.items()}
    return stats


def run_spark(
    compiled: Compiled,
    inputs: InputOptions,
    options: RunOptions,
    spark: SparkOptions,
    start: Callable[[Schema, Pattern], Callable[[Match | str], None]],
    on_warning: Callable[[str], None] | None = None,
    stats: Stats | None = None,
) -> Stats:
    """Run the query as a Spark job; ``start(schema, pattern)`` says where matches go (when
    they are not written to ``spark.output``): as ``Match`` objects, each the match the
    executor found (its events' rows, times, types and values, ``cepcli.output.MatchCodec``),
    so that the local writers write what a local run writes; with ``spark.lines``, as the
    jsonl lines the executors made (``cepcli.output.match_line``), up to ``PACKED`` in one
    string, joined by newlines. ``on_warning`` hears the warnings. The counters go to
    ``stats`` (a new one if None), so that a caller interrupted has them."""
    stats = stats if stats is not None else Stats()
    _run([("", compiled)], inputs, options, spark, {"": start}, on_warning, stats)
    return stats


def _run(
    queries: list[tuple[str, Compiled]],
    inputs: InputOptions,
    options: RunOptions,
    spark: SparkOptions,
    starts: dict[str, Callable[[Schema, Pattern], Callable[[Match | str], None]]],
    on_warning: Callable[[str], None] | None,
    stats: Stats,
) -> dict[str, Stats]:
    """The Spark job of one query (its counters in ``stats``), or of several read once
    (``run_spark_many``: the input's counters in ``stats``, each query's in the result)."""
    _need_pyspark()
    from pyspark.sql import functions as F

    engine(options.engine)
    if spark.stream:  # Structured Streaming over the files arriving in a directory
        from cepcli.spark.stream_run import run_stream

        return run_stream(queries, inputs, options, spark, stats, Notes(stats.warnings, on_warning))
    path = None if spark.table else input_path(queries[0][1], inputs.path)
    from cepcli.spark.frames import run_frame, spark_path

    if spark.table or spark_path(path):  # Spark's own readers, through cepcli.spark.find
        return run_frame(
            queries, inputs, options, spark, path, stats, starts, Notes(stats.warnings, on_warning)
        )
    assert path is not None
    if path == "-":
        raise UsageError("--spark reads its input in the executors: give a path with --input or FROM")
    files = plan.files(path)
    if spark.output is not None and spark.output_format not in OUTPUT_FORMATS:
        raise UsageError(f"--spark --output DIR writes {', '.join(OUTPUT_FORMATS)}: choose one with --format")
    if spark.output is not None and options.max_matches is not None:
        raise UsageError("--max-matches stops what the driver writes: not with --spark --output DIR")
    many = len(queries) > 1
    stats.engine = options.engine
    parts = {name: Stats(engine=options.engine) if many else stats for name, _ in queries}
    notes = Notes(stats.warnings, on_warning)
    started = time.perf_counter()
    lap = merge.Laps(stats)
    reading, orders = plan.sample(queries, replace(inputs, path=files[0]), options, stats, notes)
    lap("sample")
    spark_session, archive = session(spark.master, spark.verbose)
    stats.extra["spark_class_archive"] = archive
    context = spark_session.sparkContext
    ship(context)
    stats.extra["spark_session_seconds"] = lap("session")
    with new_output(spark_session, spark.output), spark_job(context) as (interrupted, held):
        splits = plan.splits(context, files, reading, spark.split_bytes)
        reading = plan.projected(reading, queries, options, splits)
        lap("splits")
        sinks = {  # (each made once: it may write a header)
            name: None
            if spark.output is not None
            else deliver.on_match(starts[name], reading, compiled, interrupted)
            for name, compiled in queries
        }
        done = not many and evaluate.by_time_range(
            spark_session, queries[0][1], reading, options, spark, files, orders[0], stats, notes,
            sinks[queries[0][0]], lap, held,
        )  # fmt: skip
        if not done:  # the general way: splits read, checked, spread into shards
            data, reports = scan.read(spark_session, reading, splits, held)
            lap("read")
            data, cut = scan.checked(spark_session, reading, splits, data, reports, stats, held)
            lap("order")
            offset = 0
            for (name, compiled), order in zip(queries, orders, strict=True):
                part, mine, own, out = parts[name], data, reading, spark
                if many:  # the rows of this query's variables, with its own bits
                    bits = (1 << len(compiled.pattern.variables)) - 1
                    mask = F.shiftright(F.col(MASK), offset).bitwiseAND(bits)
                    mine = data.withColumn(MASK, mask).filter(F.col(MASK) != 0)
                    offset += len(compiled.pattern.variables)
                    own = replace(reading, query=compiled.text, queries=())
                    context.setJobDescription(f"cepcli: count the relevant rows of {name}")
                    part.relevant_events = mine.count()
                    if spark.output is not None:
                        out = replace(spark, output=f"{spark.output.rstrip('/')}/query={name}", name=name)
                evaluate.evaluate(
                    spark_session,
                    compiled,
                    own,
                    options,
                    out,
                    mine,
                    cut,
                    order,
                    part,
                    notes,
                    sinks[name],
                    lap,
                    reports,
                    held,
                )
    stats.seconds = time.perf_counter() - started
    stats.peak_rss_mb = peak_rss_mb()
    stats.extra.update(
        {
            "spark_master": context.master,
            "spark_seconds": round(stats.seconds, 3),
            "peaks": "largest of any shard",
        }
    )
    if many:
        stats.extra["spark_reads"] = 1  # the input, once for every query
    notes.bad_rows(stats.bad_rows, stats.first_bad_row)
    if not done and cut is not None:
        raise InputError(cut[1], cut[0], cut[2])
    return parts
