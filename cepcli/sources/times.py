"""Timestamps as exact int64 nanoseconds, UTC (docs/semantics.md section 1).

* Numbers (``--time-unit s|ms|us|ns``, default s) are cast from their text to a decimal
  with nanosecond scale, whose unscaled integer *is* the nanoseconds: no float on the way,
  so ``14.067`` and ``614.067`` are exactly 600 s apart. A value finer than a nanosecond,
  or outside the int64 range, is a bad value. A float from a typed format (JSON, Parquet)
  goes through its shortest decimal text, exact up to 15 significant digits.
* ISO-8601 date-times (``2013-01-01 05:00``, ``...T06:17:25.210Z``, ``+01:00``): a value
  with a zone is converted to UTC; one without is taken as UTC. A batch that pyarrow's cast
  reads whole (all values with a zone, or all without, as the first one; as written, or
  with ``t``, ``z`` and a decimal comma made ``T``, ``Z`` and ``.``) is cast. Any other
  batch is read in parts: the date and time of day by pyarrow's cast to whole seconds; the
  fraction (``.`` or ``,``, any number of digits) as an integer of nanoseconds; the zone
  (``Z``/``z``, ``+hh``, ``+hhmm``, ``+hh:mm``) as whole minutes, subtracted; and the
  three added in int64. So a lower-case ``t`` or ``z``, a decimal comma, and digits beyond
  the ninth that are zeros read exactly; a non-zero digit beyond the ninth is finer than a
  nanosecond, a bad value.
* ``--time-format`` (strptime): pyarrow's ``strptime``, which must consume the whole value.
  Its ``strptime`` has no working ``%f``, so a format with ``%f`` is turned into a regular
  expression (literal text as itself, each numeric directive as the digits it may read,
  ``%z`` as a zone, other directives as any text) that finds the digits ``%f`` stands for;
  the rest of the value is read by ``strptime`` to whole seconds (without ``%f``), and the
  digits are added as nanoseconds (1 to 9 digits; more when the extra ones are zeros).
* Native timestamps (Parquet, Arrow, pandas) are already instants.

Dates outside what int64 nanoseconds hold (1677-09-21 to 2262-04-11) are bad values, and
say so. Only the first bad value of a batch is explained, in Python (``time_problem``), by
the same reading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow
from cepcli.clock import RANGE
from cepcli.errors import flag
from cepcli.sources.text import ISO_SHAPE, NUMBER_SHAPE, failures, markers_read_as, missing

_UNIT_NAMES = {10**9: "seconds", 10**6: "milliseconds", 10**3: "microseconds", 1: "nanoseconds"}
_SCALE = {10**9: 9, 10**6: 6, 10**3: 3, 1: 0}
_NO_STRING = pa.scalar(None, pa.string())
_NAIVE = pa.timestamp("ns")
_UTC = pa.timestamp("ns", tz="UTC")
_REFUSED = (pa.ArrowInvalid, pa.ArrowNotImplementedError)
_NONE = np.zeros(0, dtype=np.int64)
_COMPACT = re.compile(r"^\d{8}(\d{2}){0,3}$")
_EPOCH = datetime(1970, 1, 1)

# int64 nanoseconds as whole seconds and nanoseconds (floor): the first and last instants
_LOW_S, _LOW_NS = divmod(-(2**63), 10**9)
_HIGH_S, _HIGH_NS = divmod(2**63 - 1, 10**9)

# An ISO-8601 value (``kinds.ISO_SHAPE``) in parts: the date and time of day, the digits of
# the fraction, the zone. A fraction follows seconds only (a head of 19 characters).
_ISO_BODY = (
    r"(?P<head>\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}(?::\d{2}(?::\d{2})?)?)?)"
    r"(?:[.,](?P<fraction>\d+))?(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?"
)
_ISO_PARTS = f"^{_ISO_BODY}$"
_ISO_RE = re.compile(_ISO_BODY, re.ASCII)
_SECONDS_HEAD = len("2024-01-01T00:00:00")
_ZONED = re.compile(r"^.{11}.*([Zz]|[+-]\d\d(:?\d\d)?)$")  # a zone after the date (not its -dd)
_FINER = r"^\d{9}\d*[1-9]"  # fraction digits with a non-zero one beyond the ninth

# --time-format with %f: what strptime's other directives may read, to find the digits
_WIDTHS = {"Y": 4, "G": 4, "j": 3, "u": 1, "w": 1, **dict.fromkeys("CgydemHIMSUWVkl", 2)}
_SHORTHANDS = {"T": "%H:%M:%S", "R": "%H:%M", "D": "%m/%d/%y", "F": "%Y-%m-%d", "r": "%I:%M:%S %p"}
_ZONE_TEXT = r"\s*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)"
_DIRECTIVES = {"s": r"\s*[+-]?\d+", "z": _ZONE_TEXT, "n": r"\s*", "t": r"\s*", "%": "%"}
_TOKEN = re.compile(r"%[EO]?.|.", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TimeSpec:
    """How the time column is read: ``number`` (in ``unit`` nanoseconds), ``iso``,
    ``format`` (strptime ``format``) or ``native`` (a timestamp type)."""

    how: str = "number"
    unit: int = 10**9
    format: str | None = None

    def describe(self) -> str:
        if self.how == "format":
            return f"with {flag('time-format', repr(self.format))}"
        if self.how == "number":
            return f"as a number of {_UNIT_NAMES[self.unit]}"
        return "as an ISO-8601 date-time"


def not_times(type_: pa.DataType) -> str | None:
    """What a typed time column holds when its type holds no instants (durations, times of
    day, booleans, nested values: each the wrong column, or a time to be made first), else
    None. Numbers, text, timestamps and dates are read (docs/semantics.md section 1)."""
    if pa.types.is_dictionary(type_):
        type_ = type_.value_type
    if pa.types.is_duration(type_):
        return f"{type_} (lengths of time, not instants)"
    if pa.types.is_time(type_):
        return f"{type_} (times of day, without a date)"
    readable = (
        pa.types.is_timestamp,
        pa.types.is_date,
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_decimal,
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_binary,
        pa.types.is_large_binary,
        pa.types.is_null,
    )
    if any(test(type_) for test in readable):
        return None
    return f"{type_} (values that are not times)"


def _as_read(values: pa.Array) -> pa.Array:
    """A time column's values as the readings take them: a dictionary decoded, a column of
    nulls only (no type) as text."""
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_null(values.type):
        values = pa.nulls(len(values), pa.string())
    return values


def decide(values: pa.Array, nulls: pa.Array, unit: int, time_format: str | None) -> TimeSpec:
    """The time column's reading, from its sample: a typed column by its type; text by
    ``--time-format``, else numbers when most present values are numbers, else ISO."""
    values = _as_read(values)
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
    values = _as_read(values)
    type_ = values.type
    if spec.how == "native" or pa.types.is_timestamp(type_) or pa.types.is_date(type_):
        whole = _whole_timestamps(values)
        if whole is not None:
            return whole, np.zeros(len(whole), dtype=bool)
        out = native_nanoseconds(values)
        return _filled(out), out.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(type_):
        return _integers(values, spec.unit)
    if pa.types.is_floating(type_) or pa.types.is_decimal(type_):
        values = pc.cast(values, pa.string())  # shortest text: exact up to 15 digits
    if pa.types.is_large_string(values.type):
        values = pc.cast(values, pa.string())
    fast = None
    if spec.how in ("number", "iso") and not _markers_read(nulls, spec.how):
        fast = _every_value(values, spec)
    if fast is not None:
        return fast, np.zeros(len(values), dtype=bool)
    gone = missing(values, nulls)
    if spec.how == "number":
        ns, bad = _number_text(values, gone, spec.unit)
        return ns, bad | gone.to_numpy(zero_copy_only=False)
    if spec.how == "format":
        assert spec.format is not None
        return _format_nanoseconds(pc.if_else(gone, _NO_STRING, values), spec.format)
    parsed, _ = iso_nanoseconds(values, gone)
    return _filled(parsed), parsed.is_null().to_numpy(zero_copy_only=False)


def _markers_read(nulls: pa.Array, how: str) -> bool:
    """Might a null marker read as a time (then every value is judged)? For ISO, any marker
    of the ISO shape (with a zone too: the fast cast may read those)."""
    if how == "iso" and pc.any(pc.match_substring_regex(nulls, ISO_SHAPE)).as_py():
        return True
    return markers_read_as(nulls, how)


def _every_value(values: pa.Array, spec: TimeSpec) -> np.ndarray | None:
    """Most batches: every time reads at once (a marker, an empty cell or a bad value would
    not): the nanoseconds, else None (then each value is judged)."""
    if values.null_count or spec.how == "format":
        return None
    if spec.how == "iso":
        out = _arrow_iso(values)
        return None if out is None else _filled(out)
    try:
        ns, over = _unscaled(pc.cast(values, pa.decimal128(38, _SCALE[spec.unit])))
        return None if over.any() else ns
    except _REFUSED:
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
    except _REFUSED:
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
    except _REFUSED:
        bad[failures(kept, lambda v: _decimal(v, scale), NUMBER_SHAPE)] = True
        decimals = _decimal(pc.if_else(arrow(bad), _NO_STRING, kept), scale)
    ns, over = _unscaled(decimals)
    bad |= over
    ns[bad] = 0
    return ns, bad


def iso_nanoseconds(values: pa.Array, gone: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """ISO-8601 text as int64 nanoseconds (UTC; a value without a zone is UTC), null
    where missing or unreadable; and the positions of the unreadable ones."""
    kept = pc.if_else(gone, _NO_STRING, values)
    out = _arrow_iso(kept)
    return (out, _NONE) if out is not None else _iso_in_parts(kept)


def _arrow_iso(values: pa.Array) -> pa.Array | None:
    """pyarrow's cast, when it reads every value, as int64 nanoseconds; else None. The
    first present value chooses the cast (with a zone: to an instant; without: a date-time
    taken as UTC) and the text: as it is, or with ``t``, ``z`` and a decimal comma as the
    cast reads them (``T``, ``Z``, ``.``). When neither reads the first value (ten digits),
    the batch is not cast at all (a cast refusing every value is slow)."""
    first = values.drop_null() if values.null_count else values
    if not len(first):
        return pa.nulls(len(values), pa.int64())
    text = first[0].as_py()
    target = _UTC if _ZONED.search(text) else _NAIVE
    for form in (_as_written, _upper_dot):
        try:
            pc.cast(form(pa.array([text], pa.string())), target)
        except _REFUSED:
            continue
        try:
            return pc.cast(pc.cast(form(values), target), pa.int64())
        except _REFUSED:
            return None
    return None


def _as_written(values: pa.Array) -> pa.Array:
    return values


def _upper_dot(values: pa.Array) -> pa.Array:
    """ISO-8601 text as pyarrow's cast reads it: ``T``, ``Z`` and a decimal point."""
    return pc.replace_substring(pc.ascii_upper(values), ",", ".")


