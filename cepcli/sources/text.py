"""Text values as the readers give them: the null markers, the shapes of the values the
casts read, which values are missing, and finding the values a cast cannot take. Shared by
the typing of columns (``kinds``) and of times (``times``)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow
from cepcli.events import Kind

# The markers pandas and pyarrow read as missing, by default (docs/semantics.md section 3).
DEFAULT_NULLS = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
)

ARROW_TYPES: dict[Kind, pa.DataType] = {
    Kind.INT: pa.int64(),
    Kind.FLOAT: pa.float64(),
    Kind.BOOL: pa.bool_(),
    Kind.STR: pa.string(),
}

FAILURES = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
# The shapes of values the casts can read (a value of another shape is bad at once; one of
# the shape that still fails, such as an int64 overflow, is found by casting halves).
INT_SHAPE = r"^\s*[+-]?\d+\s*$"
NUMBER_SHAPE = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
FLOAT_SHAPE = r"(?i)^\s*[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|inf|infinity|nan)\s*$"
ISO_SHAPE = r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}(:\d{2}(:\d{2}([.,]\d+)?)?)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$"
BOOL_SHAPE = r"(?i)^\s*(true|false|1|0)\s*$"
SHAPES = {
    Kind.INT: INT_SHAPE,
    Kind.FLOAT: FLOAT_SHAPE,
    Kind.DECIMAL: NUMBER_SHAPE,
    Kind.BOOL: BOOL_SHAPE,
    Kind.TIME: ISO_SHAPE,
}


def missing(values: pa.Array, nulls: pa.Array) -> pa.Array:
    """Where a text column's values are missing: null, or one of the markers."""
    marked = pc.is_in(values, value_set=nulls)
    return pc.or_kleene(marked, pc.is_null(values)) if values.null_count else marked


def present_text(values: pa.Array, nulls: pa.Array) -> pa.Array:
    """The text values that are not missing."""
    return pc.filter(values, pc.invert(missing(values, nulls)))


def failures(values: pa.Array, convert: Callable[[pa.Array], object], shape: str | None = None) -> np.ndarray:
    """The positions of the (non-null) values ``convert`` cannot take: those not of
    ``shape`` at once, then the others by converting halves (a handful of casts per bad
    value of the right shape, such as an int64 overflow; none when all fit)."""
    try:
        convert(values)
        return _NONE
    except FAILURES:
        pass
    if shape is None:
        return _halves(values, convert)
    good = pc.fill_null(pc.match_substring_regex(values, shape), True).to_numpy(zero_copy_only=False)
    wrong = np.flatnonzero(~good)
    right = np.flatnonzero(good)
    if not len(right):
        return wrong
    rest = _halves(values.take(arrow(right)), convert)
    return np.sort(np.concatenate((wrong, right[rest])))


def _halves(values: pa.Array, convert: Callable[[pa.Array], object]) -> np.ndarray:
    try:
        convert(values)
        return _NONE
    except FAILURES:
        pass
    if len(values) == 1:
        return np.zeros(1, dtype=np.int64)
    half = len(values) // 2
    left = _halves(values.slice(0, half), convert)
    right = _halves(values.slice(half), convert)
    return np.concatenate((left, right + half))


def markers_read_as(nulls: pa.Array, kind: Kind | str) -> bool:
    """Does a null marker read as a value of ``kind`` (``--null-values -999``)? Then a
    batch whose values all read may still hold markers (``NaN`` is a float that is
    missing anyway). ``kind`` may name a time reading: ``number`` or ``iso``. (Asked for
    every column of every piece: answered once per set of markers and kind.)"""
    return _markers_read_as(tuple(nulls.to_pylist()), kind)


@functools.lru_cache(maxsize=256)
def _markers_read_as(markers: tuple[str | None, ...], kind: Kind | str) -> bool:
    target = (
        {"number": pa.decimal128(38, 9), "iso": pa.timestamp("ns")}.get(kind)
        if isinstance(kind, str)
        else (ARROW_TYPES[kind])
    )
    for marker in markers:
        try:
            value = pc.cast(pa.array([marker], pa.string()), target)[0].as_py()
        except FAILURES:
            continue
        if not (kind is Kind.FLOAT and value != value):
            return True
    return False


_NONE = np.zeros(0, dtype=np.int64)
