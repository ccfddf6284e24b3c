"""``cepcli.spark.find`` over a streaming DataFrame: a streaming DataFrame of matches, in
the batch call's result schema, in append mode (docs/spark.md, "Structured Streaming").

The plan, each stage a Spark operator:

1. **Reading** (``mapInArrow``, each micro-batch partition): the rows read and typed by the
   local reader (``cepcli.spark.reading.read_table``), with the kinds the stream's Spark
   types give (or ``schema=``; a time column of text is ISO-8601 unless ``time_unit`` says
   numbers); the rows no variable can use dropped there. A bad row stops the query
   (``on_bad_row="fail"``, the local message) or is counted (``skip``). The rows a group
   gets travel as one Arrow IPC value per group and partition, exact (Spark's pandas
   conversion would make an integer with nulls a float), with their latest time.
2. **The watermark** (``withWatermark``) on that time, less ``max_delay``; the column is
   then dropped, so that Spark does not drop late rows unseen: the groups judge them
   (``cepcli.spark.stream_group``: counted, or the query stopped).
3. **The groups** (``groupBy(...).transformWithStateInPandas``, event time): an ``[attr]``
   pattern by its key (as the batch shards group it), any other as one group, as Flink CEP
   keys a stream or runs it on one task. Each group is the incremental columnar evaluation
   (``stream_group.advance``), its tail in a value state, its timers on event time.
4. **Out** (``observe``, ``mapInArrow``): the counts of each micro-batch as the query's
   observed metrics ``cepcli`` (rows read, bad rows, late rows, matches), and the matches
   in the result schema (decimals cast to Spark's of the scale the input's type gives, 18
   for a column of text).

Exactly once is Spark's: the file source and the file sink keep their logs in the
checkpoint, the state store its versions; a micro-batch replayed after a failure reads the
same files and gives the same matches (rows are numbered in the order Spark read them:
partition, then position).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from cepcli.errors import InputError, UsageError
from cepcli.prepare import RunOptions, compile_text
from cepcli.results import decimal_columns, shipped_schema
from cepcli.sources.kinds import kind_of_type
from cepcli.spark.reading import Reading, arrow_schema, read_table
from cepcli.spark.stream_group import (
    NAME,
    STATE_SCHEMA,
    GroupState,
    StreamJob,
    advance,
    chunks,
    from_ipc,
    ipc,
)

if TYPE_CHECKING:
    from cepcli.spark.arguments import Arguments

__all__ = ["METRICS", "StreamPlan", "find_stream", "plan_stream"]

METRICS = "cepcli"  # the observed metrics' name (``query.lastProgress["observedMetrics"]``)
INPUT_METRICS = "cepcli_input"
_GROUP, _KIND, _WM = "__cepcli_group", "__cepcli_kind", "__cepcli_wm"
_N, _ROWS = "__cepcli_n", "__cepcli_rows"
OUTPUT = "kind string, n long, payload binary"  # what a group gives: matches or late rows, as Arrow IPC
LATE = "late_row"  # with late_rows=True: a late row's event, as JSON (null for a match)
TEXT_SCALE = 18  # the scale of a decimal column of text in a stream's result (no sample to find it)


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What ``find_stream`` builds its operators from (no Spark needed: the tests drive the
    stages with it in-process)."""

    job: StreamJob
    keys: tuple[str, ...]  # the [attr] key the groups are made by (none: one group)
    carried: pa.Schema  # a reading task's rows: the key, kind, latest time, count, rows
    decimal: frozenset[str]  # the columns cast to Spark's decimals in the result

    @property
    def reader(self) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """The reading stage's function (``mapInArrow``'s)."""
        return _reader(self.job, self.keys, self.carried)


