"""``cepcli run --spark``: the same engines, inside a PySpark job, with the same result.

Spark reads the input (any path it can read, a directory of CSV files too), numbers the
rows in its reading order (for one file, the file's order: Spark keeps a file's splits in
offset order; for several files, its own packing order), and the driver decides the
column kinds from the first 65,536 rows exactly as the local reader does. Then:

* a query with an ``[attr]`` equivalence is grouped by that attribute
  (``groupBy(attr).applyInPandas``), one engine run per value: every event of a match,
  negated ones included, shares it, so nothing crosses groups (rows missing it can match
  nothing and are dropped);
* otherwise the stream is cut in time shards ``[t0, t1)``; a shard receives the events of
  ``[t0 - W, t1 + W]`` and keeps only the matches whose earliest event falls in ``[t0, t1)``,
  so the window and leading, trailing or enclosed negations are judged on all the events
  they depend on, and each match is reported by one shard.

In each group the worker runs ``job.Job`` on its rows as a DataFrame, typed with the
column kinds and time reading the driver decided (conditions travel as query text and are
compiled there), and returns the matches as JSON lines and its statistics; the driver
writes them out in the requested format and merges the statistics (sums, and peaks as
the largest of any partition). pyspark is imported only here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from cepcli.errors import CepError, InputError, QueryError, UsageError
from cepcli.events import Event, Kind, Schema
from cepcli.job import Compiled, Job, RunOptions, compile_text, input_path, peak_rss_mb
from cepcli.output import event_object
from cepcli.plan.pattern import Pattern
from cepcli.query.checks import check_schema
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import DEFAULT_NULLS, SAMPLE_ROWS, infer_kind
from cepcli.sources.options import InputOptions
from cepcli.sources.times import TimeSpec, decide, nanoseconds, time_problem

ROW = "_row"
SHARD = "_shard"
_SUMS = (
    "events",
    "relevant_events",
    "predicate_evaluations",
    "prefilter_evaluations",
    "instances_created",
    "instances_deleted",
    "buffer_insertions",
    "buffer_removals",
)
_PEAKS = ("peak_instances", "peak_buffered_events")


@dataclass(frozen=True, slots=True)
class SparkOptions:
    master: str = "local[*]"
    partitions: int | None = None  # time shards (default: twice Spark's default parallelism)
    shard_seconds: float | None = None  # overrides the shard length (tests force small shards)


class SparkError(CepError):
    """Spark could not be started or the job failed (exit code 1)."""

    exit_code = 1


def run_spark(
    compiled: Compiled,
    inputs: InputOptions,
    options: RunOptions,
    spark: SparkOptions,
    start: Callable[[Schema, Pattern], Callable[[Match], None]],
) -> Stats:
    """Run the query as a Spark job; ``start(schema, pattern)`` returns where matches go."""
    path = input_path(compiled, inputs.path)
    if path == "-":
        raise UsageError("--spark reads its input with Spark: give a path with --input or FROM")
    if inputs.on_bad_row != "fail":
        raise UsageError(
            "--on-bad-row skip is not supported with --spark (run without --spark to skip bad rows)"
        )
    session = _session(spark.master)
    started = time.perf_counter()
    frame, columns = _read(session, path, inputs)
    first = frame.filter(frame[ROW] < SAMPLE_ROWS).orderBy(ROW).toPandas()
    schema, spec = _schema(first, columns, inputs, path)
    try:
        check_schema(compiled.query, schema)
    except QueryError as err:
        raise err.located(compiled.text, compiled.path) from None
    worker_inputs = replace(  # the workers read their rows as a DataFrame, typed as decided here
        inputs,
        path=None,
        header=True,
        columns=None,
        row_col=ROW,
        schema=tuple(zip(columns, schema.kinds, strict=True)),
        time_format=spec.format,
        sort=True,
    )
    job = _Job(compiled.text, options.engine, options.order or (), worker_inputs, columns, spec)
    pattern = compiled.pattern
    times = frame.mapInPandas(_timestamps(job, path), "_row long, _ts long").cache()  # lazy: used if needed
    if not inputs.sort:
        _check_order(times, path)  # as locally, whatever the partitioning
    if pattern.branches[0].equiv:
        grouped = _by_attribute(frame, pattern.branches[0].equiv[0], job)
        partitioning = f"grouped by {pattern.branches[0].equiv[0]}"
    else:
        grouped, shards = _by_time(session, frame, times, job, pattern.window, spark)
        partitioning = f"{shards} time shards"
    on_match = start(schema, pattern)
    stats = Stats(engine=options.engine, order=options.order or ())
    written = 0
    for row in grouped.toLocalIterator():
        if row["kind"] == "stats":
            _merge(stats, json.loads(row["text"]))
            continue
        on_match(_match(json.loads(row["text"]), schema))
        written += 1
        if options.max_matches is not None and written >= options.max_matches:
            stats.extra["stopped_at_max_matches"] = True
            break
    stats.matches = written
    stats.events = frame.count()  # partitions overlap by the window: their sums count some twice
    stats.seconds = time.perf_counter() - started
    stats.peak_rss_mb = peak_rss_mb()
    stats.extra.update(
        {
            "spark_master": spark.master,
            "partitioning": partitioning,
            "spark_seconds": round(stats.seconds, 3),
            "peaks": "largest of any partition",
        }
    )
    return stats


# --- the session and the input -----------------------------------------------------------


def _session(master: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - a dependency of cepcli
        raise SparkError(f"pyspark is not installed: {err}") from None
    try:
        session = (
            SparkSession.builder.master(master)
            .appName("cepcli")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.network.timeout", "60s")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
    except Exception as err:  # noqa: BLE001 - Java and cluster failures come in many types
        raise SparkError(_spark_reason(err, master)) from None
    session.sparkContext.setLogLevel("ERROR")
    return session


def _spark_reason(err: BaseException, master: str) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if "JAVA_HOME" in text or "Java gateway" in text or "java" in text.lower():
        return f"cannot start Spark: Java 17 or newer is needed ({text})"
    return f"cannot start Spark with master {master!r}: {text}"


def _read(session: Any, path: str, options: InputOptions) -> tuple[Any, tuple[str, ...]]:
    from pyspark.sql import types as T

    try:
        reader = session.read.option("header", options.header).option("inferSchema", False)
        frame = reader.option("encoding", "UTF-8").csv(path)
    except Exception as err:  # noqa: BLE001
        raise InputError(f"Spark cannot read the input: {str(err).splitlines()[0]}", filename=path) from None
    if options.columns:
        if len(options.columns) != len(frame.columns):
            raise InputError(
                f"--columns names {len(options.columns)} columns and the input has {len(frame.columns)}",
                filename=path,
            )
        frame = frame.toDF(*options.columns)
    columns = tuple(frame.columns)
    numbered = frame.rdd.zipWithIndex().map(lambda pair: (*pair[0], pair[1]))
    schema = T.StructType(
        [*(T.StructField(c, T.StringType()) for c in columns), T.StructField(ROW, T.LongType())]
    )
    return session.createDataFrame(numbered, schema), columns


def _schema(
    first: pd.DataFrame, columns: tuple[str, ...], options: InputOptions, path: str
) -> tuple[Schema, TimeSpec]:
    """Column kinds and the time reading, from the first rows, as the local run decides them."""
    if first.empty:
        raise InputError("the input is empty (no data rows)", filename=path)
    for role, col in (("type", options.type_col), ("time", options.time_col)):
        if col not in columns:
            flag = "--type-col" if role == "type" else "--time-col"
            raise InputError(
                f"no {role} column {col!r} (columns: {', '.join(columns)}; choose one with {flag})",
                filename=path,
            )
    nulls = _nulls(options)
    given = dict(options.schema)
    text = {c: pa.array(first[c].fillna("").astype(str).tolist(), pa.string()) for c in columns}
    kinds = tuple(
        given.get(c, Kind.STR if c == options.type_col else infer_kind(text[c], nulls)) for c in columns
    )
    spec = decide(text[options.time_col], nulls, options.unit, options.time_format)
    schema = Schema(columns, kinds, options.type_col, options.time_col, options.unit)
    return schema, spec


def _nulls(options: InputOptions) -> pa.Array:
    markers = DEFAULT_NULLS if options.null_values is None else ("", *options.null_values)
    return pa.array(markers, pa.string())


# --- the workers -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Job:
    """What a worker needs: plain data, compiled there."""

    query: str
    engine: str
    order: tuple[str, ...]
    inputs: InputOptions
    columns: tuple[str, ...]
    time: TimeSpec

    def run(self, rows: pd.DataFrame, owned: tuple[int, int] | None) -> pd.DataFrame:
        """The local evaluation over these rows; matches (as JSON lines) whose earliest
        event falls in ``owned``, then one line of statistics."""
        compiled = compile_text(self.query, "<query>", self.inputs.unit)
        rows = rows.sort_values(ROW)
        text = rows[[*self.columns, ROW]].astype({c: "string" for c in self.columns})
        stats = Stats()
        job = Job(compiled, self.inputs, RunOptions(self.engine, self.order or None), data=text, stats=stats)
        schema = job.schema
        lines = []
        for match in job.matches():
            if owned is not None and not owned[0] <= match.first_ts < owned[1]:
                continue
            lines.append(json.dumps(_as_json(match, schema), separators=(",", ":"), default=str))
        stats.matches = len(lines)
        out = [("match", line) for line in lines] + [("stats", json.dumps(stats.as_dict(), default=str))]
        return pd.DataFrame(out, columns=["kind", "text"])


def _as_json(match: Match, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, binding in match.bindings:
        if isinstance(binding, tuple):
            out[name] = [event_object(e, schema) for e in binding]
        else:
            out[name] = event_object(binding, schema)
    return out


def _match(obj: dict[str, Any], schema: Schema) -> Match:
    """A match back on the driver, for the local writers."""

    def event(o: dict[str, Any]) -> Event:
        values = [o.get(c) for c in schema.columns]
        return Event(int(o[ROW]), 0, str(o.get(schema.type_col)), values, 0)

    bindings = tuple(
        (name, tuple(event(e) for e in value) if isinstance(value, list) else event(value))
        for name, value in sorted(obj.items())
    )
    return Match(bindings)


_OUT = "kind string, text string"


def _by_attribute(frame: Any, attr: str, job: _Job) -> Any:
    from pyspark.sql import functions as F

    if attr not in frame.columns:
        raise InputError(f"no column {attr!r} for [{attr}]")
    kept = frame.filter(F.col(attr).isNotNull() & (F.col(attr) != ""))
    return kept.groupBy(attr).applyInPandas(lambda rows: job.run(rows, None), _OUT)


def _by_time(
    session: Any, frame: Any, times: Any, job: _Job, window: int, spark: SparkOptions
) -> tuple[Any, int]:
    """Time shards overlapping by the window; each keeps the matches it owns."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    bounds = times.agg(F.min("_ts"), F.max("_ts")).collect()[0]
    start, end = int(bounds[0]), int(bounds[1])
    count = spark.partitions or 2 * session.sparkContext.defaultParallelism
    forced = round(spark.shard_seconds * 10**9) if spark.shard_seconds else None
    length = forced or max(-(-(end - start) // count), window, 1)
    shards = max(1, (end - start) // length + 1)

    def shard_ids(ts: int) -> list[int]:
        low = max(0, (ts - window - start) // length)
        high = min(shards - 1, (ts + window - start) // length)
        return list(range(low, high + 1))

    ids = F.udf(shard_ids, T.ArrayType(T.IntegerType()), useArrow=False)
    spread = frame.join(times, ROW).withColumn(SHARD, F.explode(ids(F.col("_ts")))).drop("_ts")

    def run_shard(rows: pd.DataFrame) -> pd.DataFrame:
        k = int(rows[SHARD].iloc[0])
        owned = (start + k * length, start + (k + 1) * length if k < shards - 1 else 1 << 64)
        return job.run(rows.drop(columns=[SHARD]), owned)

    return spread.groupBy(SHARD).applyInPandas(run_shard, _OUT), shards


def _timestamps(job: _Job, path: str) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """Each row's time in int64 nanoseconds, read as the local run reads it; an
    unreadable time is the local run's error."""
    opts, spec = job.inputs, job.time

    def parse(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        nulls = _nulls(opts)
        for rows in batches:
            ids = rows[ROW].to_numpy()
            col = pa.array(rows[opts.time_col].fillna("").astype(str).tolist(), pa.string())
            ts, bad = nanoseconds(col, spec, nulls)
            if bad.any():
                at = int(bad.argmax())
                why = time_problem(col[at].as_py(), spec, opts.time_col, frozenset(nulls.to_pylist()))
                raise InputError(why, int(ids[at]), path)
            yield pd.DataFrame({ROW: ids, "_ts": ts})

    return parse


def _check_order(times: Any, path: str) -> None:
    """Without --sort, timestamps must not decrease in row order (as locally)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    previous = F.lag("_ts").over(Window.orderBy(ROW))
    bad = times.withColumn("_prev", previous).filter(F.col("_ts") < F.col("_prev")).orderBy(ROW).limit(1)
    found = bad.collect()
    if found:
        row = found[0]
        raise InputError(
            f"timestamp {row['_ts']!r} is earlier than the previous row's {row['_prev']!r}"
            " (the input must be in time order; pass --sort to sort it)",
            int(row[ROW]),
            path,
        )


def _merge(stats: Stats, part: dict[str, Any]) -> None:
    for key in _SUMS:
        setattr(stats, key, getattr(stats, key) + int(part.get(key, 0)))
    for key in _PEAKS:
        setattr(stats, key, max(getattr(stats, key), int(part.get(key, 0))))
    stats.extra["partitions"] = int(str(stats.extra.get("partitions", 0))) + 1
