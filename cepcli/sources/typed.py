"""Typing a batch: timestamps to int64 nanoseconds, the columns the query reads to their
kinds, and which rows are bad (a missing or unreadable time, a value that contradicts its
column's kind).

Columns the query does not read keep what the reader gave (text for CSV) and are typed
when a match is written; the time column keeps its text too (``Event.ts`` has its value),
so a match shows the time as the input wrote it.

On a pipe a column may not have a kind yet (``Kind.PENDING``: no present value so far);
the first batch that holds a present value decides it from that value (and a pipe's time
column likewise decides how times are read). Decisions go into the typer and into the
schema's ``decided`` kinds, which the writers read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow
from cepcli.clock import RANGE, iso_text
from cepcli.errors import InputError, flag
from cepcli.events import Kind, Schema
from cepcli.sources.batches import RawBatch
from cepcli.sources.kinds import (
    KindMismatch,
    cast_text,
    describe,
    infer_kind,
    kind_of_type,
    type_native,
    type_text,
)
from cepcli.sources.text import FLOAT_SHAPE, failures, missing
from cepcli.sources.times import TimeSpec, decide, nanoseconds, native_nanoseconds, time_problem

_LONG_INT = r"^\s*[+-]?\d{16,}\s*$"  # whole numbers a float64 may not hold exactly


@dataclass(slots=True)
class Typing:
    """How the batches of one input are typed. ``kinds`` change on a stream: a column with
    no value yet is decided by its first present value, and a column of whole numbers that
    meets a fraction becomes float from there on."""

    schema: Schema
    kinds: list[Kind]
    typed: frozenset[str]  # columns typed here (text formats: those the query reads)
    time: TimeSpec
    nulls: pa.Array
    null_set: frozenset[str]
    text: bool
    streaming: bool
    sample: str  # where the kinds came from, for messages
    # text columns a typed input holds as a dictionary, kept so until the rows some variable
    # can use are taken (``TypedBatch.take``): those only conditions of two variables read
    # (the prefilter reads plain text); decoding every row's string costs most of a column
    coded: frozenset[str] = frozenset()
    warnings: list[str] = field(default_factory=list)  # said once each (the stats keep them)
    origins: dict[int, str] = field(default_factory=dict)  # where a decided kind came from
    warned: set[str] = field(default_factory=set)  # columns warned about


@dataclass(slots=True)
class TypedBatch:
    """A batch with its timestamps, types and columns (one per schema column), and its
    bad rows with why the first of them is bad."""

    rows: np.ndarray
    ts: np.ndarray
    types: pa.Array
    columns: list[pa.Array]
    time_text: pa.Array  # the time column as read, for messages
    bad: np.ndarray
    first_why: str | None = None  # why the first bad row is bad
    decimals: frozenset[int] = frozenset()  # columns of decimal text: events hold ``Decimal``s
    # columns of a typed format the query does not read, left as read: typed (with their
    # kind) only for the rows that become events (``rows.make_events``)
    pending: tuple[tuple[int, Kind], ...] = ()
    coded: frozenset[int] = frozenset()  # text columns still a dictionary (``Typing.coded``)

    def take(self, keep: np.ndarray) -> TypedBatch:
        """The rows where ``keep`` (a boolean mask) holds: by their positions (numpy's
        boolean indexing of a sparse mask costs 8x a take of its positions, Arrow's filter
        3x its take), each distinct array once (the type column is also a column)."""
        return self.at(np.flatnonzero(keep))

    def at(self, at: np.ndarray) -> TypedBatch:
        """The rows at positions ``at`` (int64, ascending), as ``take``."""
        positions = arrow(at)
        taken: dict[int, pa.Array] = {}

        def of(values: pa.Array) -> pa.Array:
            key = id(values)
            if key not in taken:
                taken[key] = values.take(positions)
            return taken[key]

        columns = [of(c) for c in self.columns]
        for i in self.coded:  # (typed as text now, as ``type_batch`` would: the rows kept only)
            columns[i] = type_native(columns[i], Kind.STR)[0]
        return TypedBatch(
            self.rows[at],
            self.ts[at],
            of(self.types),
            columns,
            of(self.time_text),
            self.bad[at],
            None,
            self.decimals,
            self.pending,
        )


def decimals(text: pa.Array) -> list[object]:
    """Decimal text (checked by its shape) as ``Decimal``s: exact, equal and hashed as the
    numbers they are (``0.10`` is ``0.1``), printed as written."""
    return [None if v is None else Decimal(v) for v in text.to_pylist()]


def type_batch(raw: RawBatch, typer: Typing, name: str = "<input>") -> TypedBatch:
    """One batch typed by ``typer``; ``name`` (the input's) for errors of the whole input."""
    schema = typer.schema
    columns = raw.columns
    text = typer.text if raw.text is None else raw.text
    time_at = schema.index(schema.time_col)
    if typer.time.how == "pending":
        _decide_time(columns[time_at], typer)
    ts, bad = nanoseconds(columns[time_at], typer.time, typer.nulls)
    why: dict[int, str] = {}
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        why[first] = time_problem(
            columns[time_at][first].as_py(), typer.time, schema.time_col, typer.null_set
        )
    typed: list[pa.Array] = []
    pending: list[tuple[int, Kind]] = []
    shaped: set[int] = set()  # text columns typed here (a decimal's shape checked, markers gone)
    coded: set[int] = set()  # text columns left a dictionary (``Typing.coded``)
    for i, (column_name, column) in enumerate(zip(schema.columns, columns, strict=True)):
        if typer.kinds[i] is Kind.PENDING:
            _decide(column, i, typer, raw)
        kind = typer.kinds[i]
        native = not text and not (pa.types.is_string(column.type) and kind is not Kind.STR)
        if native and column_name not in typer.typed and not typer.streaming:
            values, wrong = column, np.zeros(0, dtype=np.int64)  # typed when an event is made
            pending.append((i, kind))
        elif native and kind is Kind.STR and column_name in typer.coded and _text_dictionary(column.type):
            values, wrong = column, np.zeros(0, dtype=np.int64)  # (decoded when the rows are taken)
            coded.add(i)
        elif native:
            try:
                values, wrong = type_native(column, kind)
            except KindMismatch:
                raise InputError(
                    f"column {column_name!r} is {column.type} here, which cannot be read as"
                    f" {describe(kind)} (the column's kind, from {_origin(typer, i)})",
                    filename=name,
                ) from None
        elif column_name == schema.time_col:
            values, wrong = column, np.zeros(0, dtype=np.int64)
        elif column_name in typer.typed or typer.streaming:
            values, wrong = type_text(column, kind, typer.nulls)
            shaped.add(i)
            if len(wrong) and typer.streaming and kind is Kind.INT:
                values, wrong = _widen(column, i, wrong, typer, raw)
            if column_name not in typer.typed:
                values, wrong = _unread(column, values, wrong)
            elif typer.kinds[i] is Kind.FLOAT and column_name not in typer.warned:
                _warn_inexact(column, i, typer, raw)
        else:
            values, wrong = column, np.zeros(0, dtype=np.int64)
        if len(wrong):
            bad[wrong] = True
            first = int(wrong[0])
            why.setdefault(first, _contradiction(column_name, column[first], typer, i, native))
        typed.append(values)
    types = columns[schema.index(schema.type_col)]
    if types.type != pa.string() and not _text_dictionary(types.type):  # (a dictionary: as it is)
        types = pc.cast(
            types.dictionary_decode() if pa.types.is_dictionary(types.type) else types, pa.string()
        )
    first_why = why[min(why)] if why else None
    text_decimals = frozenset(
        i
        for i, (k, c) in enumerate(zip(typer.kinds, typed, strict=True))
        if k is Kind.DECIMAL and pa.types.is_string(c.type) and i in shaped
    )  # (an unread column's text stays text, typed when written, as every kind's)
    return TypedBatch(
        raw.rows,
        ts,
        types,
        typed,
        columns[time_at],
        bad,
        first_why,
        text_decimals,
        tuple(pending),
        frozenset(coded),
    )


def _text_dictionary(type_: pa.DataType) -> bool:
    return bool(pa.types.is_dictionary(type_) and pa.types.is_string(type_.value_type))


def _unread(column: pa.Array, values: pa.Array, wrong: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """A column the query does not read, typed on a pipe for its kind's sake: a value that
    does not fit stays the text it was (not a bad row: only columns the query reads make
    bad rows, as in a file)."""
    if not len(wrong):
        return values, wrong
    return column, np.zeros(0, dtype=np.int64)


def _decide(column: pa.Array, i: int, typer: Typing, raw: RawBatch) -> None:
    """A pipe's column without a kind takes the kind of its first present value."""
    if pa.types.is_null(column.type):
        return
    if not pa.types.is_string(column.type):  # a typed format: its type says
        kind = kind_of_type(column.type)
        at = 0
    else:
        present = np.flatnonzero(~np.asarray(missing(column, typer.nulls).to_numpy(zero_copy_only=False)))
        if not len(present):
            return
        at = int(present[0])
        kind = infer_kind(column.slice(at, 1), typer.nulls)
        if kind is Kind.TIME:  # conditions are compiled before it arrives: read as text
            kind = Kind.STR
            name = typer.schema.columns[i]
            typer.warnings.append(
                f"column {name!r} had no value in the pipe's first row, and its first value"
                f" {column[at].as_py()!r} (row {int(raw.rows[at])}) is a date-time: it is read as text"
                f" (give --schema {name}:time to read it as a time)"
            )
    typer.kinds[i] = kind
    typer.schema.decided[i] = kind
    typer.origins[i] = f"its first value, row {int(raw.rows[at])} (on a pipe, a column's first value)"


def _decide_time(column: pa.Array, typer: Typing) -> None:
    """A pipe whose time column had no value in its first row: its first present time
    decides how times are read (a number, or ISO-8601)."""
    if pa.types.is_string(column.type) and not pc.any(pc.invert(missing(column, typer.nulls))).as_py():
        return
    typer.time = decide(column, typer.nulls, typer.time.unit, typer.time.format)


def _origin(typer: Typing, i: int) -> str:
    return typer.origins.get(i, typer.sample)


def _contradiction(name: str, scalar: pa.Scalar, typer: Typing, i: int, native: bool) -> str:
    """Why a value is bad, and the fix: the kind the column would need."""
    kind = typer.kinds[i]
    value = time_shown(scalar)
    if native and kind.timed:
        return f"column {name!r} holds {value!r}, which is out of range: times must lie {RANGE}"
    number = isinstance(value, str) and re.match(FLOAT_SHAPE, value) is not None
    if kind is Kind.INT and number and re.match(r"^\s*[+-]?\d+\s*$", str(value)):
        wider, what = "decimal", "an exact number"  # a whole number beyond int64
    elif kind is Kind.INT and (number or isinstance(value, float)):
        wider, what = "float", "a number"
    else:
        wider, what = "str", "text"
    return (
        f"column {name!r} holds {value!r}, which is not {describe(kind)} (the column's kind, read"
        f" from {_origin(typer, i)}; to read it as {what}, give {flag('schema', f'{name}:{wider}')})"
    )


def _widen(
    column: pa.Array, i: int, wrong: np.ndarray, typer: Typing, raw: RawBatch
) -> tuple[pa.Array, np.ndarray]:
    """On a stream, a column of whole numbers that meets a fraction becomes float, from the
    first one on; the values that are no numbers (a stray word read in the same piece) stay
    bad rows, however the rows fall into reads."""
    values = column.take(arrow(wrong))
    numbers = np.ones(len(wrong), dtype=bool)
    numbers[failures(values, lambda v: cast_text(v, Kind.FLOAT), FLOAT_SHAPE)] = False
    if not numbers.any():
        return type_text(column, Kind.INT, typer.nulls)
    wrong = wrong[numbers]
    typer.kinds[i] = Kind.FLOAT
    typer.schema.decided[i] = Kind.FLOAT
    name = typer.schema.columns[i]
    typer.warnings.append(
        f"column {name!r} holds fractions from row {int(raw.rows[int(wrong[0])])} on: read as float from"
        f" there (give --schema {name}:float to read it as float from the start)"
    )
    return type_text(column, Kind.FLOAT, typer.nulls)


def _warn_inexact(column: pa.Array, i: int, typer: Typing, raw: RawBatch) -> None:
    """A float column of text whose whole numbers a float64 cannot hold exactly (beyond
    2^53: ids, nanoseconds) is said once, with the first such value and the fix."""
    long = pc.fill_null(pc.match_substring_regex(column, _LONG_INT), False)
    for at in np.flatnonzero(np.asarray(long.to_numpy(zero_copy_only=False), dtype=bool)):
        text = column[int(at)].as_py()
        if Decimal(float(text)) != Decimal(text.strip()):
            name = typer.schema.columns[i]
            typer.warned.add(name)
            typer.warnings.append(
                f"column {name!r} holds whole numbers and fractions, so it is read as float, and"
                f" {text.strip()} (row {int(raw.rows[int(at)])}) is not exactly a float: it compares and"
                f" prints as {float(text)!r} (give --schema {name}:decimal to keep every value exact)"
            )
            return


def time_shown(value: pa.Scalar | object) -> object:
    """A value as read, for messages and reports: text and numbers as they are, a native
    time (Parquet, Arrow, a DataFrame) as its ISO-like text, never a Python repr. (A value
    shown already, not a scalar, as it is: a time floor from a report.)"""
    if not isinstance(value, pa.Scalar):
        return value
    if pa.types.is_timestamp(value.type) or pa.types.is_date(value.type):
        ns = native_nanoseconds(pa.array([value], value.type))[0].as_py()
        return None if ns is None else iso_text(ns)
    if pa.types.is_duration(value.type):
        return None if not value.is_valid else f"{value.value} {value.type.unit}"
    plain = value.as_py()
    return plain if plain is None or isinstance(plain, str | int | float) else str(plain)
