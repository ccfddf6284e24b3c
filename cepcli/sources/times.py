"""Timestamps as exact int64 nanoseconds, UTC (SPEC section 1).

* Numbers (``--time-unit s|ms|us|ns``, default s) are cast from their text to a decimal
  with nanosecond scale, whose unscaled integer *is* the nanoseconds: no float on the way,
  so ``14.067`` and ``614.067`` are exactly 600 s apart. A value finer than a nanosecond,
  or outside the int64 range, is a bad value. A float from a typed format (JSON, Parquet)
  goes through its shortest decimal text, exact up to 15 significant digits.
* ISO-8601 date-times (``2013-01-01 05:00``, ``...T06:17:25.210Z``, ``+01:00``): a value
  with a zone is converted to UTC; one without is taken as UTC.
* ``--time-format`` (strptime): pyarrow's ``strptime``, which must consume the whole value.
* Native timestamps (Parquet, Arrow, pandas) are already instants.

Dates outside what int64 nanoseconds hold (1677-09-21 to 2262-04-11) are bad values, and
say so. Only the first bad value of a batch is explained, in Python (``time_problem``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.sources.kinds import ISO_SHAPE, NUMBER_SHAPE, failures, markers_read_as, missing

_UNIT_NAMES = {10**9: "seconds", 10**6: "milliseconds", 10**3: "microseconds", 1: "nanoseconds"}
_SCALE = {10**9: 9, 10**6: 6, 10**3: 3, 1: 0}
_ZONE = r"([Zz]|[+-]\d\d(:?\d\d)?)$"
_NO_STRING = pa.scalar(None, pa.string())
_COMPACT = re.compile(r"^\d{12}(\d{2})?$")
_FIRST = datetime(1677, 9, 21, 0, 12, 43, 145225, tzinfo=UTC)
_LAST = datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=UTC)
RANGE = "between 1677-09-21 and 2262-04-11 (64-bit nanoseconds)"


@dataclass(frozen=True, slots=True)
class TimeSpec:
    """How the time column is read: ``number`` (in ``unit`` nanoseconds), ``iso``,
    ``format`` (strptime ``format``) or ``native`` (a timestamp type)."""

    how: str = "number"
    unit: int = 10**9
    format: str | None = None

    def describe(self) -> str:
        if self.how == "format":
            return f"with --time-format {self.format!r}"
        if self.how == "number":
            return f"as a number of {_UNIT_NAMES[self.unit]}"
        return "as an ISO-8601 date-time"


def decide(values: pa.Array, nulls: pa.Array, unit: int, time_format: str | None) -> TimeSpec:
    """The time column's reading, from its sample: a typed column by its type; text by
    ``--time-format``, else numbers when most present values are numbers, else ISO."""
    type_ = values.type
    if pa.types.is_timestamp(type_) or pa.types.is_date(type_):
        return TimeSpec("native", unit)
    if pa.types.is_integer(type_) or pa.types.is_floating(type_) or pa.types.is_decimal(type_):
        return TimeSpec("number", unit)
    if time_format is not None:
        return TimeSpec("format", unit, time_format)
    present = pc.filter(values, pc.invert(missing(values, nulls)))
    if not len(present):
        return TimeSpec("number", unit)
    numbers = pc.sum(pc.match_substring_regex(present, NUMBER_SHAPE)).as_py() or 0
    return TimeSpec("number" if 2 * numbers > len(present) else "iso", unit)


def nanoseconds(values: pa.Array, spec: TimeSpec, nulls: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The time column as int64 nanoseconds, and where a value is missing or unreadable."""
    type_ = values.type
    if spec.how == "native" or pa.types.is_timestamp(type_) or pa.types.is_date(type_):
        out = native_nanoseconds(values)
        return _filled(out), out.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(type_):
        return _integers(values, spec.unit)
    if pa.types.is_floating(type_) or pa.types.is_decimal(type_):
        values = pc.cast(values, pa.string())  # shortest text: exact up to 15 digits
    if pa.types.is_large_string(values.type):
        values = pc.cast(values, pa.string())
    fast = None
    if spec.how in ("number", "iso") and not markers_read_as(nulls, spec.how):
        fast = _every_value(values, spec)
    if fast is not None:
        return fast, np.zeros(len(values), dtype=bool)
    gone = missing(values, nulls)
    if spec.how == "number":
        ns, bad = _number_text(values, gone, spec.unit)
    elif spec.how == "format":
        assert spec.format is not None
        kept = pc.if_else(gone, _NO_STRING, values)
        stamps = pc.strptime(kept, format=spec.format, unit="ns", error_is_null=True)
        parsed = pc.cast(stamps, pa.int64())
        return _filled(parsed), parsed.is_null().to_numpy(zero_copy_only=False)
    else:
        parsed, bad_at = iso_nanoseconds(values, gone)
        ns = _filled(parsed)
        bad = parsed.is_null().to_numpy(zero_copy_only=False)
        return ns, bad
    return ns, bad | gone.to_numpy(zero_copy_only=False)


