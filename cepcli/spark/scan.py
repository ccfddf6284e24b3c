"""Stage 3 of ``--spark``, the driver's side of reading: the splits read by the executors
(``cepcli.spark.reading``, one task per split, in parallel) into one persisted frame of the
relevant rows, as Arrow, and a report per split.

The time order is checked in each split and then chained here (``checked``): the rows a
split keeps, read on its own, are in time order, so a split whose first kept time is earlier
than the latest time of the splits before it (its floor, ``_floors``) is read again from
that floor (only then). Bad rows are failed (the first of the whole input: the rows after it
left out, and where it is said) or skipped, as locally; the input's counters come from the
reports (``counted``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cepcli.errors import InputError
from cepcli.runtime.stats import Stats
from cepcli.spark.reading import ROW, Reading, arrow_schema, read_split
from cepcli.spark.splits import Split

if TYPE_CHECKING:
    import pyarrow as pa


def read(
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
    schema = spark_schema(target)
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

    return descriptors.mapInArrow(read, schema)


def spark_schema(schema: Any) -> Any:
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


def checked(
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
    counted(stats, reports)
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


def counted(stats: Stats, reports: list[dict[str, Any]]) -> None:
    """The input's counters, from the reports of the splits that read it (in order)."""
    stats.events = sum(r["rows"] for r in reports)
    stats.bad_rows = sum(r["bad_rows"] for r in reports)
    stats.relevant_events = sum(r["relevant"] for r in reports)
    stats.prefilter_evaluations = sum(r["prefilter_evaluations"] for r in reports)
    stats.extra["spark_splits"] = [
        {k: r[k] for k in ("path", "start", "rows", "bad_rows", "seconds", "began", "ended")} for r in reports
    ]


def reached(reports: list[dict[str, Any]], row: int) -> int | None:
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