def plan_stream(arguments: Arguments, max_delay: str | None, types: pa.Schema) -> StreamPlan:
    """A stream's plan, from ``find``'s arguments and the stream's columns as Arrow types."""
    from cepcli.spark.arguments import checked_count, checked_show, prepared

    if arguments.order_col is not None:
        raise UsageError(
            "order_col= orders a batch DataFrame: a stream's rows are taken in the order they come"
        )
    if arguments.partitions is not None:
        raise UsageError(
            "partitions= cuts a batch DataFrame into time shards: a stream is grouped by its [attr] key"
            " (spark.sql.shuffle.partitions spreads the groups)"
        )
    compiled, options = prepared(replace(arguments, schema=_stream_kinds(arguments, types)))
    delay = replace(options, sort=False, max_delay=max_delay).delay or 0  # (each part is read sorted)
    shown = checked_show(arguments.show)
    run = RunOptions(arguments.engine, max_instances=checked_count(arguments.max_instances, "max_instances"))
    reading = _reading(compiled, options, run, types)
    pattern = compiled.pattern
    _streamable(pattern, arguments.engine)
    unknown = [c for c in shown or () if c not in reading.schema.columns]
    if unknown:
        columns = ", ".join(reading.schema.columns)
        raise UsageError(f"show= names no column {unknown[0]!r} (columns: {columns})")
    keys = pattern.groups
    typed = shipped_schema(reading.schema, pattern, shown)
    decimal = frozenset(decimal_columns(reading.schema))
    scales = {f"{v.name}.{c}": _scale(types.field(c).type) for v in pattern.variables for c in decimal}
    fail = options.on_bad_row == "fail"
    job = StreamJob(reading, delay, fail, shown, typed, scales, run.max_instances)
    shipped = arrow_schema(reading)
    key_fields = [pa.field(k, shipped.field(k).type) for k in keys] or [pa.field(_GROUP, pa.int64())]
    carried = pa.schema(
        [
            *key_fields,
            pa.field(_KIND, pa.string()),
            pa.field(_WM, pa.timestamp("us", tz="UTC")),
            pa.field(_N, pa.int64()),
            pa.field(_ROWS, pa.binary()),
        ]
    )
    return StreamPlan(job, keys, carried, decimal)