def _every_value(values: pa.Array, spec: TimeSpec) -> np.ndarray | None:
    """Most batches: every time reads at once (a marker, an empty cell or a bad value would
    not): the nanoseconds, else None (then each value is judged)."""
    if values.null_count or spec.how == "format":
        return None
    try:
        if spec.how == "number":
            ns, over = _unscaled(pc.cast(values, pa.decimal128(38, _SCALE[spec.unit])))
            return None if over.any() else ns
        return _filled(pc.cast(pc.cast(values, pa.timestamp("ns")), pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _filled(values: pa.Array) -> np.ndarray:
    out: np.ndarray = values.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return out


def _integers(values: pa.Array, unit: int) -> tuple[np.ndarray, np.ndarray]:
    ints = pc.cast(values, pa.int64())
    null = ints.is_null().to_numpy(zero_copy_only=False)
    raw = _filled(ints)
    if unit == 1:
        return raw, null
    limit = (2**63 - 1) // unit
    over = np.abs(raw) > limit
    return np.where(over, 0, raw) * unit, null | over


def _decimal(values: pa.Array, scale: int) -> pa.Array:
    try:
        return pc.cast(values, pa.decimal128(38, scale))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        trimmed = pc.replace_substring_regex(pc.utf8_trim_whitespace(values), r"^\+", "")
        return pc.cast(trimmed, pa.decimal128(38, scale))


def _unscaled(decimals: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The unscaled integers of a decimal128 array, and where one does not fit int64."""
    n = len(decimals)
    words = np.frombuffer(decimals.buffers()[1], dtype=np.int64, count=2 * n, offset=decimals.offset * 16)
    low, high = words[0::2], words[1::2]
    return low.copy(), high != (low >> 63)


def _number_text(values: pa.Array, gone: pa.Array, unit: int) -> tuple[np.ndarray, np.ndarray]:
    scale = _SCALE[unit]
    kept = pc.if_else(gone, _NO_STRING, values)
    bad = np.zeros(len(values), dtype=bool)
    try:
        decimals = _decimal(kept, scale)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        bad[failures(kept, lambda v: _decimal(v, scale), NUMBER_SHAPE)] = True
        decimals = _decimal(pc.if_else(pa.array(bad), _NO_STRING, kept), scale)
    ns, over = _unscaled(decimals)
    bad |= over
    ns[bad] = 0
    return ns, bad


def iso_nanoseconds(values: pa.Array, gone: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """ISO-8601 text as int64 nanoseconds (UTC; a value without a zone is UTC), null
    where missing or unreadable; and the positions of the unreadable ones."""
    kept = pc.if_else(gone, _NO_STRING, values)
    try:
        return pc.cast(pc.cast(kept, pa.timestamp("ns")), pa.int64()), np.zeros(0, dtype=np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    zoned = pc.fill_null(pc.match_substring_regex(kept, _ZONE), False)
    out = np.zeros(len(kept), dtype=np.int64)
    null = np.asarray(pc.is_null(kept).to_numpy(zero_copy_only=False), dtype=bool).copy()
    bad_all = np.zeros(0, dtype=np.int64)
    for zone, target in ((False, pa.timestamp("ns")), (True, pa.timestamp("ns", tz="UTC"))):
        where = np.flatnonzero(np.asarray(zoned.to_numpy(zero_copy_only=False)) == zone)
        part = kept.take(pa.array(where, pa.int64()))

        def cast(v: pa.Array, target: pa.DataType = target) -> pa.Array:
            return pc.cast(v, target)

        bad = failures(part, cast, ISO_SHAPE)
        if len(bad):
            mask = np.zeros(len(part), dtype=bool)
            mask[bad] = True
            part = pc.if_else(pa.array(mask), _NO_STRING, part)
            bad_all = np.concatenate((bad_all, where[bad]))
        stamps = pc.cast(pc.cast(part, target), pa.int64())
        out[where] = _filled(stamps)
        null[where] = stamps.is_null().to_numpy(zero_copy_only=False)
    return pa.array(out, mask=null), np.sort(bad_all)


def native_nanoseconds(values: pa.Array) -> pa.Array:
    """A timestamp or date column as int64 nanoseconds (UTC instants); out-of-range
    values are null."""
    if pa.types.is_date(values.type):
        values = pc.cast(values, pa.timestamp("s"))
    unit = values.type.unit
    ints = pc.cast(values, pa.int64())
    if unit == "ns":
        return ints
    factor = {"s": 10**9, "ms": 10**6, "us": 10**3}[unit]
    raw = _filled(ints)
    over = (np.abs(raw) > (2**63 - 1) // factor) | ints.is_null().to_numpy(zero_copy_only=False)
    return pa.array(np.where(over, 0, raw) * factor, mask=over)


def time_problem(value: object, spec: TimeSpec, column: str, nulls: frozenset[str]) -> str:
    """Why a timestamp cannot be read (for the first bad value of a batch)."""
    if value is None or (isinstance(value, str) and value in nulls):
        return f"missing timestamp in column {column!r}"
    text = str(value).strip()
    instant: datetime | None = None
    unreadable = f"cannot read timestamp {value!r} {spec.describe()}"
    if spec.how == "number":
        try:
            number = Decimal(text.removeprefix("+"))
        except InvalidOperation:
            return unreadable
        if not number.is_finite() or "_" in text:
            return unreadable
        ns = Fraction(number) * spec.unit
        if ns.denominator != 1:
            return f"timestamp {value!r} is finer than a nanosecond"
        return (
            f"timestamp {value!r} is out of range: times must lie {RANGE}" if abs(ns) >= 2**63 else unreadable
        )
    try:
        if spec.how == "format":
            assert spec.format is not None
            instant = datetime.strptime(text, spec.format)
        else:
            instant = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return unreadable
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    if _FIRST <= instant <= _LAST:
        return unreadable
    return f"timestamp {value!r} is out of range: times must lie {RANGE}"


def looks_compact(values: pa.Array) -> str | None:
    """A sample value when the numbers look like compact dates (``YYYYMMDDhhmm[ss]``), e.g.
    ``201301010500``: read as seconds they are wrong by decades, silently."""
    texts = [str(v) for v in values.slice(0, 200).to_pylist() if v is not None and str(v) != ""]
    if not texts or not all(_COMPACT.match(t) for t in texts):
        return None
    for t in texts:
        try:
            datetime.strptime(t, "%Y%m%d%H%M%S" if len(t) == 14 else "%Y%m%d%H%M")
        except ValueError:
            return None
    return texts[0]


def to_units(ns: int, unit: int) -> int | Fraction:
    """A timestamp as conditions see it: in time units, exactly (an int when whole)."""
    whole, rest = divmod(ns, unit)
    return whole if not rest else Fraction(ns, unit)


def iso_text(ns: int) -> str:
    """An instant as ISO-8601 text, UTC, to the nanosecond when needed."""
    seconds, frac = divmod(ns, 10**9)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        stamp += f".{frac:09d}".rstrip("0")
    return stamp + "Z"
