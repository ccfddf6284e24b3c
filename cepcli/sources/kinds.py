"""Column kinds (SPEC section 1) and the typing of columns by their kind.

A text column's kind is decided once, from a fixed sample at the start of the input, by
the kind most of its present (non-missing) values have: numbers -> ``int`` when each of
them is a whole number that fits int64, else ``float``; ``true``/``false`` -> ``bool``;
ISO-8601 date-times -> ``time``; anything else -> ``str``. So a stray word among numbers
is a bad row naming its value (not a reason to compare the column as text); a column
that is mostly text is text. ``--schema`` gives kinds instead; a column of a typed format
(Parquet, JSON, a DataFrame) has the kind of its type. Typing a column later in the
input uses pyarrow's casts; a value that contradicts the kind is found (values of another
shape at once, the others by casting halves) and named, and its row is a bad row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.errors import UsageError
from cepcli.events import Kind

SAMPLE_ROWS = 65_536

# The markers pandas and pyarrow read as missing, by default (SPEC section 1).
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
    "str": Kind.STR,
    "string": Kind.STR,
    "text": Kind.STR,
}

ARROW_TYPES: dict[Kind, pa.DataType] = {
    Kind.INT: pa.int64(),
    Kind.FLOAT: pa.float64(),
    Kind.BOOL: pa.bool_(),
    Kind.STR: pa.string(),
}

_FAILURES = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
_BOOL_WORDS = pa.array(["true", "false"])

# The shapes of values the casts can read (a value of another shape is bad at once; one of
# the shape that still fails, such as an int64 overflow, is found by casting halves).
INT_SHAPE = r"^\s*[+-]?\d+\s*$"
NUMBER_SHAPE = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
FLOAT_SHAPE = r"(?i)^\s*[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|inf|infinity|nan)\s*$"
ISO_SHAPE = r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}(:\d{2}(:\d{2}([.,]\d+)?)?)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$"
BOOL_SHAPE = r"(?i)^\s*(true|false|1|0)\s*$"
SHAPES = {Kind.INT: INT_SHAPE, Kind.FLOAT: FLOAT_SHAPE, Kind.BOOL: BOOL_SHAPE, Kind.TIME: ISO_SHAPE}


def parse_schema(text: str) -> tuple[tuple[str, Kind], ...]:
    """``--schema col:kind,...`` (kinds: int, float, bool, time, str)."""
    out: list[tuple[str, Kind]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, kind = part.rpartition(":")
        if not sep or not name or kind.strip().lower() not in KIND_NAMES:
            raise UsageError(
                f"--schema takes column:kind pairs, kinds int, float, bool, time or str (got {part!r})"
            )
        out.append((name.strip(), KIND_NAMES[kind.strip().lower()]))
    names = [n for n, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--schema names a column twice ({', '.join(twice)})")
    return tuple(out)


def kind_of_type(type_: pa.DataType) -> Kind:
    """The kind of a typed column (Parquet, JSON, a DataFrame)."""
    if pa.types.is_dictionary(type_):
        return kind_of_type(type_.value_type)
    if pa.types.is_integer(type_) or (pa.types.is_decimal(type_) and type_.scale == 0):
        return Kind.INT
    if pa.types.is_floating(type_) or pa.types.is_decimal(type_):
        return Kind.FLOAT
    if pa.types.is_boolean(type_):
        return Kind.BOOL
    if pa.types.is_timestamp(type_) or pa.types.is_date(type_):
        return Kind.TIME
    if pa.types.is_null(type_):
        return Kind.UNKNOWN
    return Kind.STR


def missing(values: pa.Array, nulls: pa.Array) -> pa.Array:
    """Where a text column's values are missing: null, or one of the markers."""
    marked = pc.is_in(values, value_set=nulls)
    return pc.or_kleene(marked, pc.is_null(values)) if values.null_count else marked


def present_text(values: pa.Array, nulls: pa.Array) -> pa.Array:
    """The text values that are not missing."""
    return pc.filter(values, pc.invert(missing(values, nulls)))


def infer_kind(values: pa.Array, nulls: pa.Array) -> Kind:
    """The kind of a text column from its sample values (see the module)."""
    present = present_text(values, nulls)
    if not len(present):
        return Kind.UNKNOWN
    half = len(present) / 2
    numbers = pc.filter(present, pc.match_substring_regex(present, FLOAT_SHAPE))
    if len(numbers) > half:
        return Kind.INT if fits(numbers, Kind.INT) else Kind.FLOAT
    if (pc.sum(pc.is_in(pc.utf8_lower(present), value_set=_BOOL_WORDS)).as_py() or 0) > half:
        return Kind.BOOL
    dates = pc.filter(present, pc.match_substring_regex(present, ISO_SHAPE))
    if len(dates) > half and fits(dates, Kind.TIME):
        return Kind.TIME
    return Kind.STR


def fits(values: pa.Array, kind: Kind) -> bool:
    """Do all these text values (none missing) read as ``kind``?"""
    if not pc.all(pc.match_substring_regex(values, SHAPES[kind])).as_py():
        return False
    if kind is Kind.TIME:
        from cepcli.sources.times import iso_nanoseconds

        return not len(iso_nanoseconds(values, pa.array(np.zeros(len(values), dtype=bool)))[1])
    try:
        cast_text(values, kind)
        return True
    except _FAILURES:
        return False


