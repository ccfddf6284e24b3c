"""Typing a batch: timestamps to int64 nanoseconds, the columns the query reads to their
kinds, and which rows are bad (SPEC section 1: a missing or unreadable time, a value that
contradicts its column's kind).

Columns the query does not read keep what the reader gave (text for CSV) and are typed
when a match is written; the time column keeps its text too (``Event.ts`` has its value),
so a match shows the time as the input wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.events import Kind, Schema
from cepcli.sources.batches import RawBatch
from cepcli.sources.kinds import FLOAT_SHAPE, describe, fits, type_native, type_text
from cepcli.sources.times import TimeSpec, nanoseconds, time_problem

_TEXT = (Kind.STR, Kind.UNKNOWN)


@dataclass(slots=True)
class Plan:
    """How the batches of one input are typed. ``kinds`` may widen on a stream (a column
    of whole numbers meeting a fraction becomes float from there on)."""

    schema: Schema
    kinds: list[Kind]
    typed: frozenset[str]  # columns typed here (text formats: those the query reads)
    time: TimeSpec
    nulls: pa.Array
    null_set: frozenset[str]
    text: bool
    streaming: bool
    sample: str  # where the kinds came from, for messages
    widened: list[str]  # warnings about columns widened on a stream


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

    def take(self, keep: np.ndarray) -> TypedBatch:
        """The rows where ``keep`` (a boolean mask) holds."""
        mask = pa.array(keep)
        return TypedBatch(
            self.rows[keep],
            self.ts[keep],
            self.types.filter(mask),
            [c.filter(mask) for c in self.columns],
            self.time_text.filter(mask),
            self.bad[keep],
        )


def type_batch(raw: RawBatch, plan: Plan) -> TypedBatch:
    schema = plan.schema
    columns = raw.columns
    text = plan.text if raw.text is None else raw.text
    time_at = schema.index(schema.time_col)
    ts, bad = nanoseconds(columns[time_at], plan.time, plan.nulls)
    why: dict[int, str] = {}
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        why[first] = time_problem(columns[time_at][first].as_py(), plan.time, schema.time_col, plan.null_set)
    typed: list[pa.Array] = []
    for i, (name, column) in enumerate(zip(schema.columns, columns, strict=True)):
        if not text and not (pa.types.is_string(column.type) and plan.kinds[i] not in _TEXT):
            typed.append(type_native(column, plan.kinds[i]))
        elif name == schema.time_col:
            typed.append(column)
        elif name in plan.typed or not text:
            values, wrong = type_text(column, plan.kinds[i], plan.nulls)
            if len(wrong) and plan.streaming and plan.kinds[i] is Kind.INT:
                values, wrong = _widen(column, i, wrong, plan, raw)
            if len(wrong):
                bad[wrong] = True
                first = int(wrong[0])
                why.setdefault(first, _contradiction(name, column[first].as_py(), plan, i))
            typed.append(values)
        else:
            typed.append(column)
    types = columns[schema.index(schema.type_col)]
    if types.type != pa.string():
        types = pc.cast(
            types.dictionary_decode() if pa.types.is_dictionary(types.type) else types, pa.string()
        )
    first_why = why[min(why)] if why else None
    text = columns[time_at]
    return TypedBatch(raw.rows, ts, types, typed, text, bad, first_why)


def _contradiction(name: str, value: object, plan: Plan, i: int) -> str:
    """Why a value is bad, and the fix: the kind the column would need."""
    kind = plan.kinds[i]
    number = isinstance(value, str) and re.match(FLOAT_SHAPE, value) is not None
    wider, what = ("float", "a number") if kind is Kind.INT and number else ("str", "text")
    return (
        f"column {name!r} holds {value!r}, which is not {describe(kind)} (the column's kind, read"
        f" from {plan.sample}; to read it as {what}, give --schema {name}:{wider})"
    )


def _widen(
    column: pa.Array, i: int, wrong: np.ndarray, plan: Plan, raw: RawBatch
) -> tuple[pa.Array, np.ndarray]:
    """On a stream, a column of whole numbers that meets a fraction becomes float."""
    values = column.take(pa.array(wrong))
    present = pc.filter(values, pc.invert(pc.is_in(values, value_set=plan.nulls)))
    if not fits(present, Kind.FLOAT):
        return type_text(column, Kind.INT, plan.nulls)
    plan.kinds[i] = Kind.FLOAT
    name = plan.schema.columns[i]
    plan.widened.append(
        f"column {name!r} holds fractions from row {int(raw.rows[int(wrong[0])])} on: read as float from"
        f" there (give --schema {name}:float to read it as float from the start)"
    )
    return type_text(column, Kind.FLOAT, plan.nulls)


def time_shown(value: pa.Scalar) -> object:
    """A time as read, for messages and reports: text and numbers as they are, a native
    time (Parquet, Arrow, a DataFrame) as its ISO-like text, never a Python repr."""
    plain = value.as_py()
    return plain if plain is None or isinstance(plain, str | int | float) else str(plain)
