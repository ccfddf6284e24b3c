"""What ``cepcli.spark.find`` is given, checked, and how a DataFrame's rows are read by the
local reader: shared by a batch DataFrame's evaluation (``cepcli.spark.frames``) and a
stream's (``cepcli.spark.streams``), beneath both."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from cepcli.engine_names import DEFAULT_ENGINE
from cepcli.errors import UsageError
from cepcli.prepare import Compiled, QueryText, RunOptions, prepare
from cepcli.query.options import ON_BAD_ROW
from cepcli.run import Run
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import given_kinds
from cepcli.sources.options import InputOptions
from cepcli.spark.options import SparkOptions
from cepcli.spark.reading import Reading, read_kinds, ship_types

ROW_IDS = "__cepcli_row_id"  # the column of row ids a part is read with (``InputOptions.row_col``)
PART_ROWS = 1 << 18  # rows read at once by the local reader, within a partition
# the input options of a file that a DataFrame has no use for: the query's WITH does not set them
_FILE_OPTIONS = frozenset({"format", "header", "columns", "sort", "max_delay", "chunk_rows", "max_row_bytes"})


@dataclass(frozen=True, slots=True)
class Arguments:
    """``find``'s arguments (and the command line's: ``run_frame``)."""

    query: str
    df: Any
    type_col: str = "type"
    time_col: str = "ts"
    engine: str = DEFAULT_ENGINE
    time_unit: str | None = None
    time_format: str | None = None
    schema: Mapping[str, str] | None = None
    null_values: Sequence[str] | None = None
    on_bad_row: str = "fail"
    max_instances: int | None = None
    partitions: int | None = None
    show: Sequence[str] | None = None
    order_col: str | None = None
    csv: bool = False  # the DataFrame is a CSV's text (Spark's CSV reader): kinds by values


def from_command_line(
    text: str, df: Any, inputs: InputOptions, options: RunOptions, spark: SparkOptions, **changes: Any
) -> Arguments:
    """``find``'s arguments as the command line gives them (``--spark`` over a DataFrame
    Spark read, ``--stream``), with ``changes``."""
    given = Arguments(
        text,
        df,
        inputs.type_col,
        inputs.time_col,
        options.engine,
        inputs.time_unit,
        inputs.time_format,
        {column: kind.value for column, kind in inputs.schema} or None,
        inputs.null_values,
        inputs.on_bad_row,
        options.max_instances,
        spark.partitions,
        spark.show,
    )
    return replace(given, **changes)


def prepared(arguments: Arguments) -> tuple[Compiled, InputOptions]:
    """The query compiled, and how the DataFrame is read: the arguments, then the query's
    ``WITH`` for those left None; always sorted by time (a DataFrame has no order to check)."""
    query, schema, null_values = arguments.query, arguments.schema, arguments.null_values
    time_unit, time_format, on_bad_row = arguments.time_unit, arguments.time_format, arguments.on_bad_row
    if not isinstance(query, str):
        raise UsageError("query= is one query's text (cepcli.spark.find evaluates one query at a time)")
    kinds = given_kinds(schema)
    if on_bad_row not in ON_BAD_ROW:
        raise UsageError(f"on_bad_row= is one of {', '.join(map(repr, ON_BAD_ROW))}")
    if null_values is not None and (
        isinstance(null_values, str) or not all(isinstance(v, str) for v in null_values)
    ):
        raise UsageError("null_values= is a list of texts, e.g. null_values=['NA', '-']")
    named = {
        "time_unit": time_unit,
        "time_format": time_format,
        "schema": schema,
        "null_values": null_values,
    }
    given = {"type_col", "time_col", "on_bad_row", *_FILE_OPTIONS} | {
        k for k, v in named.items() if v is not None
    }
    base = InputOptions(
        path=None,
        format="csv" if arguments.csv else None,
        type_col=arguments.type_col,
        time_col=arguments.time_col,
        time_unit=time_unit,
        time_format=time_format,
        null_values=tuple(null_values) if null_values is not None else None,
        schema=kinds,
        on_bad_row=on_bad_row,
    )
    prepared = prepare([QueryText("<query>", query, "<query>")], base, given, has_data=True, named=False)
    return prepared.only, replace(prepared.options, sort=True)


def checked_count(value: int | None, name: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UsageError(f"{name}= is a whole number of at least 1 (got {value!r})")
    return value


def checked_show(show: Sequence[str] | None) -> tuple[str, ...] | None:
    if show is None:
        return None
    if isinstance(show, str) or not all(isinstance(c, str) for c in show):
        raise UsageError("show= is a list of column names, e.g. show=['price']")
    return tuple(show)


def sample_of(
    compiled: Compiled, options: InputOptions, run: RunOptions, sample: pa.Table
) -> tuple[Reading, tuple[str, ...]]:
    """The kinds, the time reading, the engine's order and the types the columns travel in,
    from ``sample`` read locally (a DataFrame's first rows; a stream's one row of its
    types, every kind given, ``cepcli.spark.streams``)."""
    job = Run({compiled.path: compiled}, options, run, data=sample, stats=Stats())
    try:
        schema = job.schema
        spec = job.time_reading
        order = job.order()
        shipped, exact, _ = ship_types(job)  # (uses up the job's pieces: after the order)
    finally:
        job.close()
    given = replace(
        options,
        schema=read_kinds(schema, spec),
        time_format=spec.format,
        row_col=ROW_IDS,
    )
    return Reading(compiled.text, given, schema, shipped, exact, job.source.sample), order


def parts(batches: Iterator[pa.RecordBatch], first_row: int) -> Iterator[pa.Table]:
    """A partition's Arrow batches as tables of up to about ``PART_ROWS`` rows, each with
    its rows' ids (``ROW_IDS``) counted from ``first_row``."""
    import numpy as np
    import pyarrow as pa

    held: list[pa.RecordBatch] = []
    rows = 0

    def table() -> pa.Table:
        nonlocal first_row
        part = pa.Table.from_batches(held)
        ids = pa.array(np.arange(first_row, first_row + part.num_rows, dtype=np.int64))
        first_row += part.num_rows
        return part.append_column(ROW_IDS, ids)

    for batch in batches:
        if batch.num_rows:
            held.append(batch)
            rows += batch.num_rows
        if rows >= PART_ROWS:
            yield table()
            held, rows = [], 0
    if held:
        yield table()