def _iso_in_parts(kept: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Each ISO-8601 value in its parts (the module says how): int64 nanoseconds, null
    where missing or unreadable, and the positions of the unreadable ones."""
    parts = pc.extract_regex(kept, _ISO_PARTS)
    head = pc.struct_field(parts, "head")
    digits = pc.struct_field(parts, "fraction")
    fraction, finer = _fraction(digits)
    offset, far = _offsets(pc.struct_field(parts, "zone"))
    early = pc.and_(pc.not_equal(digits, ""), pc.not_equal(pc.utf8_length(head), _SECONDS_HEAD))
    readable = _true(head.is_valid()) & ~finer & ~far & ~_true(early)
    heads = pc.if_else(arrow(readable), pc.ascii_upper(head), _NO_STRING)
    local, refused = _cast_each(heads, pa.timestamp("s"))
    readable[refused] = False
    ns, over = _combine(_filled(pc.cast(local, pa.int64())) - offset, fraction)
    readable &= ~over
    bad = np.flatnonzero(~readable & _true(kept.is_valid()))
    return pa.array(np.where(readable, ns, 0), mask=~readable), bad


def _true(mask: pa.Array) -> np.ndarray:
    """A boolean array as numpy (null is false), writable."""
    return np.array(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _cast_each(values: pa.Array, target: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """``values`` cast to ``target``, those it refuses null; and their positions."""
    try:
        return pc.cast(values, target), _NONE
    except _REFUSED:
        pass
    refused = failures(values, lambda v: pc.cast(v, target))
    mask = np.zeros(len(values), dtype=bool)
    mask[refused] = True
    return pc.cast(pc.if_else(arrow(mask), _NO_STRING, values), target), refused


def _fraction(digits: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The digits of fractions of a second ("" for none) as int64 nanoseconds, exactly,
    and where a digit beyond the ninth is not zero (finer than a nanosecond)."""
    if (pc.max(pc.utf8_length(digits)).as_py() or 0) <= 9:
        return _filled(pc.cast(pc.utf8_rpad(digits, 9, "0"), pa.int64())), np.zeros(len(digits), dtype=bool)
    nine = pc.utf8_rpad(pc.utf8_slice_codeunits(digits, 0, 9), 9, "0")
    finer = _true(pc.match_substring_regex(digits, _FINER))
    return _filled(pc.cast(nine, pa.int64())), finer


def _offsets(zones: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Zones ("", ``Z``, ``z``, ``+hh``, ``+hhmm``, ``+hh:mm``) as seconds east of UTC, and
    where one is out of range (hours beyond 23, minutes beyond 59)."""
    n = len(zones)
    if not pc.any(pc.greater(pc.utf8_length(zones), 1)).as_py():
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    compact = pc.replace_substring(zones, ":", "")
    hours, minutes = (
        _filled(pc.cast(pc.utf8_lpad(pc.utf8_slice_codeunits(compact, a, a + 2), 1, "0"), pa.int64()))
        for a in (1, 3)
    )
    sign = np.where(_true(pc.starts_with(zones, "-")), -1, 1)
    return sign * (hours * 3600 + minutes * 60), (hours > 23) | (minutes > 59)


def _combine(seconds: np.ndarray, fraction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whole seconds and nanoseconds (0 to 10^9 - 1) as int64 nanoseconds, exactly, and
    where the sum is outside int64 (then 0)."""
    over = (
        (seconds < _LOW_S)
        | (seconds > _HIGH_S)
        | ((seconds == _LOW_S) & (fraction < _LOW_NS))
        | ((seconds == _HIGH_S) & (fraction > _HIGH_NS))
    )
    # in range the sum is exact: only the product of the first whole second
    # (1677-09-21T00:12:43) wraps around int64, and adding the fraction wraps it back
    ns: np.ndarray = np.where(over, 0, seconds) * 10**9 + np.where(over, 0, fraction)
    return ns, over


def _format_nanoseconds(kept: pa.Array, time_format: str) -> tuple[np.ndarray, np.ndarray]:
    """Text read with a strptime format (null where missing): int64 nanoseconds, and where
    a value is missing or unreadable."""
    split = _split_format(time_format)
    if split is None:
        stamps = pc.strptime(kept, format=time_format, unit="ns", error_is_null=True)
        parsed = pc.cast(stamps, pa.int64())
        return _filled(parsed), parsed.is_null().to_numpy(zero_copy_only=False)
    parts = pc.extract_regex(kept, f"^{split.body}$")
    rest = pc.binary_join_element_wise(pc.struct_field(parts, "before"), pc.struct_field(parts, "after"), "")
    fraction, finer = _fraction(pc.struct_field(parts, "fraction"))
    seconds = pc.cast(pc.strptime(rest, format=split.rest, unit="s", error_is_null=True), pa.int64())
    ns, over = _combine(_filled(seconds), fraction)
    bad = seconds.is_null().to_numpy(zero_copy_only=False) | finer | over
    ns[bad] = 0
    return ns, bad


@dataclass(frozen=True, slots=True)
class _FormatSplit:
    """A strptime format with ``%f``: ``body``, a regular expression (RE2 and Python) of a
    value, with groups ``before``, ``fraction`` (the digits of ``%f``) and ``after``; and
    ``rest``, the format without ``%f``, which reads ``before`` and ``after`` joined."""

    body: str
    rest: str


@lru_cache(maxsize=32)
def _split_format(time_format: str) -> _FormatSplit | None:
    """The split of a format with ``%f`` (its first), else None."""
    tokens = _TOKEN.findall(time_format)
    if "%f" not in tokens:
        return None
    at = tokens.index("%f")
    before = "".join(_token_regex(t) for t in tokens[:at])
    after = "".join(_token_regex(t) for t in tokens[at + 1 :])
    body = rf"(?P<before>{before})(?P<fraction>\d+)(?P<after>{after})"
    return _FormatSplit(body, "".join(tokens[:at] + tokens[at + 1 :]))


def _token_regex(token: str) -> str:
    """What a piece of a strptime format reads, as a regular expression: a blank any
    blanks; other literal text itself; a numeric directive the digits it may read (after
    blanks, as strptime); ``%z`` a zone; names, AM/PM and the like any text."""
    if len(token) == 1:
        return r"\s*" if token.isspace() else re.escape(token)
    code = token[-1]
    if code in _SHORTHANDS:
        return "".join(_token_regex(t) for t in _TOKEN.findall(_SHORTHANDS[code]))
    if code in _WIDTHS:
        return rf"\s*\d{{1,{_WIDTHS[code]}}}"
    return _DIRECTIVES.get(code, ".*?")


_NS_PER = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _whole_timestamps(values: pa.Array) -> np.ndarray | None:
    """Most batches of a typed input: timestamps with none missing, every one within what
    int64 nanoseconds hold: their nanoseconds in one pass over numpy's view of them (a
    third of the checked casts' time); else None (``native_nanoseconds`` judges each)."""
    if not pa.types.is_timestamp(values.type) or values.null_count or not len(values):
        return None
    raw: np.ndarray = values.view(pa.int64()).to_numpy(zero_copy_only=True)
    factor = _NS_PER[values.type.unit]
    if factor == 1:
        return raw
    limit = (2**63 - 1) // factor
    if int(raw.min()) < -limit or int(raw.max()) > limit:
        return None
    out: np.ndarray = raw * factor
    return out


def native_nanoseconds(values: pa.Array) -> pa.Array:
    """A timestamp or date column as int64 nanoseconds (UTC instants); out-of-range
    values are null."""
    if pa.types.is_date(values.type):
        values = pc.cast(values, pa.timestamp("s"))
    unit = values.type.unit
    if unit != "ns":
        try:  # most columns: every value fits int64 nanoseconds (a checked cast says)
            finer = (
                pa.duration("ns") if pa.types.is_duration(values.type) else pa.timestamp("ns", values.type.tz)
            )
            return pc.cast(pc.cast(values, finer), pa.int64())
        except pa.ArrowInvalid:
            pass
    ints = pc.cast(values, pa.int64())
    if unit == "ns":
        return ints
    factor = _NS_PER[unit]
    raw = _filled(ints)
    over = (np.abs(raw) > (2**63 - 1) // factor) | ints.is_null().to_numpy(zero_copy_only=False)
    return pa.array(np.where(over, 0, raw) * factor, mask=over)


def time_problem(value: object, spec: TimeSpec, column: str, nulls: frozenset[str]) -> str:
    """Why a timestamp cannot be read (for the first bad value of a batch), by the reading
    the batch had: finer than a nanosecond, out of range, or unreadable."""
    if value is None or (isinstance(value, str) and value in nulls):
        return f"missing timestamp in column {column!r}"
    unreadable = f"cannot read timestamp {value!r} {spec.describe()}"
    if spec.how == "iso" and (hint := _format_hint(str(value))):
        unreadable += hint
    if spec.how == "number":
        return _number_problem(value, spec.unit, unreadable)
    text = str(value)
    if spec.how == "format":
        assert spec.format is not None
        read = _format_exactly(text, spec.format)
    else:
        read = _iso_exactly(text)
    if read is None:
        return unreadable
    seconds, digits = read
    if digits[9:].strip("0"):
        return f"timestamp {value!r} is finer than a nanosecond"
    ns = seconds * 10**9 + int(digits[:9].ljust(9, "0"))
    if not -(2**63) <= ns < 2**63:
        return f"timestamp {value!r} is out of range: times must lie {RANGE}"
    return unreadable


_DAY_MONTH = re.compile(r"\s*(\d{1,2})([/.-])(\d{1,2})\2(\d{2}|\d{4})(?:[ T](\d{1,2}:\d{2})(:\d{2})?)?\s*")


def _format_hint(text: str) -> str:
    """For a date written day and month first (``03/04/2024 10:00``): the ``--time-format``
    that reads it, both ways round (which comes first, the text cannot tell)."""
    found = _DAY_MONTH.fullmatch(text)
    if found is None:
        return ""
    sep, year = found.group(2), "%Y" if len(found.group(4)) == 4 else "%y"
    clock = (" %H:%M" + (":%S" if found.group(6) else "")) if found.group(5) else ""
    us, eu = f"%m{sep}%d{sep}{year}{clock}", f"%d{sep}%m{sep}{year}{clock}"
    return f" (month first? give {flag('time-format', repr(us))}; day first: {flag('time-format', repr(eu))})"


def _number_problem(value: object, unit: int, unreadable: str) -> str:
    text = str(value).strip()
    try:
        number = Decimal(text.removeprefix("+"))
    except InvalidOperation:
        return unreadable
    if not number.is_finite() or "_" in text:
        return unreadable
    ns = Fraction(number) * unit
    if ns.denominator != 1:
        return f"timestamp {value!r} is finer than a nanosecond"
    return f"timestamp {value!r} is out of range: times must lie {RANGE}" if abs(ns) >= 2**63 else unreadable


def _iso_exactly(text: str) -> tuple[int, str] | None:
    """An ISO-8601 value as whole seconds since the epoch (UTC) and the digits of its
    fraction, as the batch reads it; None when it cannot be read so."""
    match = _ISO_RE.fullmatch(text)
    if match is None or (match["fraction"] and len(match["head"]) != _SECONDS_HEAD):
        return None
    zone = (match["zone"] or "").replace(":", "")
    hours, minutes = int(zone[1:3] or 0), int(zone[3:5] or 0)
    if hours > 23 or minutes > 59:
        return None
    try:
        local = datetime.fromisoformat(match["head"].upper())
    except ValueError:
        return None
    offset = (-1 if zone.startswith("-") else 1) * (hours * 3600 + minutes * 60)
    return _epoch_seconds(local) - offset, match["fraction"] or ""


def _format_exactly(text: str, time_format: str) -> tuple[int, str] | None:
    """A value read with a strptime format (``%f`` as the batch reads it): whole seconds
    since the epoch (UTC) and the digits of its fraction; None when it cannot be read."""
    split = _split_format(time_format)
    digits = ""
    if split is not None:
        match = re.fullmatch(split.body, text, re.ASCII)
        if match is None:
            return None
        text, time_format, digits = match["before"] + match["after"], split.rest, match["fraction"]
    try:
        stamp = datetime.strptime(text, time_format)
    except ValueError:
        return None
    return _epoch_seconds(stamp), digits


def _epoch_seconds(stamp: datetime) -> int:
    """Whole seconds since 1970-01-01T00:00:00Z (a naive date-time is UTC), exactly."""
    offset = stamp.utcoffset() or timedelta(0)
    return (stamp.replace(tzinfo=None) - offset - _EPOCH) // timedelta(seconds=1)


# Numbers shaped like compact dates, by their digits: the shape and the format that reads them
_COMPACT_FORMS = {
    8: ("YYYYMMDD", "%Y%m%d"),
    10: ("YYYYMMDDhh", "%Y%m%d%H"),
    12: ("YYYYMMDDhhmm", "%Y%m%d%H%M"),
    14: ("YYYYMMDDhhmmss", "%Y%m%d%H%M%S"),
}
_COMPACT_YEARS = (1900, 2200)  # (10 digits: epoch seconds up to 2030 begin with a year before 1900)


def looks_compact(values: pa.Array) -> tuple[str, str, str] | None:
    """A sample value, its shape and the ``--time-format`` that reads it, when the numbers
    look like compact dates (``YYYYMMDD``, ``YYYYMMDDhh``, ``YYYYMMDDhhmm``,
    ``YYYYMMDDhhmmss``; e.g. ``201301010500``): read as seconds they are wrong by decades,
    silently. Every value of the first 200 must be such a date, of one length, in a year of
    1900-2199 (a counter or epoch seconds is not)."""
    texts = [str(v) for v in values.slice(0, 200).to_pylist() if v is not None and str(v) != ""]
    if not texts or not all(_COMPACT.match(t) for t in texts) or len({len(t) for t in texts}) != 1:
        return None
    shape, time_format = _COMPACT_FORMS[len(texts[0])]
    for t in texts:
        try:
            year = datetime.strptime(t, time_format).year
        except ValueError:
            return None
        if not _COMPACT_YEARS[0] <= year < _COMPACT_YEARS[1]:
            return None
    return texts[0], shape, time_format


def compact_warning(values: pa.Array, column: str) -> str | None:
    """The warning for a time column of numbers that look like compact dates (read as
    seconds when neither ``--time-format`` nor ``--time-unit`` is given), else None."""
    found = looks_compact(values)
    if found is None:
        return None
    sample, shape, time_format = found
    return (
        f"the time column {column!r} holds numbers like {sample} that look like dates ({shape}):"
        f" they are read as seconds; give --time-format {time_format} to read them as dates"
        " (or --time-unit s to keep seconds)"
    )
