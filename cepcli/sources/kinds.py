"""Column kinds and the typing of columns by their kind: one rule for every source.

A column's kind comes from the values it holds, never from one row, and a missing value
(an empty cell, a null marker, NaN, a null) never decides it:

* A column of text (CSV, a JSON field of mixed types, a DataFrame column of mixed
  objects) takes the kind most of its present values have, over a fixed sample at the
  start of the input: numbers -> ``int`` when each of them is a whole number that fits
  int64, else ``float``; ``true``/``false`` -> ``bool``; ISO-8601 date-times -> ``time``;
  anything else -> ``str``. So a stray word among numbers is a bad row naming its value
  (not a reason to compare the column as text); a column that is mostly text is text. A
  column with no present value there has no kind (``unknown``); on a pipe, whose sample
  is its first row, such a column is ``pending`` and its first present value decides.
* A typed column (Parquet, Arrow, a DataFrame, a JSON field of one type) has the kind of
  its type (``kind_of_type``): every Arrow type has one, and is read exactly.
* ``--schema`` gives kinds instead.

Typing a column later in the input uses pyarrow's casts; a value that contradicts the
kind is found (values of another shape at once, the others by casting halves) and named,
and its row is a bad row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow
from cepcli.errors import UsageError, flag
from cepcli.events import Kind
from cepcli.sources.text import (
    ARROW_TYPES,
    FAILURES,
    FLOAT_SHAPE,
    ISO_SHAPE,
    NUMBER_SHAPE,
    SHAPES,
    failures,
    markers_read_as,
    missing,
    present_text,
)
from cepcli.sources.times import iso_nanoseconds, native_nanoseconds

SAMPLE_ROWS = 65_536

KIND_NAMES: dict[str, Kind] = {
    "int": Kind.INT,
    "int64": Kind.INT,
    "integer": Kind.INT,
    "float": Kind.FLOAT,
    "float64": Kind.FLOAT,
    "double": Kind.FLOAT,
    "bool": Kind.BOOL,
    "boolean": Kind.BOOL,
    "time": Kind.TIME,
    "timestamp": Kind.TIME,
    "decimal": Kind.DECIMAL,
    "str": Kind.STR,
    "string": Kind.STR,
    "text": Kind.STR,
}

_BOOL_WORDS = pa.array(["true", "false"])
_PLAIN_INT = re.compile(r"-?[0-9]+")


def parse_schema(text: str) -> tuple[tuple[str, Kind], ...]:
    """``--schema col:kind,...`` (kinds: int, float, bool, time, str)."""
    out: list[tuple[str, Kind]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, kind = part.rpartition(":")
        if not sep or not name or kind.strip().lower() not in KIND_NAMES:
            raise UsageError(
                f"{flag('schema')} takes column:kind pairs, kinds int, float, decimal, bool, time or str"
                f" (got {part!r})"
            )
        out.append((name.strip(), KIND_NAMES[kind.strip().lower()]))
    names = [n for n, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"{flag('schema')} names a column twice ({', '.join(twice)})")
    return tuple(out)


def given_kinds(schema: object) -> tuple[tuple[str, Kind], ...]:
    """``schema=`` of ``cepcli.find`` and ``cepcli.spark.find`` (column name -> kind name),
    checked: one line naming the keyword when it is not such a mapping."""
    if schema is None:
        return ()
    if not isinstance(schema, Mapping):
        raise UsageError("schema= maps column names to kinds, e.g. schema={'price': 'float'}")
    kinds: list[tuple[str, Kind]] = []
    for name, kind in schema.items():
        if not isinstance(kind, str) or kind.lower() not in KIND_NAMES:
            raise UsageError(
                f"schema={{{name!r}: {kind!r}}}: the kinds are int, float, decimal, bool, time and str"
            )
        kinds.append((str(name), KIND_NAMES[kind.lower()]))
    return tuple(kinds)


def kind_of_type(type_: pa.DataType) -> Kind:
    """The kind of a typed column (Parquet, JSON, a DataFrame, an Arrow table): every Arrow
    type has one. Integers are ``int`` (uint64 too: its values stay exact), decimals
    ``decimal`` (exact; a whole-number decimal that always fits int64 is ``int``), other
    numbers ``float``; timestamps and dates ``time``, durations ``duration``; text, binary
    (read as UTF-8) and times of day ``str``; nested and other values ``other``."""
    if pa.types.is_dictionary(type_):
        return kind_of_type(type_.value_type)
    if pa.types.is_run_end_encoded(type_):
        return kind_of_type(type_.value_type)
    if pa.types.is_integer(type_):
        return Kind.INT
    if pa.types.is_decimal(type_):
        return Kind.INT if type_.scale == 0 and type_.precision <= 18 else Kind.DECIMAL
    if pa.types.is_floating(type_):
        return Kind.FLOAT
    if pa.types.is_boolean(type_):
        return Kind.BOOL
    if pa.types.is_timestamp(type_) or pa.types.is_date(type_):
        return Kind.TIME
    if pa.types.is_duration(type_):
        return Kind.DURATION
    if pa.types.is_null(type_):
        return Kind.UNKNOWN
    if _texty(type_) or pa.types.is_time(type_):
        return Kind.STR
    return Kind.OTHER


_TEXTS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BYTES = (
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_binary_view,
    pa.types.is_fixed_size_binary,
)


def _texty(type_: pa.DataType) -> bool:
    """Text or bytes (bytes are read as UTF-8 text)."""
    return any(test(type_) for test in (*_TEXTS, *_BYTES))


def infer_kind(values: pa.Array, nulls: pa.Array) -> Kind:
    """The kind of a text column from its sample values (see the module)."""
    present = present_text(values, nulls)
    if not len(present):
        return Kind.UNKNOWN
    return Kind.INT if _plain_ints(present) else kind_by_shapes(present)


def kind_by_shapes(present: pa.Array) -> Kind:
    """The kind of present text values by the shapes most of them have (the module's rule).
    The shapes are read of the distinct values, each counted as often as it occurs: a
    sample of carriers, airports or hours holds some hundreds among 65,536."""
    counted = pc.value_counts(present)
    values = counted.field("values")
    counts: np.ndarray = np.asarray(counted.field("counts").to_numpy(zero_copy_only=False))
    half = len(present) / 2

    def counted_at(where: pa.Array) -> np.ndarray:  # (the counts of the values where it holds)
        at: np.ndarray = counts[np.asarray(where.to_numpy(zero_copy_only=False), dtype=bool)]
        return at

    numbers = pc.match_substring_regex(values, FLOAT_SHAPE)
    if counted_at(numbers).sum() > half:
        return Kind.INT if fits(values.filter(numbers), Kind.INT) else Kind.FLOAT
    if counted_at(pc.is_in(pc.utf8_lower(values), value_set=_BOOL_WORDS)).sum() > half:
        return Kind.BOOL
    shaped = pc.match_substring_regex(values, ISO_SHAPE)
    dates = counted_at(shaped)
    if dates.sum() > half:  # a date-time that does not read (finer than a nanosecond) is a bad value
        unread = dates[_unreadable_times(values.filter(shaped))]
        if dates.sum() - unread.sum() > half:
            return Kind.TIME
    return Kind.STR


def _plain_ints(present: pa.Array) -> bool:
    """The common column of whole numbers, decided by one cast: every value reads as int64
    and none is hexadecimal (which the cast reads and ``INT_SHAPE`` does not). The same
    answer as the shapes give, in a third of the time. A failing cast costs ten times a
    passing one (pyarrow's error), so a column whose first value is no such number is left
    to the shapes at once."""
    if not _PLAIN_INT.fullmatch(present[0].as_py()):
        return False
    try:
        pc.cast(present, pa.int64())
    except FAILURES:
        return False
    return not any(pc.any(pc.match_substring(present, x)).as_py() for x in "xX")


def _unreadable_times(values: pa.Array) -> np.ndarray:
    return iso_nanoseconds(values, arrow(np.zeros(len(values), dtype=bool)))[1]


def fits(values: pa.Array, kind: Kind) -> bool:
    """Do all these text values (none missing) read as ``kind``?"""
    if not pc.all(pc.match_substring_regex(values, SHAPES[kind])).as_py():
        return False
    if kind is Kind.TIME:
        return not len(_unreadable_times(values))
    try:
        cast_text(values, kind)
        return True
    except FAILURES:
        return False


def cast_text(values: pa.Array, kind: Kind) -> pa.Array:
    """Text to ``kind`` (no missing values in it); raises when a value does not fit. Blanks
    around a number and a leading ``+`` are allowed."""
    target = ARROW_TYPES[kind]
    try:
        return pc.cast(values, target)
    except FAILURES:
        if kind is Kind.BOOL:
            raise
        trimmed = pc.replace_substring_regex(pc.utf8_trim_whitespace(values), r"^\+", "")
        return pc.cast(trimmed, target)


def type_text(values: pa.Array, kind: Kind, nulls: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A text column typed by ``kind``: missing values null (a null marker is missing in
    every kind but ``str``), and the positions of the values that contradict the kind (null
    in the result). ``time`` columns become int64 nanoseconds; ``decimal`` ones stay the
    text as written (conditions read it exactly)."""
    if kind is Kind.STR:
        return values, _NONE
    if kind in (Kind.UNKNOWN, Kind.PENDING, Kind.OTHER):
        gone = missing(values, nulls)
        return (
            pc.if_else(gone, pa.scalar(None, pa.string()), values) if pc.any(gone).as_py() else values
        ), _NONE
    if not values.null_count and kind not in (Kind.TIME, Kind.DECIMAL) and not markers_read_as(nulls, kind):
        try:  # most batches: every value reads (a marker or an empty cell would not)
            typed = pc.cast(values, ARROW_TYPES[kind])
            return (nan_as_null(typed) if kind is Kind.FLOAT else typed), _NONE
        except FAILURES:
            pass
    gone = missing(values, nulls)
    if kind is Kind.TIME:
        return iso_nanoseconds(values, gone)
    kept = pc.if_else(gone, pa.scalar(None, pa.string()), values)
    if kind is Kind.DECIMAL:
        shaped = pc.fill_null(pc.match_substring_regex(kept, NUMBER_SHAPE), True)
        bad = np.flatnonzero(~np.asarray(shaped.to_numpy(zero_copy_only=False), dtype=bool))
        return (pc.if_else(shaped, kept, pa.scalar(None, pa.string())) if len(bad) else kept), bad
    try:
        typed = cast_text(kept, kind)
        bad = _NONE
    except FAILURES:
        bad = failures(kept, lambda v: cast_text(v, kind), SHAPES[kind])
        mask = np.zeros(len(kept), dtype=bool)
        mask[bad] = True
        typed = cast_text(pc.if_else(arrow(mask), pa.scalar(None, pa.string()), kept), kind)
    if kind is Kind.FLOAT:
        typed = nan_as_null(typed)
    return typed, bad


class KindMismatch(Exception):
    """A typed column whose type cannot be read as the kind decided for it (a Parquet file
    of a directory that disagrees with the first, a ``--schema`` that does not fit)."""


def type_native(values: pa.Array, kind: Kind) -> tuple[pa.Array, np.ndarray]:
    """A typed column (Parquet, JSON, a DataFrame, an Arrow table) as ``kind``, and the
    positions of the values that do not fit it (null in the result): int64 (uint64 beyond
    int64 stays uint64, exact), float64 (NaN is missing), a decimal as it is, bool, text
    (bytes as UTF-8, invalid bytes as ``\\xNN``), int64 nanoseconds for ``time`` and
    ``duration``; ``other`` (nested) values as they are (made JSON when an event is made).
    Raises ``KindMismatch`` when the type cannot be read as ``kind`` at all."""
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_run_end_encoded(values.type):
        values = pc.run_end_decode(values)
    type_ = values.type
    if kind in (Kind.UNKNOWN, Kind.PENDING) and pa.types.is_null(type_):
        return pa.nulls(len(values), pa.string()), _NONE
    if kind is Kind.OTHER or (kind is Kind.DECIMAL and not _texty(type_)):
        return values, _NONE
    if kind.timed:
        if kind_of_type(type_) is not kind:
            raise KindMismatch(type_)
        out = native_nanoseconds(values)
        return out, _newly_null(values, out)
    if kind in (Kind.STR, Kind.UNKNOWN, Kind.PENDING):
        return as_text(values), _NONE
    if kind is Kind.INT and pa.types.is_uint64(type_):
        over = pc.fill_null(pc.greater(values, pa.scalar(2**63 - 1, pa.uint64())), False)
        return (values if pc.any(over).as_py() else pc.cast(values, pa.int64())), _NONE
    target = ARROW_TYPES[kind]

    def convert(v: pa.Array) -> pa.Array:  # to float: rounded as a float (an int beyond 2^53)
        return pc.cast(v, target, safe=kind is not Kind.FLOAT)

    try:
        typed = convert(values)
        bad = _NONE
    except pa.ArrowNotImplementedError:
        raise KindMismatch(type_) from None
    except FAILURES:
        bad = failures(values, convert)
        mask = np.zeros(len(values), dtype=bool)
        mask[bad] = True
        typed = convert(pc.if_else(arrow(mask), pa.scalar(None, type_), values))
    return (nan_as_null(typed) if kind is Kind.FLOAT else typed), bad


def _newly_null(before: pa.Array, after: pa.Array) -> np.ndarray:
    """Positions null in ``after`` but not in ``before`` (a value that did not fit)."""
    if after.null_count == before.null_count:
        return _NONE
    lost = pc.and_(pc.is_null(after), pc.is_valid(before))
    return np.flatnonzero(np.asarray(lost.to_numpy(zero_copy_only=False), dtype=bool))


def as_text(values: pa.Array) -> pa.Array:
    """Any column as ``string``: text as it is, bytes decoded as UTF-8 (invalid bytes as
    ``\\xNN``), times of day in ISO form, numbers in their shortest text, nested values as
    compact JSON."""
    type_ = values.type
    if pa.types.is_string(type_):
        return values
    try:
        return pc.cast(values, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if any(test(type_) for test in _BYTES):
        return pa.array(
            [None if b is None else b.decode("utf-8", "backslashreplace") for b in values.to_pylist()],
            pa.string(),
        )
    return pa.array(json_texts(values), pa.string())


def python_values(values: pa.Array) -> list[object]:
    """A typed column's values as an event holds them: Python ints, floats, bools, text,
    ``Decimal``s; nested values as their JSON text."""
    if kind_of_type(values.type) is Kind.OTHER:
        return list(json_texts(values))
    return values.to_pylist()  # type: ignore[no-any-return]


def json_texts(values: pa.Array) -> list[str | None]:
    """Each value as compact JSON text (nested values, for output), null where missing.
    Values JSON has no form for (times, bytes) are their text."""
    try:
        items = values.to_pylist()
    except (ValueError, pa.ArrowException):  # a nanosecond time inside: Python's datetime has none
        items = [None if not s.is_valid else str(s) for s in values]
        return [None if i is None else json.dumps(i) for i in items]
    return [None if i is None else json.dumps(i, separators=(",", ":"), default=str) for i in items]


def nan_as_null(values: pa.Array) -> pa.Array:
    """NaN is a missing value (docs/semantics.md section 3), also when it comes out of a reader."""
    nan = pc.is_nan(values)
    if not pc.any(nan).as_py():
        return values
    return pc.if_else(nan, pa.scalar(None, values.type), values)


def describe(kind: Kind) -> str:
    return {
        Kind.INT: "an integer (int64)",
        Kind.FLOAT: "a number (float)",
        Kind.DECIMAL: "a decimal number",
        Kind.BOOL: "a boolean (true/false)",
        Kind.TIME: "an ISO-8601 date-time",
        Kind.DURATION: "a duration",
        Kind.STR: "text",
        Kind.OTHER: "a nested value",
        Kind.UNKNOWN: "unknown",
        Kind.PENDING: "not decided yet",
    }[kind]


_NONE = np.zeros(0, dtype=np.int64)
