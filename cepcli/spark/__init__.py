"""``cepcli run --spark``: the same engines as a parallel Spark job, with the local result.

The input is read by the executors with the local reader, not by Spark's readers (whose
CSV pads or drops ragged rows, replaces bad UTF-8 and splits quoted line breaks): so row
ids, quoting, null markers, kinds, times and bad rows are exactly the local run's.

1. **The sample** (driver): the first rows of the first file, read locally, decide the
   column kinds, how times are read and a chain engine's frequency order, as locally.
2. **Splits** (``splits``): the files are cut into parts that start where a record starts,
   each with the row id of its first row, from a parallel scan of their bytes (CSV, JSON
   lines), their rows (Parquet: runs of row groups, a large one cut), or a parallel count
   (a compressed file, one part).
3. **Reading** (``reading``, one task per split, in parallel): the rows some variable can use,
   as Arrow, and a report per split. The time order is checked in each split and then
   chained: the rows a split keeps, read on its own, are in time order, so a split whose
   first kept time is earlier than the latest time of the splits before it is read again
   from that floor (only then). Bad rows are failed (the first of the whole input) or
   skipped, as locally.
4. **Evaluation** (``shards``, one task per shard, in parallel): time shards cut at the
   quantiles of the relevant rows' times, overlapping by the window (and, with ``[attr]``,
   grouped by the key too, but for ``strict_contiguity``: ``keyed``); each owns the matches
   whose earliest event falls in its range.
   The events are the local run's: the split readers ship the columns of the local typed
   pieces, and the local row factory (``cepcli.sources.rows``) makes the events from them.
5. **Output**: with ``--output DIR`` the executors write the matches (JSON lines, CSV or
   Parquet, Spark's writers); otherwise they stream to the driver's writer, the local one:
   jsonl as the lines the executors made (written as they are), csv and the table from the
   matches themselves (``cepcli.output.MatchCodec``: rows, times, types and typed values).

Statistics are merged: rows and bad rows from the splits, the engines' counters summed
over the shards (events in the overlaps are counted in each), peaks the largest of any
shard, and each split's and shard's time span (``spark_splits``, ``spark_shards``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cepcli.clock import Slice, Window
from cepcli.engines import engine
from cepcli.errors import CepError, InputError, LimitError, OutputError, UsageError
from cepcli.events import Kind, Schema
from cepcli.notes import Notes
from cepcli.output import MatchCodec
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, RunOptions, input_path
from cepcli.run import Run, peak_rss_mb
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats, add_part, part_work
from cepcli.signals import interruption
from cepcli.sources.options import InputOptions, format_of
from cepcli.spark.reading import MASK, ROW, TS, Reading, arrow_schema, read_split, ship_types
from cepcli.spark.session import (
    Interrupted,
    SparkError,
    cancel_on_ctrl_c,
    reason,
    session,
    worker_error,
)
from cepcli.spark.ship import ship
from cepcli.spark.splits import Split

if TYPE_CHECKING:
    import pyarrow as pa

    from cepcli.spark.frames import find


__all__ = ["OUTPUT_FORMATS", "SparkError", "SparkOptions", "find", "run_spark"]

OUTPUT_FORMATS = ("jsonl", "csv", "parquet")
_COMPRESSED = (".gz", ".bz2", ".zst", ".zstd", ".lz4", ".br")


def __getattr__(name: str) -> Any:
    """``find`` (``cepcli.spark.frames``, which builds on this module), imported on first use."""
    if name == "find":
        from cepcli.spark import frames

        return frames.find
    raise AttributeError(f"module 'cepcli.spark' has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class SparkOptions:
    master: str | None = None  # None: spark-submit and Spark's configuration decide
    partitions: int | None = None  # time shards (default: twice Spark's default parallelism)
    output: str | None = None  # a directory the executors write the matches to
    output_format: str = "jsonl"
    verbose: bool = False
    shard_seconds: float | None = None  # cuts time every so many seconds (the tests' tiny shards)
    split_bytes: int | None = None  # cuts files every so many bytes (the tests' tiny splits)
    lines: bool = False  # matches reach the driver's sink as their jsonl lines (else as ``Match``es)
    show: tuple[str, ...] | None = None  # the columns each event keeps (--show; None: all)
    name: str | None = None  # the query's name, one of several writing to DIR/query=NAME/
    table: str | None = None  # a Spark table or view to read instead of a path (--table)


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
    path = None if spark.table else input_path(queries[0][1], inputs.path)
    from cepcli.spark.frames import run_frame, spark_path

    if spark.table or spark_path(path):  # Spark's own readers, through cepcli.spark.find
        return run_frame(
            queries, inputs, options, spark, path, stats, starts, Notes(stats.warnings, on_warning)
        )
    assert path is not None
    if path == "-":
        raise UsageError("--spark reads its input in the executors: give a path with --input or FROM")
    files = _files(path)
    if spark.output is not None and spark.output_format not in OUTPUT_FORMATS:
        raise UsageError(f"--spark --output DIR writes {', '.join(OUTPUT_FORMATS)}: choose one with --format")
    if spark.output is not None and options.max_matches is not None:
        raise UsageError("--max-matches stops what the driver writes: not with --spark --output DIR")
    many = len(queries) > 1
    stats.engine = options.engine
    parts = {name: Stats(engine=options.engine) if many else stats for name, _ in queries}
    notes = Notes(stats.warnings, on_warning)
    started = time.perf_counter()
    lap = _Laps(stats)
    reading, orders = _sample(queries, replace(inputs, path=files[0]), options, stats, notes)
    lap("sample")
    spark_session, archive = session(spark.master, spark.verbose)
    stats.extra["spark_class_archive"] = archive
    context = spark_session.sparkContext
    ship(context)
    stats.extra["spark_session_seconds"] = lap("session")
    with new_output(spark_session, spark.output), spark_job(context) as (interrupted, held):
        splits = _splits(context, files, reading, spark.split_bytes)
        reading = _projected(reading, queries, options, splits)
        lap("splits")
        sinks = {  # (each made once: it may write a header)
            name: None
            if spark.output is not None
            else _on_match(starts[name], reading, compiled, interrupted)
            for name, compiled in queries
        }
        done = not many and _by_time_range(
            spark_session, queries[0][1], reading, options, spark, files, orders[0], stats, notes,
            sinks[queries[0][0]], lap, held,
        )  # fmt: skip
        if not done:  # the general way: splits read, checked, spread into shards
            data, reports = _read(spark_session, reading, splits, held)
            lap("read")
            data, cut = _checked(spark_session, reading, splits, data, reports, stats, held)
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
                _evaluate(
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


@contextlib.contextmanager
def spark_job(context: Any) -> Iterator[tuple[Interrupted, list[Any]]]:
    """The Spark jobs of one run: Ctrl-C cancels them (``interrupted``, set, and the run
    ends with the interruption's exit), a Spark, Java or py4j failure becomes one line
    (``SparkError``; ``CEPCLI_DEBUG=1`` shows it whole), and the frames the run cached
    (``held``, which its steps append to) are dropped when it ends: a session that lives on
    (a second run in one process, the tests) would keep them, and answer the same query on
    the same path from the cache though the file changed."""
    held: list[Any] = []
    with cancel_on_ctrl_c(context) as interrupted:
        with spark_failures(held, interrupted):
            yield interrupted, held
        if interrupted.is_set():
            raise interruption(interrupted.signum)


@contextlib.contextmanager
def new_output(spark_session: Any, directory: str | None) -> Iterator[None]:
    """Within: the run writes its matches into ``directory`` (``--output DIR``, which Spark's
    writers make), if not None. When the run fails or is interrupted, and the directory was
    not there before, it is removed, once the cancelled tasks have stopped writing: no
    ``_temporary/``, no part files of some shards (a directory that was there is left to
    Spark's writer, which refuses it)."""
    if directory is None:
        yield
        return
    where = None
    with contextlib.suppress(Exception):  # (a path Hadoop cannot name: Spark's writer says so)
        jvm = spark_session.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(directory)
        where = (path.getFileSystem(spark_session.sparkContext._jsc.hadoopConfiguration()), path)
    existed = where is None or bool(where[0].exists(where[1]))
    try:
        yield
    except BaseException:
        if not existed and where is not None:
            with contextlib.suppress(Exception):  # the JVM may be gone
                _settled(spark_session.sparkContext)
            with contextlib.suppress(Exception):
                where[0].delete(where[1], True)
        raise


def _settled(context: Any, seconds: float = 10.0) -> None:
    """Waits (``seconds`` at most) until no Spark job runs, nor any task: the tasks of a
    failed or cancelled job stop after it has ended, and may still write."""
    tracker = context._jsc.sc().statusTracker()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = sum(int(e.numRunningTasks()) for e in tracker.getExecutorInfos())
        if not running and not len(tracker.getActiveJobIds()) and not len(tracker.getActiveStageIds()):
            return
        time.sleep(0.05)


@contextlib.contextmanager
def spark_failures(held: list[Any], interrupted: Interrupted | None = None) -> Iterator[None]:
    """A Spark, Java or py4j failure as one line (``SparkError``; ``CEPCLI_DEBUG=1`` shows
    it whole; cepcli's own errors pass as they are, those an executor raised too: the
    worker's message, ``session.worker_error``; after Ctrl-C, ``interrupted``, the
    interruption), and the frames in ``held`` unpersisted at the end."""
    try:
        yield
    except CepError:
        raise
    except Exception as err:  # noqa: BLE001 - Spark, Java and py4j failures come in many types
        if interrupted is not None and interrupted.is_set():
            raise interruption(interrupted.signum) from None  # the jobs were cancelled
        if os.environ.get("CEPCLI_DEBUG") == "1":
            raise
        carried = worker_error(err)  # a cepcli error an executor raised: its own message
        if carried is not None:
            raise carried from None
        raise SparkError(reason(err, "the Spark job failed")) from None
    finally:
        for frame in held:
            with contextlib.suppress(Exception):  # the JVM may be gone
                frame.unpersist()


def _on_match(
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


class _Laps:
    """Seconds of each step, in the stats (``spark_steps``)."""

    def __init__(self, stats: Stats) -> None:
        self.steps: dict[str, float] = {}
        stats.extra["spark_steps"] = self.steps
        self.last = time.perf_counter()

    def __call__(self, step: str) -> float:
        now = time.perf_counter()
        self.steps[step] = round(now - self.last, 3)
        self.last = now
        return self.steps[step]


# --- 1. the sample ----------------------------------------------------------------------


def _files(path: str) -> list[str]:
    """The input's files: one, or a directory's (hidden ones left out) in name order."""
    if os.path.isdir(path):
        found = sorted(
            str(p) for p in Path(path).iterdir() if p.is_file() and not p.name.startswith((".", "_"))
        )
        if not found:
            raise InputError("the directory holds no file", filename=path)
        return found
    if not os.path.exists(path):
        raise InputError("cannot open: No such file or directory", filename=path)
    return [path]


def _sample(
    queries: list[tuple[str, Compiled]],
    inputs: InputOptions,
    options: RunOptions,
    stats: Stats,
    notes: Notes | None = None,
) -> tuple[Reading, list[tuple[str, ...]]]:
    """Kinds, time reading, each query's frequency order and the types the columns travel
    in, from the first file's sample, read locally (several queries: as ``cepcli.run.Run``
    reads them, once)."""
    job = Run(dict(queries), inputs, options, stats=stats, notes=notes)
    try:
        schema = job.schema
        spec = job.time_reading
        orders = job.orders()
        ship, exact, pending = ship_types(job)  # (uses up the job's pieces: after the order)
    finally:
        job.close()
    first = queries[0][1].pattern
    stats.order = orders[0] or tuple(v.name for v in first.variables if not v.negated)
    # the executors' kinds are the sample's; a time column of text read as ISO-8601 is given
    # as a time (a JSON field of text is a ``str`` column), so that they read it so too
    kinds = tuple(
        Kind.TIME if name == schema.time_col and spec.how == "iso" else kind
        for name, kind in zip(schema.columns, schema.kinds, strict=True)
    )
    given = replace(
        inputs,
        path=None,
        columns=schema.columns,
        schema=tuple(zip(schema.columns, kinds, strict=True)),
        time_format=spec.format,
    )
    texts = tuple(c.text for _, c in queries) if len(queries) > 1 else ()
    reading = Reading(
        queries[0][1].text, given, schema, ship, exact, job.source.sample, texts, pending=pending
    )
    return reading, orders


# --- 2. the splits ----------------------------------------------------------------------


def _splits(context: Any, files: list[str], reading: Reading, least: int | None) -> list[Split]:
    """Every file's splits, with row ids going on from file to file."""
    from cepcli.spark import splits as cut

    parts = max(2 * context.defaultParallelism, 1)
    if least is not None:
        parts = 1 << 30
    fmt = format_of(files[0], reading.inputs.format)
    header_bytes = -1  # the first file's header (a file whose first record is empty has its length)
    plans: list[tuple[str, str]] = []  # (file, how): ranges, groups or whole
    ranges: list[tuple[str, int, int]] = []
    starts: dict[str, int] = {}
    for path in files:
        if fmt == "parquet":
            plans.append((path, "groups"))
        elif path.lower().endswith(_COMPRESSED) or _magic(path):
            plans.append((path, "whole"))
        else:
            start = 0
            if fmt == "csv" and reading.inputs.header:
                if header_bytes < 0:
                    header_bytes = _header_length(files[0], 0)
                start = _header_length(path, header_bytes)
            starts[path] = start
            plans.append((path, "ranges"))
            ranges += cut.plan_ranges(path, start, max(1, parts // len(files)), least or 1 << 20)
    quotes = fmt == "csv"
    scans = []
    if ranges:
        context.setJobDescription("cepcli: scan the input for record boundaries")
        scans = (
            context.parallelize(ranges, len(ranges))
            .map(lambda r: cut.scan(r[0], r[1], r[2], quotes))
            .collect()
        )
    whole = [p for p, how in plans if how == "whole"]
    counts = {}
    if whole:
        context.setJobDescription("cepcli: count the rows of compressed files")
        counts = dict(context.parallelize(whole, len(whole)).map(lambda p: (p, _count(reading, p))).collect())
    out: list[Split] = []
    first = 0
    for path, how in plans:
        if how == "groups":
            found, rows = cut.row_groups(path, first, max(1, parts // len(files)))
        elif how == "whole":
            found, rows = [Split(path, -1, -1, first, counts[path])], counts[path]
        else:
            mine = [s for s in scans if s.path == path]
            found, rows = cut.chain(mine, starts[path], os.path.getsize(path), first)
        out += found
        first += rows
    return out


def _projected(
    reading: Reading, queries: list[tuple[str, Compiled]], options: RunOptions, splits: list[Split]
) -> Reading:
    """Parquet in file order, every query evaluated by the columnar engine: the splits read
    only the columns some condition (or the type and time) reads, as the local run does, and
    the shards fetch the others for their matches (``reading.Fetch``)."""
    inputs, schema = reading.inputs, reading.schema
    if not splits or format_of(splits[0].path, inputs.format) != "parquet":
        return reading
    if inputs.sort or inputs.max_delay is not None:  # (the local run reads all then, too)
        return reading
    if not all(engine(options.engine).columnar(compiled.pattern) for _, compiled in queries):
        return reading
    used = {schema.type_col, schema.time_col}.union(*(c.pattern.columns for _, c in queries))
    away = tuple(c for c in schema.columns if c not in used)
    files = {s.path: s.first_row - s.start for s in splits}
    return replace(reading, away=away, files=tuple(files.items())) if away else reading


def _magic(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(4)
    return head.startswith((b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18"))


def _header_length(path: str, first_file_header: int) -> int:
    """The bytes of a file's header record (each file of a directory has its own)."""
    from cepcli.sources.raw import RawInput
    from cepcli.sources.records import RecordStream

    raw = RawInput(path)
    try:
        return len(RecordStream(raw.stream, path, 1 << 30, False).first_record()) or first_file_header
    finally:
        raw.close()


def _count(reading: Reading, path: str) -> int:
    """The data rows of a whole (compressed) file, counted by the local reader."""
    from cepcli.sources.source import open_reader

    options = replace(
        reading.inputs, path=path, columns=None if reading.inputs.header else reading.inputs.columns
    )
    reader = open_reader(options)
    last = -1
    try:
        for batch in reader.batches():
            ids = [int(batch.rows[-1])] if len(batch.rows) else []
            last = max([last, *ids, *(u[0] for u in batch.unreadable)])
    finally:
        reader.close()
    return last + 1


# --- 3. reading ---------------------------------------------------------------------------


def _read(
    spark_session: Any, reading: Reading, splits: list[Split], held: list[Any]
) -> tuple[Any, list[dict[str, Any]]]:
    """The relevant rows of every split, read in parallel (persisted, in ``held``), and the reports."""
    context = spark_session.sparkContext
    context.setJobDescription(f"cepcli: read {len(splits)} splits")
    frame = _read_frame(spark_session, reading, [(i, s, None) for i, s in enumerate(splits)])
    frame.persist()
    held.append(frame)
    reports = [json.loads(r[0]) for r in frame.filter(frame[_REPORT].isNotNull()).select(_REPORT).collect()]
    for report in reports:
        if report["error"]:
            message, row, filename = report["error"]
            raise InputError(message, row, filename)
    return frame, sorted(reports, key=lambda r: r["index"])


_REPORT = "__cepcli_report"


def _read_frame(spark_session: Any, reading: Reading, jobs: list[tuple[int, Split, Any]]) -> Any:
    import pyarrow as pa

    target = arrow_schema(reading).append(pa.field(_REPORT, pa.string()))
    spark_schema = _spark_schema(target)
    # one partition per job, from ``range`` (made in the JVM: no Python job to make the
    # descriptors); each task reads the jobs its numbers name
    descriptors = spark_session.range(0, len(jobs), 1, max(len(jobs), 1))

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for number in batch.column(0).to_pylist():
                index, split, floor = jobs[number]
                table, report = read_split(reading, split, floor)
                report["index"] = index
                nulls = pa.nulls(table.num_rows, pa.string())
                yield from table.append_column(_REPORT, nulls).to_batches()
                empty = {f.name: pa.nulls(1, f.type) for f in target if f.name != _REPORT}
                yield pa.RecordBatch.from_pydict({**empty, _REPORT: [json.dumps(report)]}, schema=target)

    return descriptors.mapInArrow(read, spark_schema)


def _spark_schema(schema: Any) -> Any:
    import pyarrow as pa
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_schema

    if any(pa.types.is_nested(f.type) for f in schema):  # the result schema's columns
        return from_arrow_schema(schema, prefer_timestamp_ntz=False)

    spark_types = {
        "int64": T.LongType(),
        "double": T.DoubleType(),
        "bool": T.BooleanType(),
        "string": T.StringType(),
    }
    return T.StructType([T.StructField(f.name, spark_types[str(f.type)]) for f in schema])


def _checked(
    spark_session: Any,
    reading: Reading,
    splits: list[Split],
    frame: Any,
    reports: list[dict[str, Any]],
    stats: Stats,
    held: list[Any],
) -> tuple[Any, tuple[int, str, str] | None]:
    """The time order chained across splits, and the bad rows failed or skipped: the relevant
    rows to evaluate, and where a bad row cuts the input (``fail``)."""
    from pyspark.sql import functions as F

    if not reading.inputs.sort:
        floors = _floors(reports)
        delay = reading.inputs.delay or 0  # --max-delay: a row more than this before the floor is late
        redo = [
            (r["index"], splits[r["index"]], floor)
            for r, floor in zip(reports, floors, strict=True)
            if floor is not None and r.get("least") is not None and r["least"] < floor[0] - delay
        ]
        if redo:
            spark_session.sparkContext.setJobDescription(
                f"cepcli: read {len(redo)} splits again from their time floor"
            )
            again = _read_frame(spark_session, reading, redo).persist()
            held.append(again)
            fresh = [
                json.loads(r[0]) for r in again.filter(again[_REPORT].isNotNull()).select(_REPORT).collect()
            ]
            for report in fresh:
                reports[report["index"]] = report
            splits_redone = [i for i, _, _ in redo]
            starts = [splits[i].first_row for i in splits_redone]
            stops = [splits[i].first_row + splits[i].rows for i in splits_redone]
            inside = F.lit(False)
            for a, b in zip(starts, stops, strict=True):
                inside = inside | ((F.col(ROW) >= a) & (F.col(ROW) < b))
            frame = frame.filter(~inside).unionByName(again)
    _counted(stats, reports)
    bad = [tuple(r["bad"]) for r in reports if r["bad"]]
    first_bad = min(bad) if bad else None
    data = frame.filter(frame[_REPORT].isNull()).drop(_REPORT)
    if first_bad is None:
        return data, None
    if reading.inputs.on_bad_row == "skip":
        stats.first_bad_row = (int(first_bad[0]), str(first_bad[1]))
        return data, None
    row = int(first_bad[0])
    stats.events = sum(r["rows"] for r in reports if r["first_row"] < row)  # rows before the cut
    owner = next(s.path for s in splits if s.first_row <= row < s.first_row + max(s.rows, 1))
    return data.filter(F.col(ROW) < row), (row, str(first_bad[1]), owner)


def _counted(stats: Stats, reports: list[dict[str, Any]]) -> None:
    """The input's counters, from the reports of the splits that read it (in order)."""
    stats.events = sum(r["rows"] for r in reports)
    stats.bad_rows = sum(r["bad_rows"] for r in reports)
    stats.relevant_events = sum(r["relevant"] for r in reports)
    stats.prefilter_evaluations = sum(r["prefilter_evaluations"] for r in reports)
    stats.extra["spark_splits"] = [
        {k: r[k] for k in ("path", "start", "rows", "bad_rows", "seconds", "began", "ended")} for r in reports
    ]


def _reached(reports: list[dict[str, Any]], row: int) -> int | None:
    """The latest time of the rows before the bad row at ``row`` (the splits up to its own
    stop reading there): what the local run has seen when its input ends at the row."""
    times = [int(r["last"][0]) for r in reports if r["first_row"] <= row and r["last"] is not None]
    return max(times) if times else None


def _floors(reports: list[dict[str, Any]]) -> list[tuple[int, object, int] | None]:
    """Each split's time floor: the latest kept row of the splits before it."""
    floors: list[tuple[int, object, int] | None] = []
    latest: tuple[int, object, int] | None = None
    for report in reports:
        floors.append(latest)
        last = report["last"]
        if last is not None and (latest is None or last[0] >= latest[0]):
            latest = (int(last[0]), last[1], int(last[2]))
    return floors


# --- 4. and 5. evaluation and output ----------------------------------------------------


def _evaluate(
    spark_session: Any,
    compiled: Compiled,
    reading: Reading,
    options: RunOptions,
    spark: SparkOptions,
    data: Any,
    cut: tuple[int, str, str] | None,
    order: tuple[str, ...],
    stats: Stats,
    notes: Notes,
    on_match: Callable[[Match | str], None] | None,
    lap: Callable[[str], float],
    reports: list[dict[str, Any]],
    held: list[Any],
) -> None:
    """The relevant rows (``data``) spread over the time shards by a shuffle, each shard
    evaluated, and the matches written (``_deliver``)."""
    context = spark_session.sparkContext
    relevant = stats.relevant_events
    if cut is not None:  # the rows before the first bad row
        context.setJobDescription("cepcli: count the relevant rows before the bad row")
        relevant = stats.relevant_events = data.count()
    if not relevant:
        return
    bounds = _bounds(data, spark, context, relevant, reports)
    lap("bounds")
    work = _work(
        compiled, reading, options, spark, order, bounds, cut, _reached(reports, cut[0]) if cut else None
    )
    result = _by_shard(data, bounds, compiled.pattern, work.one_shard, work.out)
    reported = _kept(result, context, held, f"cepcli: evaluate {len(bounds) + 1} time shards", ())
    _deliver(result, reported, work, context, reading, options, spark, stats, notes, on_match, lap)


@dataclass(frozen=True, slots=True)
class _Work:
    """How a shard turns its rows into rows of ``out``: its matches (``kind`` ``match``,
    as the output wants them) and statistics (``stats``, and with ``typed`` the facts of
    its times and decimals)."""

    one_shard: Callable[..., Iterator[pa.RecordBatch]]  # (shard, rows[, when its work began])
    out: pa.Schema
    typed_schema: pa.Schema  # the typed result's columns (Parquet to a directory), else none
    names: list[str]  # the flat columns (csv to a directory)
    typed: bool  # the typed result (Parquet to a directory)


def _work(
    compiled: Compiled,
    reading: Reading,
    options: RunOptions,
    spark: SparkOptions,
    order: tuple[str, ...],
    bounds: tuple[int, ...],
    cut: tuple[int, str, str] | None,
    reached: int | None,
) -> _Work:
    import pyarrow as pa

    from cepcli.output import flat_columns, kept
    from cepcli.results import shipped_schema
    from cepcli.spark.shards import Evaluation, evaluate

    pattern = compiled.pattern
    typed = spark.output is not None and spark.output_format == "parquet"
    flat = spark.output is not None and spark.output_format == "csv"
    keep = kept(reading.schema, spark.show)
    job = Evaluation(
        reading,
        options.engine,
        order,
        bounds,
        pattern.window,
        cut[0] if cut else None,
        options.max_instances,
        options.max_subsets,
        flat,
        spark.lines or spark.output is not None,  # the jsonl lines, written as they are
        typed,
        keep,
        reached,
    )
    names = flat_columns(reading.schema, pattern, keep)
    typed_schema = shipped_schema(reading.schema, pattern, spark.show) if typed else pa.schema([])
    out = pa.schema(
        [pa.field("kind", pa.string()), pa.field("text", pa.string())]
        + ([pa.field(n, pa.string()) for n in names] if flat else [])
        + list(typed_schema)
    )

    def one_shard(shard: int, table: pa.Table, began: float | None = None) -> Iterator[pa.RecordBatch]:
        found = evaluate(job, shard, table, began)
        if typed:
            yield from _typed_shard(found, reading, pattern, spark.show, typed_schema, out).to_batches(
                max_chunksize=SHIPPED_ROWS
            )
            return
        rows = found if flat else packed(found)
        for chunk in _chunks(rows, SHIPPED_ROWS if flat else max(1, SHIPPED_ROWS // PACKED)):
            columns: dict[str, list[Any]] = {
                "kind": [r["kind"] for r in chunk],
                "text": [r.get("text") for r in chunk],
            }
            if flat:
                for i, name in enumerate(names):
                    columns[name] = [str(r["flat"][i]) if "flat" in r else None for r in chunk]
            yield pa.RecordBatch.from_pydict(columns, schema=out)

    return _Work(one_shard, out, typed_schema, names, typed)


def _kept(
    result: Any, context: Any, held: list[Any], doing: str, kinds: tuple[str, ...]
) -> list[tuple[str, str]]:
    """Every shard evaluated, in parallel, its matches kept in Spark's cache for the
    writers (``result``, persisted, in ``held``): the rows of its statistics and of
    ``kinds``, as (kind, text)."""
    result.persist()
    held.append(result)
    context.setJobDescription(doing)
    wanted = result.filter(result.kind.isin("stats", "typed", *kinds)).select("kind", "text")
    return [(r[0], r[1]) for r in wanted.collect()]


def _deliver(
    result: Any,
    reported: list[tuple[str, str]],
    work: _Work,
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
    _merge(stats, shard_stats, notes)
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
            matches = matches.select(*[_decimals(f, decimal, scales) for f in work.typed_schema])
        _write(matches, spark, work.names)
        lap("write")
        stats.matches = sum(int(s["matches"]) for s in shard_stats)
        return
    assert on_match is not None
    largest = max((int(s["matches"]) for s in shard_stats), default=0)
    spooled = largest > SPOOLED and str(context.master).startswith("local")
    if spooled:
        stats.extra["spark_spooled"] = True
    written = 0
    lines = spark.lines  # the executors' lines are the local writer's
    codec = MatchCodec()  # else each match as the executor had it, for the local writers
    with _to_driver(matches.select("text"), context, spooled) as packs:
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


def _by_time_range(
    spark_session: Any,
    compiled: Compiled,
    reading: Reading,
    options: RunOptions,
    spark: SparkOptions,
    files: list[str],
    order: tuple[str, ...],
    stats: Stats,
    notes: Notes,
    on_match: Callable[[Match | str], None] | None,
    lap: Callable[[str], float],
    held: list[Any],
) -> bool:
    """A time-sorted Parquet input (by its metadata, ``cepcli.spark.ranges``): each shard
    reads the row groups of its own time and its window's, and evaluates them in the same
    task, so that Spark carries only matches (no read frame cached, no shuffle). False when
    the input is not such, or a shard found a bad row or times its metadata did not claim:
    then nothing was written or counted, and the general way runs (it says what the local
    run says of them)."""
    import pyarrow as pa

    from cepcli.spark import ranges

    inputs = reading.inputs
    if format_of(files[0], inputs.format) != "parquet" or inputs.sort or inputs.max_delay is not None:
        return False
    if spark.shard_seconds is not None or reading.queries:
        return False
    context = spark_session.sparkContext
    groups = ranges.time_groups(files, reading.schema.time_col)
    shards = ranges.shards_wanted(context.defaultParallelism, spark.partitions)
    plan = ranges.plan(groups, shards, compiled.pattern.window) if groups else None
    if plan is None:
        return False
    work = _work(compiled, reading, options, spark, order, plan.bounds, None, None)
    out = work.out

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for shard in batch.column(0).to_pylist():
                began = time.time()  # (the shard's work: its reading too)
                table, reports, unfit = ranges.read_range(reading, plan, shard)
                said = json.dumps({"shard": shard, "reports": reports, "unfit": unfit})
                empty = {f.name: pa.nulls(1, f.type) for f in out if f.name not in ("kind", "text")}
                yield pa.RecordBatch.from_pydict({**empty, "kind": ["read"], "text": [said]}, schema=out)
                if unfit is None and table.num_rows:
                    yield from work.one_shard(shard, table, began)

    n = len(plan.parts)
    result = spark_session.range(0, n, 1, n).mapInArrow(task, _spark_schema(out))
    lap("plan")
    reported = _kept(result, context, held, f"cepcli: read and evaluate {n} time ranges", ("read",))
    reads = [json.loads(text) for kind, text in reported if kind == "read"]
    unfit = sorted((r["shard"], r["unfit"]) for r in reads if r["unfit"])
    if unfit:
        result.unpersist()
        stats.extra["spark_by_time_range"] = f"no: shard {unfit[0][0]}: {unfit[0][1]}"
        return False
    _counted(stats, sorted((x for r in reads for x in r["reports"]), key=lambda x: int(x["first_row"])))
    stats.extra["spark_by_time_range"] = {"shards": n, "rows": plan.rows, "rows_read_again": plan.extra}
    _deliver(result, reported, work, context, reading, options, spark, stats, notes, on_match, lap)
    return True


# matches of one shard past which a local master's driver reads them from files the
# executors write (``_to_driver``), not from Spark's iterator (which holds a shard whole)
SPOOLED = 1 << 20
SPOOLED_BYTES = 1 << 20  # text read at once from those files


@contextlib.contextmanager
def _to_driver(texts: Any, context: Any, spooled: bool) -> Iterator[Iterator[str]]:
    """The texts of the result's matches (each one or more, joined by newlines), as they
    reach the driver: from ``toLocalIterator``, which holds a partition of the result (a
    shard's matches) whole in the driver's JVM, so that 800 MB of them fail with Java's
    ``OutOfMemoryError`` on its default heap; or, ``spooled`` (a local master, whose
    executors write where the driver reads), from text files the executors write into a
    directory of their own, read in order a megabyte at a time, and removed at the end."""
    import shutil
    import tempfile

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


def _by_shard(
    data: Any,
    bounds: tuple[int, ...],
    pattern: Pattern,
    one_shard: Callable[[int, pa.Table], Iterator[pa.RecordBatch]],
    out: pa.Schema,
) -> Any:
    """The relevant rows spread over the time shards (and, with ``[attr]``, grouped by it
    too when ``keyed``), each group evaluated by ``one_shard(shard, rows)`` into batches of rows of ``out``
    (lazy), which go back to Spark as they come, a batch of at most ``SHIPPED_ROWS`` at a
    time (a shard's matches as one batch could pass what the JVM's Arrow takes at once)."""
    import typing

    import pyarrow as pa
    from pyspark.sql import functions as F

    from cepcli.spark.shards import SHARD

    labels = _labels(len(bounds) + 1)
    index = {label: k for k, label in enumerate(labels)}

    def evaluate_group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(list(batches))  # a shard is evaluated whole
        if not table.num_rows:
            return
        shard = index[int(table.column(SHARD)[0].as_py())]
        yield from one_shard(shard, table.drop_columns([SHARD]))

    # the form Spark calls with an iterator of batches and takes one back (its type hints,
    # as objects: this module's annotations are text)
    evaluate_group.__annotations__ = {
        "batches": typing.Iterator[pa.RecordBatch],
        "return": typing.Iterator[pa.RecordBatch],
    }

    # one partition per shard, so that the executors evaluate the shards side by side (a
    # repartition to an explicit number is not coalesced by adaptive execution, and it
    # satisfies the grouping below without another shuffle)
    spread_frame = data.withColumn(SHARD, _shards(bounds, Window(pattern.window), labels)).repartition(
        len(labels), SHARD
    )
    keys = [F.col(SHARD)]
    if keyed(pattern):
        for attr in pattern.branches[0].equiv:
            spread_frame = spread_frame.filter(F.col(attr).isNotNull())
            keys.append(F.col(attr))
    return spread_frame.groupBy(*keys).applyInArrow(evaluate_group, _spark_schema(out))


def keyed(pattern: Pattern) -> bool:
    """Whether a shard's rows may be grouped by the ``[attr]`` key (each key evaluated on
    its own, the rows without it left out): when the pattern has one and every variable's
    events are of one key (``Variable.keyed``). Not under ``strict_contiguity``, whose
    negation is any row at all between two events, whatever its key (or none): its rows are
    the whole input's, in order; ``partition_contiguity`` and ``skip_till_next_match`` are
    about the rows of the same key, and may be grouped."""
    return bool(pattern.branches[0].equiv) and all(v.keyed for v in pattern.variables)


# matches per row of the result, as they travel to the driver or the executors write them
# (--output DIR): Spark caches the result in batches of 10,000 rows before, which must fit
# in an executor's memory (512 made batches of 1.7 GB of jsonl, 16 of 55 MB: with the
# heap's other work, Java's OutOfMemoryError on 9.8M matches under local[2]; 4: 14 MB)
PACKED = 4
SHIPPED_ROWS = 1 << 15  # matches in a batch of a shard's result, at most


def _chunks(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """``rows`` in lists of ``size`` (the last one shorter)."""
    it = iter(rows)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def packed(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A shard's result rows with up to ``PACKED`` consecutive matches in one row, their
    lines (jsonl, or ``MatchCodec``'s) joined by newlines (a line has none of its own): the
    driver takes a row at a time (``toLocalIterator``), and a row costs as much as its text
    there; the text writer of ``--output DIR`` writes the same jsonl lines."""
    lines: list[str] = []
    for row in rows:
        if row["kind"] == "match":
            lines.append(row["text"])
            if len(lines) < PACKED:
                continue
        if lines:
            yield {"kind": "match", "text": "\n".join(lines)}
            lines = []
        if row["kind"] != "match":
            yield row
    if lines:
        yield {"kind": "match", "text": "\n".join(lines)}


def _shards(bounds: tuple[int, ...], window: Window, labels: tuple[int, ...]) -> Any:
    """A row's shards, one row each (in the JVM): shard ``k`` receives the rows of
    ``Window.around`` its slice, ``[b_k - W, b_(k+1) + W]`` (``cepcli.spark.shards``), so a
    row at ``t`` goes to the shards from the number of bounds ``b`` whose reach ends before
    ``t`` to the number whose reach begins at or before ``t`` (clamped to int64, so that
    nothing overflows)."""
    from pyspark.sql import functions as F

    def longs(values: list[int]) -> str:
        return "array(" + ",".join(f"{max(min(v, _MAX), _MIN)}L" for v in values) + ")"

    ts = f"`{TS}`"
    reach = [window.around(Slice(b, b)) for b in bounds]  # the rows both sides of b read
    low = f"size(filter({longs([end for _, end in reach])}, e -> e < {ts}))" if bounds else "0"
    high = f"size(filter({longs([begin for begin, _ in reach])}, e -> e <= {ts}))" if bounds else "0"
    labelled = ",".join(f"{label}L" for label in labels)
    return F.expr(f"explode(transform(sequence({low}, {high}), k -> element_at(array({labelled}), k + 1)))")


_MAX, _MIN = (1 << 63) - 1, -(1 << 63)


def _labels(shards: int) -> tuple[int, ...]:
    """A label for each shard that Spark's hash partitioning into ``shards`` partitions
    sends to partition ``k`` (``pmod(hash(label), shards) == k``): with plain numbers two
    shards often share a partition, and then run one after the other. Only speed depends
    on it (a test holds it to Spark's own ``hash``)."""
    first: dict[int, int] = {}
    label = 0
    while len(first) < shards:
        first.setdefault(spark_hash(label) % shards, label)  # Python's % is Spark's pmod
        label += 1
    return tuple(first[k] for k in range(shards))


def spark_hash(value: int) -> int:
    """Spark SQL's ``hash`` of a long (Murmur3 x86 32-bit, seed 42), as a signed int32."""

    def mix(h: int, k: int) -> int:
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF

    bits = value & 0xFFFFFFFFFFFFFFFF
    h = mix(mix(42, bits & 0xFFFFFFFF), bits >> 32) ^ 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def _bounds(
    data: Any, spark: SparkOptions, context: Any, relevant: int, reports: list[dict[str, Any]]
) -> tuple[int, ...]:
    """Where time is cut into shards: at the quantiles of the relevant rows' times, from the
    times each split sampled (weighted by the split's relevant rows)."""
    if spark.shard_seconds is not None:  # fixed spans (the tests force tiny ones), where there are rows
        from pyspark.sql import functions as F

        context.setJobDescription("cepcli: find the time shards' bounds")
        step = max(int(spark.shard_seconds * 10**9), 1)
        spans = sorted(
            int(r["k"]) for r in data.select(F.expr(f"`{TS}` div {step}").alias("k")).distinct().collect()
        )
        return tuple(k * step for k in spans[1:])
    shards = max(1, min(spark.partitions or 2 * context.defaultParallelism, relevant))
    if shards == 1:
        return ()
    return quantiles([(r.get("times") or [], r["relevant"]) for r in reports], shards)


def quantiles(samples: list[tuple[list[int], int]], shards: int) -> tuple[int, ...]:
    """The ``shards - 1`` cut points of weighted samples: each ``(times, rows)`` stands for
    ``rows`` rows, spread evenly over its sampled times (a split's report)."""
    points = sorted((t, rows / len(times)) for times, rows in samples if times and rows for t in times)
    total = sum(w for _, w in points)
    cuts: list[int] = []
    seen = 0.0
    for t, w in points:
        seen += w
        while len(cuts) < shards - 1 and seen >= total * (len(cuts) + 1) / shards:
            cuts.append(t)
    return tuple(sorted(set(cuts)))


def _merge(stats: Stats, parts: list[dict[str, Any]], notes: Notes) -> None:
    limits = [p["limit"] for p in parts if p.get("limit")]
    if limits:
        raise LimitError(limits[0])
    for part in parts:
        add_part(stats, part)
        for message in part.get("warnings", ()):
            notes.warn(message)
        for key, (size, message) in part.get("largest", {}).items():  # a Kleene set too large
            notes.largest(key, size, message)
    notes.flush()
    _merge_adaptive(stats, parts)
    stats.extra["spark_shards"] = [
        {
            "shard": p["shard"],
            "began": p["began"],
            "ended": p["ended"],
            "rows": p["rows_in_shard"],
            "matches": p["matches"],
            "relevant_events": p["relevant_events"],
        }
        for p in sorted(parts, key=lambda p: int(p["shard"]))
    ]
    stats.extra["partitions"] = len(parts)
    stats.extra["spark_shard_overlap"] = overlap([(float(p["began"]), float(p["ended"])) for p in parts])


def overlap(spans: list[tuple[float, float]]) -> float:
    """How many shards ran at once, on average over the time any ran: their seconds of work
    over the seconds of the union of their spans (1.0: one after another; up to the cores)."""
    busy = sum(end - start for start, end in spans)
    union, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            union += end - max(start, reach)
            reach = end
    return round(busy / union, 2) if union > 0 else 1.0


def _merge_adaptive(stats: Stats, parts: list[dict[str, Any]]) -> None:
    """The adaptive engine's choices over every shard: segments by engine and the runtimes
    started, summed (each shard chooses on its own events); the changes, with their shard."""
    columnar = [p for p in parts if "adaptive_ran" in p]
    if columnar:  # the columnar engine ran the shards' bounded inputs whole
        stats.extra["adaptive_ran"] = columnar[0]["adaptive_ran"]
        # (a shard that an input error stopped before its joins has none)
        stats.extra["columnar_joins"] = _sum_joins(
            [p["columnar_joins"] for p in columnar if "columnar_joins" in p]
        )
    shards = [p for p in parts if isinstance(p.get("adaptive_segments"), dict)]
    if not shards:
        return
    engines = dict.fromkeys(shards[0]["adaptive_segments"], 0)
    for p in shards:
        for name, n in p["adaptive_segments"].items():
            engines[name] = engines.get(name, 0) + int(n)
    stats.extra["adaptive_segments"] = engines
    stats.extra["adaptive_segment_seconds"] = shards[0].get("adaptive_segment_seconds")
    for key in ("adaptive_runtimes", "adaptive_switches"):
        stats.extra[key] = sum(int(p.get(key, 0)) for p in shards)
    stats.extra["adaptive_changes"] = [
        {"shard": p["shard"], **change}
        for p in sorted(shards, key=lambda p: int(p["shard"]))
        for change in p.get("adaptive_changes", [])
    ]


def _sum_joins(shards: list[list[list[dict[str, Any]]]]) -> list[list[dict[str, Any]]]:
    """The columnar engine's partial matches after each join, per branch, summed over the
    shards (each shard joins in the order of its own counts: by variable, in the first's)."""
    sums: list[dict[str, int]] = []
    for joins in shards:
        for b, branch in enumerate(joins):
            if b == len(sums):
                sums.append({})
            for j in branch:
                sums[b][j["variable"]] = sums[b].get(j["variable"], 0) + int(j["partial_matches"])
    return [[{"variable": v, "partial_matches": n} for v, n in branch.items()] for branch in sums]


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
    else:  # the result schema's columns, typed (_typed_shard, _decimals)
        write_result_parquet(matches, spark.output)


def write_result_parquet(matches: Any, directory: str) -> None:
    """Matches in the result schema (Spark's types) written as Parquet to a new directory,
    the times as UTC instants in microseconds (Spark's own ``INT96`` is no instant type)."""
    matches.sparkSession.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    matches.write.mode("errorifexists").parquet(directory)


def _typed_shard(
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


def _decimals(field: pa.Field, decimal: set[str], scales: dict[str, int]) -> Any:
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
