"""``cepcli run q.sase -i DIR --spark --stream --output OUT --checkpoint CK``: the files
arriving in a directory as a Structured Streaming query (``cepcli.spark.streams``), its
matches written to ``OUT`` by Spark's file sink (Parquet, or JSON lines of the result
schema), exactly once through the checkpoint; ``--available-now`` processes what is there
and stops, else it runs until Ctrl-C.

The columns and their kinds come from the first file there, read by the local reader as
a batch run's sample is (or ``--schema``); Spark's file source reads every file with them
(a CSV's columns as text, which cepcli types; JSON lines and Parquet in the first file's
types). The statistics are the micro-batches' observed metrics, summed as they come."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from cepcli.errors import UsageError
from cepcli.events import Kind
from cepcli.notes import Notes
from cepcli.prepare import Compiled, RunOptions, input_path
from cepcli.run import Run, peak_rss_mb
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions, format_of
from cepcli.spark.options import SparkOptions
from cepcli.spark.reading import read_kinds

FORMATS = {"parquet": "parquet", "jsonl": "json"}  # --format: Spark's sink


def run_stream(
    queries: list[tuple[str, Compiled]],
    inputs: InputOptions,
    options: RunOptions,
    spark: SparkOptions,
    stats: Stats,
    notes: Notes,
) -> dict[str, Stats]:
    """The stream's query, started, waited for (to its end with ``--available-now``, else
    to Ctrl-C, which stops it between micro-batches), its counters in ``stats``."""
    from cepcli.spark.arguments import from_command_line
    from cepcli.spark.session import session, spark_failures
    from cepcli.spark.streams import find_stream

    if len(queries) > 1:
        raise UsageError("--stream runs one query (start one stream per query)")
    name, compiled = queries[0]
    if spark.output is None or spark.checkpoint is None:
        raise UsageError(
            "--stream writes to --output DIR and keeps its progress in --checkpoint DIR: give both"
        )
    if spark.output_format not in FORMATS:
        raise UsageError(
            "--stream --output DIR writes --format parquet or jsonl: a match's columns are nested"
            " (a struct per variable), which CSV cannot hold"
        )
    if options.max_matches is not None:
        raise UsageError("--max-matches stops what the driver writes: not with --stream")
    directory = input_path(compiled, inputs.path)
    if directory is None or directory == "-" or not os.path.isdir(directory):
        raise UsageError("--stream reads the files arriving in a directory: give it with --input DIR")
    first = _first_file(directory, inputs.format)
    fmt = format_of(first, inputs.format)
    sampled = _sampled(compiled, replace(inputs, path=first), options)
    started = time.perf_counter()
    with _jvm_output_away(spark.verbose):
        spark_session, archive = session(spark.master, spark.verbose)
    stats.engine = options.engine
    stats.extra["spark_class_archive"] = archive
    stats.extra["spark_input"] = directory
    totals = _Totals()
    listener = _listener(totals)
    query = None
    spark_session.streams.addListener(listener)
    try:
        with spark_failures([]):
            df = _source(spark_session, directory, fmt, first, inputs, sampled)
            arguments = from_command_line(  # (--partitions cuts a batch's time shards: not a stream's)
                compiled.text, df, inputs, options, spark, partitions=None,
                time_format=sampled.time_format, schema=sampled.kinds,
            )  # fmt: skip
            result = find_stream(arguments, inputs.max_delay)
            # the state's partitions (fixed by the checkpoint's first run): one group needs one;
            # keys are spread over the cores (each partition is a state store of its own)
            keyed = bool(compiled.pattern.groups)
            parallel = spark_session.sparkContext.defaultParallelism
            spark_session.conf.set("spark.sql.shuffle.partitions", str(2 * parallel if keyed else 1))
            writer = (
                result.writeStream.format(FORMATS[spark.output_format])
                .option("path", spark.output)
                .option("checkpointLocation", spark.checkpoint)
                .outputMode("append")
                .queryName(f"cepcli {name or compiled.path}")
            )
            if spark.available_now:
                writer = writer.trigger(availableNow=True)
            query = writer.start()
            try:
                while not query.awaitTermination(1):
                    pass
            except KeyboardInterrupt:
                query.stop()  # (between micro-batches: the sink's log keeps the last whole one)
                raise
            failure = query.exception()
            if failure is not None:
                raise failure
    finally:
        spark_session.streams.removeListener(listener)
        totals.into(stats, query)
        stats.seconds = time.perf_counter() - started
        stats.peak_rss_mb = peak_rss_mb()
        stats.extra["spark_master"] = spark_session.sparkContext.master
        stats.extra["spark_seconds"] = round(stats.seconds, 3)
    notes.bad_rows(stats.bad_rows, stats.first_bad_row)
    return {name: stats}


@contextlib.contextmanager
def _jvm_output_away(verbose: bool) -> Iterator[None]:
    """The JVM started with its standard output and error on the null device (unless
    ``--verbose``): the stream's Python workers print there as they work, for Spark's own
    logs (a failure of the query reaches the driver as its exception, said in one line)."""
    from pyspark.sql import SparkSession

    if verbose or "PYSPARK_GATEWAY_PORT" in os.environ or SparkSession.getActiveSession() is not None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


@dataclass(frozen=True, slots=True)
class _Sample:
    """What the first file's sample decides: the kinds (as ``schema=``) and the time format."""

    kinds: dict[str, str]
    time_format: str | None
    columns: tuple[str, ...]


