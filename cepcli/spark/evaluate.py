"""Stage 4 of ``--spark``, the evaluation (one task per shard, in parallel): time shards
cut at the quantiles of the relevant rows' times (``shard_bounds``), overlapping by the
window (``_shards``), and, with ``[attr]``, grouped by the key too, but for
``strict_contiguity`` (``keyed``); each shard evaluated by ``cepcli.spark.shards``, and owning
the matches whose earliest event falls in its range. The events are the local run's: the
split readers ship the columns of the local typed pieces, and the local row factory
(``cepcli.sources.rows``) makes the events from them.

The rows reach their shards by a shuffle (``evaluate``); a time-sorted Parquet input is read
by time range instead, each shard reading and evaluating its own rows in one task
(``by_time_range``, ``cepcli.spark.ranges``). Either way the shards' results go to
``cepcli.spark.deliver``.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from cepcli.clock import Slice, Window
from cepcli.notes import Notes
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, RunOptions
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats
from cepcli.sources.options import format_of
from cepcli.spark.deliver import Work, deliver, typed_shard
from cepcli.spark.options import SparkOptions
from cepcli.spark.reading import TS, Reading
from cepcli.spark.scan import counted, reached, spark_schema

if TYPE_CHECKING:
    import pyarrow as pa


def evaluate(
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
    evaluated, and the matches written (``deliver``)."""
    context = spark_session.sparkContext
    relevant = stats.relevant_events
    if cut is not None:  # the rows before the first bad row
        context.setJobDescription("cepcli: count the relevant rows before the bad row")
        relevant = stats.relevant_events = data.count()
    if not relevant:
        return
    bounds = shard_bounds(data, spark, context, relevant, reports)
    lap("bounds")
    work = _work(
        compiled, reading, options, spark, order, bounds, cut, reached(reports, cut[0]) if cut else None
    )
    result = by_shard(data, bounds, compiled.pattern, work.one_shard, work.out)
    reported = _kept(result, context, held, f"cepcli: evaluate {len(bounds) + 1} time shards", ())
    deliver(result, reported, work, context, reading, options, spark, stats, notes, on_match, lap)


def _work(
    compiled: Compiled,
    reading: Reading,
    options: RunOptions,
    spark: SparkOptions,
    order: tuple[str, ...],
    bounds: tuple[int, ...],
    cut: tuple[int, str, str] | None,
    reached: int | None,
) -> Work:
    import pyarrow as pa

    from cepcli.output import flat_columns, kept
    from cepcli.results import shipped_schema
    from cepcli.spark.shards import Evaluation
    from cepcli.spark.shards import evaluate as evaluate_shard

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
        found = evaluate_shard(job, shard, table, began)
        if typed:
            yield from typed_shard(found, reading, pattern, spark.show, typed_schema, out).to_batches(
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

    return Work(one_shard, out, typed_schema, names, typed)


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


def by_time_range(
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

    import cepcli.spark.ranges as ranges

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
    result = spark_session.range(0, n, 1, n).mapInArrow(task, spark_schema(out))
    lap("plan")
    reported = _kept(result, context, held, f"cepcli: read and evaluate {n} time ranges", ("read",))
    reads = [json.loads(text) for kind, text in reported if kind == "read"]
    unfit = sorted((r["shard"], r["unfit"]) for r in reads if r["unfit"])
    if unfit:
        result.unpersist()
        stats.extra["spark_by_time_range"] = f"no: shard {unfit[0][0]}: {unfit[0][1]}"
        return False
    counted(stats, sorted((x for r in reads for x in r["reports"]), key=lambda x: int(x["first_row"])))
    stats.extra["spark_by_time_range"] = {"shards": n, "rows": plan.rows, "rows_read_again": plan.extra}
    deliver(result, reported, work, context, reading, options, spark, stats, notes, on_match, lap)
    return True


def by_shard(
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
    return spread_frame.groupBy(*keys).applyInArrow(evaluate_group, spark_schema(out))


def keyed(pattern: Pattern) -> bool:
    """Whether a shard's rows may be grouped by the ``[attr]`` key (``Pattern.groups``)."""
    return bool(pattern.groups)


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


def shard_bounds(
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