def find_stream(arguments: Arguments, max_delay: str | None, late_rows: bool = False) -> Any:
    """The streaming DataFrame of ``arguments.query``'s matches over ``arguments.df`` (a
    streaming DataFrame); with ``late_rows``, the late rows too, each a row of its own with
    every variable null and ``late_row`` its event's JSON (as a jsonl match writes it),
    which a match has null. See the module."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from cepcli.spark.deliver import decimals
    from cepcli.spark.scan import spark_schema
    from cepcli.spark.ship import ship

    df = arguments.df
    _state_store(df.sparkSession)
    plan = plan_stream(arguments, max_delay, _arrow_types(df))
    job = plan.job
    ship(df.sparkSession.sparkContext)
    read = df.mapInArrow(plan.reader, from_arrow_schema(plan.carried, prefer_timestamp_ntz=False))
    read = read.observe(
        INPUT_METRICS,
        F.coalesce(F.sum(F.when(F.col(_KIND) == "read", F.col(_N))), F.lit(0)).alias("rows"),
        F.coalesce(F.sum(F.when(F.col(_KIND) == "bad", F.col(_N))), F.lit(0)).alias("bad_rows"),
        F.coalesce(F.sum(F.when(F.col(_KIND) == "relevant", F.col(_N))), F.lit(0)).alias("relevant"),
    )
    rows = read.filter(F.col(_KIND).isin("rows", "tick"))
    watched = rows.withWatermark(_WM, f"{math.ceil(job.delay / 1_000_000)} milliseconds")
    watched = watched.filter(F.col(_KIND) == "rows").drop(_KIND, _N, _WM)
    grouped = watched.groupBy(*[F.col(name) for name in plan.carried.names[: max(1, len(plan.keys))]])
    out = grouped.transformWithStateInPandas(
        statefulProcessor=processor(job),
        outputStructType=OUTPUT,
        outputMode="Append",
        timeMode="EventTime",
    )
    out = out.observe(
        METRICS,
        F.coalesce(F.sum(F.when(F.col("kind") == "match", F.col("n"))), F.lit(0)).alias("matches"),
        F.coalesce(F.sum(F.when(F.col("kind") == "late", F.col("n"))), F.lit(0)).alias("late_rows"),
    )
    kinds = ("match", "late") if late_rows else ("match",)
    typed = pa.schema([*job.typed, pa.field(LATE, pa.string())]) if late_rows else job.typed
    matches = out.filter(F.col("kind").isin(*kinds)).mapInArrow(decoder(job, late_rows), spark_schema(typed))
    columns = [decimals(f, set(plan.decimal), job.scales) for f in job.typed]
    return matches.select(*columns, *([F.col(LATE)] if late_rows else []))


ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _state_store(session: Any) -> None:
    """A stream's state is kept by Spark's ``transformWithState`` (PySpark 4), which needs
    the RocksDB state store: set for the session's queries when the session has the
    default one (``spark.sql.streaming.stateStore.providerClass``)."""
    from pyspark.sql import GroupedData

    if not hasattr(GroupedData, "transformWithStateInPandas"):
        raise UsageError("cepcli.spark.find over a streaming DataFrame needs PySpark 4 (transformWithState)")
    key = "spark.sql.streaming.stateStore.providerClass"
    if "HDFSBacked" in (session.conf.get(key) or "HDFSBacked"):
        session.conf.set(key, ROCKSDB)


def _arrow_types(df: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema, timezone="UTC")  # (Spark's timestamps are instants)


def _stream_kinds(arguments: Arguments, types: pa.Schema) -> dict[str, str]:
    """Every column's kind: ``schema=`` where it says, else the Spark type's (a column of
    text is text: a stream has no sample to read numbers in it); a time column of text is
    ISO-8601 unless ``time_unit`` or ``time_format`` is given (numbers in text, or a format)."""
    given = dict(arguments.schema or {})
    kinds: dict[str, str] = {}
    for f in types:
        if f.name in given:
            kinds[f.name] = str(given[f.name])
        elif f.name == arguments.time_col:
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
                if arguments.time_unit is not None:
                    kinds[f.name] = "decimal"
                elif arguments.time_format is None:
                    kinds[f.name] = "time"
            elif not (pa.types.is_timestamp(f.type) or pa.types.is_date(f.type)):
                kinds[f.name] = kind_of_type(f.type).value
        else:
            kinds[f.name] = kind_of_type(f.type).value
    return kinds


def _reading(compiled: Any, options: Any, run: RunOptions, types: pa.Schema) -> Reading:
    """How the executors read the stream's rows: ``cepcli.spark.arguments.sample_of``'s reading
    of a table of the stream's types, of one row of nulls (the kinds are all given: the row
    only carries the types)."""
    from cepcli.spark.arguments import sample_of

    sample = pa.table({f.name: pa.nulls(1, f.type) for f in types})
    reading, _ = sample_of(compiled, options, run, sample)
    return replace(reading, sample="the stream's types")


def _scale(type_: pa.DataType) -> int:
    return int(type_.scale) if pa.types.is_decimal(type_) else TEXT_SCALE


def _streamable(pattern: Any, engine: str) -> None:
    """A stream runs the columnar engine, incrementally (the default engine's choice for
    every pattern it can run): another engine, or a pattern it cannot run, one line."""
    from cepcli.automata.columnar import evaluates

    if engine not in ("adaptive", "columnar"):
        raise UsageError(
            f"engine={engine!r}: a stream runs the columnar engine, incrementally (engine='adaptive' or"
            " 'columnar'); the per-event engines run on batch DataFrames"
        )
    if not evaluates(pattern):
        raise UsageError(
            "this pattern needs a per-event engine (an unbounded Kleene closure under any match, an OR with"
            " a Kleene variable, or a Kleene aggregate): a stream runs the columnar engine; run it on"
            " batches (cepcli.spark.find over a batch DataFrame)"
        )


def _reader(
    job: StreamJob, keys: tuple[str, ...], carried: pa.Schema
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The reading stage: each micro-batch partition's rows as its groups' values."""
    from cepcli.spark.arguments import parts

    reading = job.reading
    fail = reading.inputs.on_bad_row == "fail"

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        task = TaskContext.get()
        partition = task.partitionId() if task is not None else 0
        batch_id = task.getLocalProperty("streaming.sql.batchId") if task is not None else None
        compiled = compile_text(reading.query, "<query>", reading.inputs.unit)
        first = partition << 40  # (arrival order: partition, then position)
        for part in parts(batches, first):
            relevant, said = read_table(reading, part, compiled)
            where = f"micro-batch {batch_id}, partition {partition}"
            if said["error"]:
                message, row, _ = said["error"]
                raise InputError(f"{message} ({where}{_row(row, first)})", None, NAME)
            if fail and said["bad"]:
                row, message = said["bad"]
                raise InputError(f"{message} ({where}{_row(row, first)})", None, NAME)
            counts = [("read", said["rows"]), ("bad", said["bad_rows"]), ("relevant", said["relevant"])]
            yield _carried(carried, keys, [(None, k, None, int(n), None) for k, n in counts])
            if said["latest"] is None:
                continue
            latest = int(said["latest"]) // 1000  # (us: every row's, not only the kept ones')
            out: list[tuple[Any, ...]] = [
                (key, "rows", latest, rows.num_rows, ipc(rows)) for key, rows in chunks(relevant, keys)
            ]
            if not out:  # time passed: Spark's watermark hears it (no group is called)
                out = [(None, "tick", latest, 0, None)]
            yield _carried(carried, keys, out)

    return read