def _first_file(directory: str, fmt: str | None) -> str:
    """The directory's first file (by modification time, then name), which decides the
    columns and kinds; none yet is a usage error (Spark's file source needs its columns)."""
    names = [
        os.path.join(directory, n)
        for n in os.listdir(directory)
        if not n.startswith((".", "_")) and os.path.isfile(os.path.join(directory, n))
    ]
    if not names:
        raise UsageError(
            f"--stream: {directory} has no file yet: its first file decides the columns and their kinds"
            " (put one there, and start the stream again)"
        )
    return min(names, key=lambda p: (os.path.getmtime(p), p))


def _sampled(compiled: Compiled, inputs: InputOptions, options: RunOptions) -> _Sample:
    """The first file read as a batch run reads its sample: each column's kind (a time
    column of ISO-8601 text a time), the time format."""
    job = Run({compiled.path: compiled}, inputs, options, stats=Stats())
    try:
        schema, spec = job.schema, job.time_reading
    finally:
        job.close()
    kinds = {name: kind.value for name, kind in read_kinds(schema, spec) if kind is not Kind.UNKNOWN}
    return _Sample(kinds, spec.format, schema.columns)


def _source(session: Any, directory: str, fmt: str, first: str, inputs: InputOptions, sample: _Sample) -> Any:
    """Spark's file source over the directory: CSV as text in the first file's columns,
    JSON lines and Parquet in the first file's types."""
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_schema

    reader = session.readStream
    if fmt == "csv":
        schema = T.StructType([T.StructField(c, T.StringType()) for c in sample.columns])
        return (
            reader.schema(schema).option("header", inputs.header).option("enforceSchema", True).csv(directory)
        )
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return reader.schema(from_arrow_schema(pq.read_schema(first), prefer_timestamp_ntz=False)).parquet(
            directory
        )
    if fmt == "jsonl":
        import pyarrow.json as pj

        types = pj.read_json(first).schema
        return reader.schema(from_arrow_schema(types, prefer_timestamp_ntz=False)).json(directory)
    raise UsageError(f"--stream reads CSV, JSON lines and Parquet files, not {fmt}")


class _Totals:
    """The observed metrics of every micro-batch, by its id: a listener hears each as it
    ends, and the query's recent progress fills in what the listener had not heard yet
    when the query stopped (its events come on a thread of their own)."""

    def __init__(self) -> None:
        self.batches: dict[int, dict[str, Any]] = {}

    def add(self, batch: int, metrics: dict[str, Any]) -> None:
        self.batches[batch] = metrics

    def into(self, stats: Stats, query: Any) -> None:
        if query is not None:
            for progress in query.recentProgress:
                self.add(int(progress["batchId"]), dict(progress.get("observedMetrics") or {}))
        sums: dict[str, int] = {}
        for metrics in self.batches.values():
            for name, row in metrics.items():
                for field, value in (row.asDict() if hasattr(row, "asDict") else dict(row)).items():
                    sums[f"{name}.{field}"] = sums.get(f"{name}.{field}", 0) + int(value or 0)
        late = sums.get("cepcli.late_rows", 0)
        stats.events = sums.get("cepcli_input.rows", 0)
        stats.relevant_events = sums.get("cepcli_input.relevant", 0)
        stats.bad_rows = sums.get("cepcli_input.bad_rows", 0) + late
        stats.matches = sums.get("cepcli.matches", 0)
        stats.extra["late_rows"] = late
        stats.extra["spark_micro_batches"] = len(self.batches)


def _listener(totals: _Totals) -> Any:
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            totals.add(event.progress.batchId, dict(event.progress.observedMetrics))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return Listener()