def cast_text(values: pa.Array, kind: Kind) -> pa.Array:
    """Text to ``kind`` (no missing values in it); raises when a value does not fit. Blanks
    around a number and a leading ``+`` are allowed."""
    target = ARROW_TYPES[kind]
    try:
        return pc.cast(values, target)
    except _FAILURES:
        if kind is Kind.BOOL:
            raise
        trimmed = pc.replace_substring_regex(pc.utf8_trim_whitespace(values), r"^\+", "")
        return pc.cast(trimmed, target)


def failures(values: pa.Array, convert: Callable[[pa.Array], object], shape: str | None = None) -> np.ndarray:
    """The positions of the (non-null) values ``convert`` cannot take: those not of
    ``shape`` at once, then the others by converting halves (a handful of casts per bad
    value of the right shape, such as an int64 overflow; none when all fit)."""
    try:
        convert(values)
        return _NONE
    except _FAILURES:
        pass
    if shape is None:
        return _halves(values, convert)
    good = pc.fill_null(pc.match_substring_regex(values, shape), True).to_numpy(zero_copy_only=False)
    wrong = np.flatnonzero(~good)
    right = np.flatnonzero(good)
    if not len(right):
        return wrong
    rest = _halves(values.take(pa.array(right)), convert)
    return np.sort(np.concatenate((wrong, right[rest])))


def _halves(values: pa.Array, convert: Callable[[pa.Array], object]) -> np.ndarray:
    try:
        convert(values)
        return _NONE
    except _FAILURES:
        pass
    if len(values) == 1:
        return np.zeros(1, dtype=np.int64)
    half = len(values) // 2
    left = _halves(values.slice(0, half), convert)
    right = _halves(values.slice(half), convert)
    return np.concatenate((left, right + half))


def type_text(values: pa.Array, kind: Kind, nulls: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A text column typed by ``kind``: missing values null (for ``str``, only empty
    cells), and the positions of the values that contradict the kind (null in the result).
    ``time`` columns become int64 nanoseconds."""
    if kind in (Kind.STR, Kind.UNKNOWN):
        empty = pc.equal(values, "")
        return pc.if_else(empty, pa.scalar(None, pa.string()), values), _NONE
    if not values.null_count and kind is not Kind.TIME and not markers_read_as(nulls, kind):
        try:  # most batches: every value reads (a marker or an empty cell would not)
            typed = pc.cast(values, ARROW_TYPES[kind])
            return (nan_as_null(typed) if kind is Kind.FLOAT else typed), _NONE
        except _FAILURES:
            pass
    gone = missing(values, nulls)
    if kind is Kind.TIME:
        from cepcli.sources.times import iso_nanoseconds

        return iso_nanoseconds(values, gone)
    kept = pc.if_else(gone, pa.scalar(None, pa.string()), values)
    try:
        typed = cast_text(kept, kind)
        bad = _NONE
    except _FAILURES:
        bad = failures(kept, lambda v: cast_text(v, kind), SHAPES[kind])
        mask = np.zeros(len(kept), dtype=bool)
        mask[bad] = True
        typed = cast_text(pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), kept), kind)
    if kind is Kind.FLOAT:
        typed = nan_as_null(typed)
    return typed, bad


def markers_read_as(nulls: pa.Array, kind: Kind | str) -> bool:
    """Does a null marker read as a value of ``kind`` (``--null-values -999``)? Then a
    batch whose values all read may still hold markers (``NaN`` is a float that is
    missing anyway). ``kind`` may name a time reading: ``number`` or ``iso``."""
    target = (
        {"number": pa.decimal128(38, 9), "iso": pa.timestamp("ns")}.get(kind)
        if isinstance(kind, str)
        else (ARROW_TYPES[kind])
    )
    for marker in nulls.to_pylist():
        try:
            value = pc.cast(pa.array([marker], pa.string()), target)[0].as_py()
        except _FAILURES:
            continue
        if not (kind is Kind.FLOAT and value != value):
            return True
    return False


def type_native(values: pa.Array, kind: Kind) -> pa.Array:
    """A typed column (Parquet, JSON, a DataFrame) as ``kind``: int64, float64 (NaN is
    missing), bool, string, or int64 nanoseconds for ``time``."""
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if kind is Kind.TIME:
        from cepcli.sources.times import native_nanoseconds

        return native_nanoseconds(values)
    if kind is Kind.UNKNOWN:
        return pc.cast(values, pa.string())
    typed = pc.cast(values, ARROW_TYPES[kind])
    return nan_as_null(typed) if kind is Kind.FLOAT else typed


def nan_as_null(values: pa.Array) -> pa.Array:
    """NaN is a missing value (SPEC section 1), also when it comes out of a reader."""
    nan = pc.is_nan(values)
    if not pc.any(nan).as_py():
        return values
    return pc.if_else(nan, pa.scalar(None, values.type), values)


def describe(kind: Kind) -> str:
    return {
        Kind.INT: "an integer (int64)",
        Kind.FLOAT: "a number (float)",
        Kind.BOOL: "a boolean (true/false)",
        Kind.TIME: "an ISO-8601 date-time",
        Kind.STR: "text",
        Kind.UNKNOWN: "unknown",
    }[kind]


def wider(kind: Kind, names: Sequence[str]) -> str:
    """The fix to suggest when a value contradicts ``kind``."""
    suggestion = {Kind.INT: "float", Kind.FLOAT: "str", Kind.BOOL: "str", Kind.TIME: "str"}.get(kind, "str")
    return ",".join(f"{n}:{suggestion}" for n in names)


_NONE = np.zeros(0, dtype=np.int64)