def _row(row: Any, first: int) -> str:
    return "" if row is None else f", row {int(row) - first}"


def _carried(schema: pa.Schema, keys: tuple[str, ...], rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    n = len(rows)
    columns: list[pa.Array] = []
    if keys:
        for i, k in enumerate(keys):
            columns.append(pa.array([None if r[0] is None else r[0][i] for r in rows], schema.field(k).type))
    else:
        columns.append(pa.array(np.zeros(n, dtype=np.int64)))
    columns.append(pa.array([r[1] for r in rows], pa.string()))
    columns.append(pa.array([r[2] for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")))
    columns.append(pa.array([r[3] for r in rows], pa.int64()))
    columns.append(pa.array([r[4] for r in rows], pa.binary()))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def decoder(
    job: StreamJob, late_rows: bool = False
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The last stage: the groups' matches (Arrow IPC) as rows of the result schema; with
    ``late_rows``, their late rows too (``LATE``)."""

    def decoded(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            kinds = batch.column(batch.schema.get_field_index("kind")).to_pylist()
            payloads = batch.column(batch.schema.get_field_index("payload")).to_pylist()
            for kind, payload in zip(kinds, payloads, strict=True):
                table = from_ipc(payload)
                if kind == "late":
                    table = _late(job, table)
                elif late_rows:
                    table = table.append_column(LATE, pa.nulls(table.num_rows, pa.string()))
                yield from table.to_batches()

    return decoded


def _late(job: StreamJob, rows: pa.Table) -> pa.Table:
    """Late rows as rows of the result: every variable null, ``LATE`` the row's event as
    JSON, as a jsonl match writes an event."""
    import json

    from cepcli.output import kept, match_line
    from cepcli.runtime.matches import Match
    from cepcli.spark.shards import shard_columns

    schema = job.reading.schema
    events = shard_columns(rows, job.reading).events(np.arange(rows.num_rows, dtype=np.int64))
    keep = kept(schema, job.show)
    texts = [
        json.dumps(json.loads(match_line(Match((("row", e),)), schema, ["row"], keep))["row"]) for e in events
    ]
    nulls = [pa.nulls(rows.num_rows, f.type) for f in job.typed]
    return pa.Table.from_arrays(
        [*nulls, pa.array(texts, pa.string())], schema=pa.schema([*job.typed, pa.field(LATE, pa.string())])
    )


def processor(job: StreamJob) -> Any:
    """The stateful processor of a group (``stream_group.advance`` on Spark's state and timers)."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Processor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState("cepcli", STATE_SCHEMA)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            tables = [from_ipc(value) for frame in rows for value in frame.iloc[:, -1]]  # (the rows, last)
            new = pa.concat_tables(tables) if tables else None
            yield from self._step(new, timerValues.getCurrentWatermarkInMs())

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            yield from self._step(None, timerValues.getCurrentWatermarkInMs())

        def _step(self, rows: pa.Table | None, watermark: int) -> Iterator[Any]:
            held = self.state.get() if self.state.exists() else None
            step = advance(job, GroupState.decode(held, job), rows, watermark)
            if step.state is None:
                self.state.clear()
            else:
                self.state.update(step.state.encode())
            for timer in list(self.handle.listTimers()):
                self.handle.deleteTimer(timer)
            if step.timer is not None:
                self.handle.registerTimer(step.timer)
            kinds, counts, payloads = [], [], []
            for kind, table in (("match", step.matches), ("late", step.late)):
                if table is not None and table.num_rows:
                    kinds.append(kind)
                    counts.append(table.num_rows)
                    payloads.append(ipc(table))
            if kinds:
                yield pd.DataFrame({"kind": kinds, "n": counts, "payload": payloads})

        def close(self) -> None:
            pass

    return Processor()
