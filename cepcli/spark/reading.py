"""An executor reads one split with the local reader, and keeps the rows some variable can
use (no pyspark here: this runs inside Spark's Python workers, and in the tests).

The split is read exactly as the local run reads the file (``Run.pieces``, with the column
kinds and time reading the driver decided from the file's sample), so quoting, null
markers, kinds, time parsing, the columns typed and bad rows are the local run's. What
comes out is one Arrow table of the kept rows a variable can use, each column holding what
the local run's typed pieces hold, in a type Spark carries (``ship_types``: decimals as
their exact text, nested values as their JSON text), so that the shards make the local
events from it (``cepcli.sources.rows``); and three more columns (row id, time in
nanoseconds, variable mask), and a report: the rows kept,
the bad rows and the first of them, and the first and latest kept times, from which the
driver chains the time-order check across splits (``cepcli.spark.scan``), and up to
``TIME_SAMPLE`` of the kept rows' times, evenly spaced, from which it cuts the time shards
(no Spark job of its own for the quantiles).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import sorted_distinct
from cepcli.errors import InputError, flag
from cepcli.events import Kind, Schema
from cepcli.prepare import Compiled, compile_text
from cepcli.run import Run
from cepcli.runtime.stats import Stats
from cepcli.sources.kinds import as_text, json_texts, kind_of_type
from cepcli.sources.options import InputOptions
from cepcli.sources.parquet import ParquetReader
from cepcli.sources.rows import typed_columns
from cepcli.sources.text import ARROW_TYPES
from cepcli.sources.times import TimeSpec
from cepcli.sources.typed import time_shown
from cepcli.spark.splits import Split

ROW, TS, MASK = "__cepcli_row", "__cepcli_ts", "__cepcli_mask"
TIME_SAMPLE = 512  # kept rows' times per split report, for the shards' bounds


@dataclass(frozen=True, slots=True)
class Reading:
    """What every executor needs to read its split, as plain data (compiled there)."""

    query: str
    inputs: InputOptions  # with the file's columns and kinds, and the time reading, given
    schema: Schema
    ship: tuple[tuple[str, str], ...]  # column -> Arrow type name it travels as
    decimals: frozenset[int]  # the columns (by position) of exact decimals, travelling as text
    sample: str  # where the kinds came from (the driver's sample), for messages
    queries: tuple[str, ...] = ()  # several queries read at once (``cepcli.run.rebit``: each its bits)
    # Parquet evaluated by the columnar engine: the columns no condition reads, which the
    # splits leave unread (nulls) and the shards fetch for the matched rows (``Fetch``), from
    # these files (each with the row id of its first row), typed as the sample's ``pending``
    away: tuple[str, ...] = ()
    files: tuple[tuple[str, int], ...] = ()
    pending: tuple[tuple[int, Kind], ...] = ()


def read_kinds(schema: Schema, spec: TimeSpec) -> tuple[tuple[str, Kind], ...]:
    """The kinds every part of the input is read with: the sample's, but a time column of
    text read as ISO-8601 given as a time, so that every part reads it so (a JSON field
    of text is a ``str`` column, and a part's own values could look like numbers)."""
    return tuple(
        (name, Kind.TIME if name == schema.time_col and spec.how == "iso" else kind)
        for name, kind in zip(schema.columns, schema.kinds, strict=True)
    )


def ship_types(
    job: Run,
) -> tuple[tuple[tuple[str, str], ...], frozenset[int], tuple[tuple[int, Kind], ...]]:
    """The type each column travels in, and the columns of decimals, from the first piece of
    the job's input typed as the local run types it (the driver's sample, already read; the
    job's pieces are used up): text as text (a column the query does not read keeps the text
    the input wrote, as locally; so does a time column of text), integers as int64, floats,
    booleans, times and durations as int64 nanoseconds, decimals as their exact text, nested
    values as their JSON text. With no row in the sample, by the kinds: the columns the query
    reads as their kind's type, the others as text. Also the columns a typed format leaves
    as read, typed by their kind when an event is made (``typed_columns``)."""
    schema = job.schema
    piece = None
    with contextlib.suppress(InputError):  # the executors meet it, where it is
        piece = next(job.pieces(stats=Stats()), None)
    if piece is None:
        read = job.typed | job.prefilter.columns
        native = job.time_reading.how == "native"
        out = []
        for name, kind in zip(schema.columns, schema.kinds, strict=True):
            if name == schema.time_col:
                out.append((name, "int64" if native else "string"))
            elif kind.timed and name in read:
                out.append((name, "int64"))
            else:
                out.append((name, str(ARROW_TYPES.get(kind, pa.string())) if name in read else "string"))
        exact = frozenset(
            i for i, k in enumerate(schema.kinds) if k is Kind.DECIMAL and schema.columns[i] in read
        )
        return tuple(out), exact, ()
    batch = piece[0]
    columns = typed_columns(batch.columns, batch.pending)
    types = tuple((name, _ship_type(c.type)) for name, c in zip(schema.columns, columns, strict=True))
    exact = frozenset(batch.decimals) | {
        i for i, c in enumerate(batch.columns) if pa.types.is_decimal(c.type)
    }
    return types, exact, batch.pending


def _ship_type(type_: pa.DataType) -> str:
    if pa.types.is_integer(type_) or pa.types.is_timestamp(type_) or pa.types.is_duration(type_):
        return "int64"
    if pa.types.is_floating(type_):
        return "double"
    if pa.types.is_boolean(type_):
        return "bool"
    return "string"


def arrow_schema(reading: Reading) -> pa.Schema:
    fields = [pa.field(name, _TYPES[t]) for name, t in reading.ship]
    return pa.schema(
        [*fields, pa.field(ROW, pa.int64()), pa.field(TS, pa.int64()), pa.field(MASK, pa.int64())]
    )


_TYPES = {"int64": pa.int64(), "double": pa.float64(), "bool": pa.bool_(), "string": pa.string()}


def reader(reading: Reading, options: InputOptions, stats: Stats) -> Run:
    """The local reader of one split: the query's ``Run`` (with several queries, one mask
    per row for all of them)."""
    if not reading.queries:
        return Run({"<query>": compile_text(reading.query, "<query>", options.unit)}, options, stats=stats)
    compiled = [
        (f"q{i}", compile_text(text, "<query>", options.unit)) for i, text in enumerate(reading.queries)
    ]
    return Run(dict(compiled), options, stats=stats)


def read_split(
    reading: Reading, split: Split, floor: tuple[int, object, int] | None = None
) -> tuple[pa.Table, dict[str, Any]]:
    """The split's rows that some variable can use (``arrow_schema``), and its report."""
    started = time.time()
    inputs = reading.inputs
    if split.start < 0:  # a compressed file, read whole with its header (the columns come from it)
        columns = None if inputs.header else inputs.columns
        options = replace(inputs, path=split.path, columns=columns, split=(-1, -1, split.first_row))
    else:
        options = replace(
            inputs, path=split.path, header=False, split=(split.start, split.stop, split.first_row)
        )
    if reading.away:  # (Parquet: and read ahead by a thread)
        options = replace(options, only=tuple(c for c in reading.schema.columns if c not in reading.away))
    stats = Stats()
    job = reader(reading, options, stats)
    job.source.sample = reading.sample  # the kinds are the driver's, for messages
    target = arrow_schema(reading)
    pieces: list[pa.Table] = []
    first: tuple[int, object, int] | None = None
    latest: list[tuple[int, object, int] | None] = []
    least: int | None = None  # the earliest time kept (with --max-delay, not the first's)
    bad: tuple[int, str] | None = None
    try:
        for kept, masks, error in job.pieces(floor, latest=latest):
            if len(kept.rows):
                if first is None:
                    first = (int(kept.ts[0]), time_shown(kept.time_text[0]), int(kept.rows[0]))
                earliest = int(kept.ts.min())
                least = earliest if least is None else min(least, earliest)
            relevant = np.flatnonzero(masks != 0)
            if len(relevant):
                pieces.append(_table(kept, masks, relevant, reading, target))
            if error is not None:
                bad = (int(error.row if error.row is not None else split.first_row), error.message)
    except InputError as err:  # an error of the whole file: the driver reports it as is
        return target.empty_table(), _report(split, stats, started, None, None, None, err)
    finally:
        job.close()
    if stats.first_bad_row is not None and bad is None:
        bad = stats.first_bad_row
    table = pa.concat_tables(pieces) if pieces else target.empty_table()
    last = latest[0] if latest and first is not None else None
    if last is not None:  # (the time as read, shown: the report is JSON)
        last = (last[0], time_shown(last[1]), last[2])
    report = _report(split, stats, started, first, last, bad, None, relevant=table.num_rows)
    report["least"] = least
    times = table.column(TS).to_numpy()
    at = np.linspace(0, len(times) - 1, min(len(times), TIME_SAMPLE)).round().astype(np.int64)
    report["times"] = [int(t) for t in times[at]]
    return table, report


def read_table(
    reading: Reading, table: pa.Table, compiled: Compiled | None = None
) -> tuple[pa.Table, dict[str, Any]]:
    """Part of a DataFrame (``cepcli.spark.frames``), read as ``read_split`` reads a split:
    ``table`` holds its rows as Arrow, with their row ids in the column
    ``reading.inputs.row_col``. Its rows some variable can use (``arrow_schema``), and a
    report: the rows read, the bad rows and the first of them, the rows kept and up to
    ``TIME_SAMPLE`` of their times, the latest time of any row read (``latest``: a stream's
    watermark follows every row), or the error that stopped the reading (``error``)."""
    started = time.time()
    stats = Stats()
    target = arrow_schema(reading)
    pieces: list[pa.Table] = []
    bad: tuple[int, str] | None = None
    failure: InputError | None = None
    latest: int | None = None  # the latest time of a row read (kept or not)
    ids = table.column(reading.inputs.row_col) if reading.inputs.row_col else None
    first_row = int(ids[0].as_py()) if ids is not None and len(ids) else 0
    try:
        if compiled is None:
            compiled = compile_text(reading.query, "<query>", reading.inputs.unit)
        job = Run({compiled.path: compiled}, reading.inputs, data=table, stats=stats)
    except InputError as err:
        failure = err
    else:
        job.source.sample = reading.sample  # the kinds are the driver's, for messages
        try:
            for kept, masks, error in job.pieces():
                if len(kept.ts):
                    top = int(kept.ts.max())
                    latest = top if latest is None else max(latest, top)
                relevant = np.flatnonzero(masks != 0)
                if len(relevant):
                    pieces.append(_table(kept, masks, relevant, reading, target))
                if error is not None:
                    bad = (int(error.row if error.row is not None else first_row), error.message)
        except InputError as err:  # an error of the whole part (a column Spark cannot carry)
            failure = err
        finally:
            job.close()
    if failure is not None:
        report = {"rows": table.num_rows, "bad_rows": 0, "bad": None, "relevant": 0, "times": []}
        report["error"] = [failure.message, failure.row, failure.filename]
        return target.empty_table(), report
    if stats.first_bad_row is not None and bad is None:
        bad = stats.first_bad_row
    kept_rows = pa.concat_tables(pieces) if pieces else target.empty_table()
    times = kept_rows.column(TS).to_numpy()
    at = np.linspace(0, len(times) - 1, min(len(times), TIME_SAMPLE)).round().astype(np.int64)
    report = {
        "rows": table.num_rows,
        "bad_rows": stats.bad_rows,
        "bad": list(bad) if bad else None,
        "relevant": kept_rows.num_rows,
        "times": [int(t) for t in times[at]],
        "latest": latest,
        "error": None,
        "prefilter_evaluations": stats.prefilter_evaluations,
        "seconds": time.time() - started,
    }
    return kept_rows, report


def _table(kept: Any, masks: np.ndarray, at: np.ndarray, reading: Reading, target: pa.Schema) -> pa.Table:
    take = pa.array(at, pa.int64())
    taken = typed_columns([column.take(take) for column in kept.columns], kept.pending)
    columns = [ship_column(v, name, t) for v, (name, t) in zip(taken, reading.ship, strict=True)]
    columns += [pa.array(kept.rows[at]), pa.array(kept.ts[at]), pa.array(masks[at])]
    return pa.Table.from_arrays(columns, schema=target)


def ship_column(values: pa.Array, name: str, type_name: str) -> pa.Array:
    """A typed column (as an event holds its values) in the type it travels in (``ship``)."""
    want = _TYPES[type_name]
    if want == pa.string():
        # as an event holds it (``cepcli.sources.rows``): nested values as their JSON
        nested = kind_of_type(values.type) is Kind.OTHER
        return pa.array(json_texts(values), pa.string()) if nested else as_text(values)
    if values.type == want:
        return values
    try:
        return pc.cast(values, want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if pa.types.is_unsigned_integer(values.type):
            raise InputError(
                f"column {name!r} holds integers beyond int64, which --spark cannot carry: run"
                " without --spark"
            ) from None
        raise InputError(  # a JSON field of one type in the sample, and of another here
            f"column {name!r} holds {values.type} values here where the sample had {want},"
            f" which --spark cannot carry: give {flag('schema', f'{name}:str')}, or run without --spark"
        ) from None


class Fetch:
    """The columns the splits left unread (``Reading.away``) of some rows, as the splits
    would have shipped them: read from the Parquet files by their row ids
    (``ParquetReader.fetch``, a row group at a time, kept while the calls come in file
    order), typed as the sample's pending columns, then as they travel (``ship_column``)."""

    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.bases = np.array([base for _, base in reading.files], dtype=np.int64)
        self.readers: dict[int, ParquetReader] = {}
        schema = reading.schema
        self.at = [schema.index(name) for name in reading.away]
        self.pending = dict(reading.pending)

    def __call__(self, rows: np.ndarray) -> dict[int, pa.Array]:
        """The unread columns (by their positions in the schema) of the rows ``rows``."""
        reading = self.reading
        which = np.searchsorted(self.bases, rows, side="right") - 1
        pieces: list[list[pa.Array]] = [[] for _ in self.at]
        order = np.argsort(which, kind="stable")
        for f in sorted_distinct(which).tolist():
            for piece, column in zip(pieces, self._reader(f).fetch(rows[which == f]), strict=True):
                piece.append(column)
        back = pa.array(np.argsort(order, kind="stable"), pa.int64())  # to the rows' order
        out = {}
        for i, piece in zip(self.at, pieces, strict=True):
            values = pa.concat_arrays(piece).take(back) if len(piece) > 1 else piece[0]
            if i in self.pending:
                values = typed_columns([values], [(0, self.pending[i])])[0]
            name, type_name = reading.ship[i]
            out[i] = ship_column(values, name, type_name)
        return out

    def _reader(self, f: int) -> ParquetReader:
        reader = self.readers.get(f)
        if reader is None:
            path, base = self.reading.files[f]
            options = replace(self.reading.inputs, path=path, split=(-1, -1, base))
            reader = self.readers[f] = ParquetReader(options)
            away = reader.project(set(self.reading.schema.columns) - set(self.reading.away))
            if away != list(self.reading.away):
                raise InputError(
                    f"its columns are {', '.join(reader.columns)}, not those of the first file",
                    filename=path,
                )
        return reader

    def close(self) -> None:
        for reader in self.readers.values():
            reader.close()


def _report(
    split: Split,
    stats: Stats,
    started: float,
    first: tuple[int, object, int] | None,
    last: tuple[int, object, int] | None,
    bad: tuple[int, str] | None,
    error: InputError | None,
    relevant: int = 0,
) -> dict[str, Any]:
    return {
        "path": split.path,
        "start": split.start,
        "first_row": split.first_row,
        "rows": stats.events,
        "bad_rows": stats.bad_rows,
        "bad": list(bad) if bad else None,
        "first": list(first) if first else None,
        "last": list(last) if last else None,
        "error": [error.message, error.row, error.filename] if error else None,
        "relevant": relevant,
        "prefilter_evaluations": stats.prefilter_evaluations,
        "seconds": time.time() - started,
        "began": started,
        "ended": time.time(),
    }
