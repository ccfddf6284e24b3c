"""A match's jsonl line made from columns: the columnar engine's matches (``Found``), a
slice's at a time, as the text ``cepcli.output.match_line`` makes from their events, byte
for byte, without making the events (their values' text by Arrow's kernels where their
types allow, else by ``json_value``, value by value). ``cepcli run --format jsonl`` writes
them so (``cepcli.writers``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow, whole
from cepcli.events import Kind, Schema
from cepcli.output import event_text, exact_json, json_value, time_json
from cepcli.runtime.columnar import Columns, Found
from cepcli.sources.rows import column_values
from cepcli.sources.text import INT_SHAPE


def found_lines(
    found: Found, schema: Schema, names: Sequence[str], keep: Sequence[int] | None = None, prefix: str = "{"
) -> tuple[pa.Buffer, np.ndarray]:
    """``found``'s matches as their jsonl lines, each with its newline: ``match_line``'s
    text, byte for byte, made from columns (set-at-a-time, no event made where the columns'
    types allow); ``prefix`` opens each line (several queries: ``{"query":...,``). The
    text is ASCII (JSON's escapes), as bytes; also where each line ends, in bytes from the
    first one's start. A Kleene variable's run is the JSON array of its events."""
    bound = dict(zip(found.names, found.positions, strict=True))
    present = [n for n in names if n in bound]
    runs = [found.runs[n].flat for n in present if n in found.runs]
    unique, index = _distinct(np.concatenate([bound[n] for n in present] + runs))
    texts = event_texts(found.data, unique, schema, keep)
    parts: list[pa.Array | pa.Scalar] = []
    at = len(present) * len(found)  # (the runs' events follow the variables' own)
    for i, name in enumerate(present):
        parts.append(_text((prefix if i == 0 else ",") + json.dumps(name) + ":"))
        if name not in found.runs:
            parts.append(texts.take(arrow(index[i * len(found) : (i + 1) * len(found)])))
            continue
        run = found.runs[name]
        items = texts.take(arrow(index[at : at + len(run.flat)]))
        at += len(run.flat)
        joined = pc.binary_join(pa.LargeListArray.from_arrays(arrow(run.offsets), items), _text(","))
        parts.append(pc.binary_join_element_wise(_text("["), joined, _text("]"), _text("")))
    lines = pc.binary_join_element_wise(*parts, _text("}\n"), _text(""))
    offsets = np.frombuffer(lines.buffers()[1], np.int64)[lines.offset : lines.offset + len(lines) + 1]
    body = lines.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    return body, offsets[1:] - offsets[0]


def _distinct(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct positions, sorted, and where each of ``positions`` is among them (by a
    mark per position of their range: a slice's matches lie close together)."""
    low = int(positions.min())
    seen = np.zeros(int(positions.max()) - low + 1, dtype=np.bool_)
    seen[positions - low] = True
    rank = np.cumsum(seen, dtype=np.int64) - 1
    return np.flatnonzero(seen) + low, rank[positions - low]


def event_texts(data: Columns, positions: np.ndarray, schema: Schema, keep: Sequence[int] | None) -> pa.Array:
    """The JSON text of the events at ``positions`` (``event_text``'s, exactly), a column
    at a time: integers, times, booleans and plain text by Arrow's kernels; other values
    (floats, decimals, durations, text typed by its kind, text JSON escapes) by
    ``json_value``, value by value."""
    if data.values is None:  # events made before (a Spark shard's): their own text
        return pa.array([event_text(e, schema, keep) for e in data.events(positions)], pa.large_string())
    values = data.values(positions)
    nulls, kinds, columns = schema.nulls, schema.current_kinds(), schema.columns
    exact = exact_json(schema)  # (``json_text``: a decimal as a JSON number)
    time_at = columns.index(schema.time_col) if schema.time_col in columns else -1
    parts: list[pa.Array | pa.Scalar] = [_text("{")]
    for n, i in enumerate(range(len(columns)) if keep is None else keep):
        parts.append(_text(("," if n else "") + json.dumps(columns[i]) + ":"))
        parts.append(_json_column(values[i], kinds[i], nulls, i in data.decimal_text, exact, i == time_at))
    parts.append(_text(("," if len(parts) > 1 else "") + '"_row":'))
    parts.append(pc.cast(arrow(data.rows[positions]), pa.large_string()))
    parts.append(_text("}"))
    return pc.binary_join_element_wise(*parts, _text(""))


def _json_column(
    column: pa.Array | pa.ChunkedArray,
    kind: Kind,
    nulls: frozenset[str],
    decimal_text: bool,
    exact: bool,
    time: bool = False,
) -> pa.Array:
    """One column's values as JSON text (``json_value``'s, dumped as ``event_text`` does;
    ``time``: the time column, ``time_json``'s)."""
    column = whole(column)
    shape = time_json if time else json_value
    kinds = column.type
    if not decimal_text and pa.types.is_integer(kinds) and kind is not Kind.DURATION:
        if kind is Kind.TIME:
            return _iso_texts(column)
        return pc.fill_null(pc.cast(column, pa.large_string()), "null")
    if not decimal_text and pa.types.is_boolean(kinds):
        return pc.fill_null(pc.if_else(column, _text("true"), _text("false")), "null")
    text = pa.types.is_string(kinds) or pa.types.is_large_string(kinds)
    if not decimal_text and kind is Kind.STR and text:
        return pc.fill_null(_quoted(column), "null")
    if not decimal_text and text and kind in (Kind.TIME, Kind.INT):
        written = _written_text(column, kind, nulls)  # (text the query did not read, typed by its kind)
        if written is not None:
            return written

    def dumped(value: object) -> str:
        shown = shape(value, kind, nulls)
        if exact:
            return (
                format(shown, "f")
                if isinstance(shown, Decimal)
                else json.dumps(shown, separators=(",", ":"), default=str)
            )
        return json.dumps(shown, separators=(",", ":"), default=str, allow_nan=False)

    return pa.array([dumped(v) for v in column_values(column, decimal_text)], pa.large_string())


def _quoted(column: pa.Array) -> pa.Array:
    """Text as JSON strings (``json.dumps``'s, exactly: plain ASCII quoted by Arrow's
    kernels, the values JSON escapes by ``json.dumps``); null stays null."""
    quoted = pc.binary_join_element_wise(
        _text('"'), pc.cast(column, pa.large_string()), _text('"'), _text("")
    )
    if _plain(column):
        return quoted
    plain = pc.invert(pc.match_substring_regex(column, r"[^ !#-\[\]-~]")).fill_null(True)
    if not pc.all(plain).as_py():  # JSON escapes (and ASCII): json.dumps, for those values
        escaped = [
            None if ok else json.dumps(v) for v, ok in zip(column.to_pylist(), plain.to_pylist(), strict=True)
        ]
        quoted = pc.if_else(plain, quoted, pa.array(escaped, pa.large_string()))
    return quoted


def _plain(column: pa.Array) -> bool:
    """Whether the bytes of all the text of ``column`` (string or large_string) are
    printable ASCII but ``"`` and ``\\``, which JSON writes as they are (one look at its
    data buffer, not a regular expression per value)."""
    buffers = column.buffers()
    if buffers[2] is None:
        return True
    wide = pa.types.is_large_string(column.type)
    offsets = np.frombuffer(buffers[1], np.int64 if wide else np.int32)
    first, last = offsets[column.offset], offsets[column.offset + len(column)]
    data = np.frombuffer(buffers[2], np.uint8)[first:last]
    return not ((data < 32) | (data > 126) | (data == 34) | (data == 92)).any()


def _written_text(column: pa.Array, kind: Kind, nulls: frozenset[str]) -> pa.Array | None:
    """A text column of a kind the query did not read, as ``json_value`` types each value
    (``output._typed_text``): a null marker is null; a time's text stays text; an integer's
    text that has the shape of one is its number, other text stays text. None where Arrow's
    kernels cannot say so exactly (text beyond ASCII, whose digits Python reads and Arrow
    does not; a number past int64): those go value by value."""
    if not pc.all(pc.string_is_ascii(column)).as_py():
        return None
    out = _quoted(column)
    if kind is Kind.INT:
        shaped = pc.fill_null(pc.match_substring_regex(column, INT_SHAPE), False)
        digits = pc.replace_substring_regex(pc.utf8_trim_whitespace(column), r"^\+", "")
        try:
            numbers = pc.cast(pc.if_else(shaped, digits, pa.scalar(None, pa.string())), pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        out = pc.if_else(shaped, pc.cast(numbers, pa.large_string()), out)
    if nulls:
        out = pc.if_else(pc.is_in(column, pa.array(sorted(nulls), pa.string())), _text("null"), out)
    return pc.fill_null(out, "null")


def _iso_texts(column: pa.Array) -> pa.Array:
    """Times in int64 ns as ``iso_text`` writes them, quoted (JSON strings); null: null.
    Made by numpy as a grid of characters, a row per time (``"YYYY-MM-DDTHH:MM:SS``, the
    fraction's digits with their dot where it has any, ``Z"``), the dates and the times of
    day looked up in tables of their texts, the rows then joined (Arrow's cast of a
    timestamp to text and its string kernels cost 5x)."""
    ns = pc.fill_null(pc.cast(column, pa.int64()), 0).to_numpy()
    if not len(ns):
        return pa.array([], pa.large_string())
    seconds = np.floor_divide(ns, 10**9)
    fraction = ns - seconds * 10**9
    days = np.floor_divide(seconds, 86400)
    low, high = int(days.min()), int(days.max())
    if high - low < max(len(ns), 1 << 16):  # (the dates of the days they span, once each)
        dates = _date_texts(np.arange(low, high + 1))[days - low]
    else:
        dates = _date_texts(days)
    fractions = bool(fraction.any())
    grid = np.empty((len(ns), 32 if fractions else 22), dtype=np.uint8)
    grid[:, 0] = ord('"')
    grid[:, 1:11] = dates
    grid[:, 11] = ord("T")
    grid[:, 12:20] = _clock_texts()[seconds - days * 86400]
    if not fractions:
        grid[:, 20:22] = np.frombuffer(b'Z"', dtype=np.uint8)
        width = np.full(len(ns), 22, dtype=np.int64)
        body = grid
    else:
        digits = np.full(len(ns), 9, dtype=np.int64)  # the fraction's, its trailing zeros cut
        for power in range(1, 9):
            digits -= fraction % 10**power == 0
        width = 22 + np.where(fraction != 0, digits + 1, 0)
        grid[:, 20] = ord(".")
        grid[:, 21:30] = _digits(fraction, 9)
        rows = np.arange(len(ns))
        grid[rows, width - 2] = ord("Z")
        grid[rows, width - 1] = ord('"')
        body = grid[np.arange(32) < width[:, None]]
    offsets = np.zeros(len(ns) + 1, dtype=np.int64)
    np.cumsum(width, out=offsets[1:])
    texts = pa.LargeStringArray.from_buffers(len(ns), pa.py_buffer(offsets), pa.py_buffer(body))
    return pc.if_else(column.is_valid(), texts, "null") if column.null_count else texts


def _digits(values: np.ndarray, size: int) -> np.ndarray:
    """Each of ``values`` (0 to 10**size - 1) as its ``size`` ASCII digits, zero-padded."""
    powers = 10 ** np.arange(size - 1, -1, -1, dtype=np.int64)
    out: np.ndarray = (48 + values[:, None] // powers % 10).astype(np.uint8)
    return out


def _date_texts(days: np.ndarray) -> np.ndarray:
    """``YYYY-MM-DD`` of days since 1970-01-01, as rows of ASCII."""
    year, month, day = _civil(days)
    dash = np.full((len(days), 1), ord("-"), dtype=np.uint8)
    return np.concatenate([_digits(year, 4), dash, _digits(month, 2), dash, _digits(day, 2)], axis=1)


@functools.cache
def _clock_texts() -> np.ndarray:
    """``HH:MM:SS`` of each second of a day, as rows of ASCII (once, 691 kB)."""
    second = np.arange(86400, dtype=np.int64)
    colon = np.full((86400, 1), ord(":"), dtype=np.uint8)
    parts = [_digits(second // 3600, 2), colon, _digits(second // 60 % 60, 2), colon, _digits(second % 60, 2)]
    return np.concatenate(parts, axis=1)


def _civil(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The proleptic Gregorian year, month and day of days since 1970-01-01 (H. Hinnant's
    ``civil_from_days``, vectorised)."""
    z = days + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month, day


def _text(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())
