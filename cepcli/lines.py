"""A match's line made from columns: the columnar engine's matches (``Found``), a slice's
at a time, as the text the writers make from their events, byte for byte, without making
the events (their values' text by Arrow's kernels where their types allow, else value by
value): jsonl (``cepcli.output.match_line``'s) and csv (``flat_row``'s cells, quoted as
Python's ``csv`` module quotes them). ``cepcli run --format jsonl`` and ``--format csv``
write them so (``cepcli.writers``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow, whole
from cepcli.events import Kind, Schema
from cepcli.output import CsvLines, ManyFlat, event_text, exact_json, flat_cell, json_value, time_json
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
    unique, bound = _matched(found, names)
    texts = event_texts(found.data, unique, schema, keep)
    parts: list[pa.Array | pa.Scalar] = []
    for i, (name, index, offsets) in enumerate(bound):
        parts.append(_text((prefix if i == 0 else ",") + json.dumps(name) + ":"))
        if offsets is None:
            parts.append(texts.take(arrow(index)))
            continue
        joined = pc.binary_join(
            pa.LargeListArray.from_arrays(arrow(offsets), texts.take(arrow(index))), _text(",")
        )
        parts.append(pc.binary_join_element_wise(_text("["), joined, _text("]"), _text("")))
    return _ends(pc.binary_join_element_wise(*parts, _text("}\n"), _text("")))


def _matched(
    found: Found, names: Sequence[str]
) -> tuple[np.ndarray, list[tuple[str, np.ndarray, np.ndarray | None]]]:
    """The distinct events of ``found``'s matches, of the variables ``names`` (their
    positions, sorted), and for each of those variables a match binds, in ``names``' order:
    where each match's event is among them; a Kleene variable's: where its runs' events are,
    with the runs' offsets."""
    bound = dict(zip(found.names, found.positions, strict=True))
    present = [n for n in names if n in bound]
    runs = [found.runs[n].flat for n in present if n in found.runs]
    unique, index = _distinct(np.concatenate([bound[n] for n in present] + runs))
    out: list[tuple[str, np.ndarray, np.ndarray | None]] = []
    at = len(present) * len(found)  # (the runs' events follow the variables' own)
    for i, name in enumerate(present):
        if name not in found.runs:
            out.append((name, index[i * len(found) : (i + 1) * len(found)], None))
            continue
        run = found.runs[name]
        out.append((name, index[at : at + len(run.flat)], run.offsets))
        at += len(run.flat)
    return unique, out


def _ends(lines: pa.Array) -> tuple[pa.Buffer, np.ndarray]:
    """Lines (a large string array) as one buffer of their bytes, and where each ends (in
    bytes from the first one's start)."""
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
        shape = time_json if i == time_at else json_value
        dumped = functools.partial(_dumped, shape=shape, kind=kinds[i], nulls=nulls, exact=exact)
        parts.append(_column_texts(values[i], kinds[i], nulls, i in data.decimal_text, _JSON, dumped))
    parts.append(_text(("," if len(parts) > 1 else "") + '"_row":'))
    parts.append(pc.cast(arrow(data.rows[positions]), pa.large_string()))
    parts.append(_text("}"))
    return pc.binary_join_element_wise(*parts, _text(""))


@dataclass(frozen=True, slots=True)
class _Form:
    """How a format writes a column's values: as JSON (text quoted, a missing value
    ``null``) or as csv cells (text as it is, a missing value empty)."""

    json: bool
    missing: str
    infinity: tuple[str, str]  # (positive, negative)
    plain: tuple[Kind, ...]  # the kinds whose text is written as it is (JSON: quoted)


_JSON = _Form(True, "null", ('"inf"', '"-inf"'), (Kind.STR,))
_CSV = _Form(False, "", ("inf", "-inf"), (Kind.STR, Kind.UNKNOWN, Kind.PENDING))


def _column_texts(
    column: pa.Array | pa.ChunkedArray,
    kind: Kind,
    nulls: frozenset[str],
    decimal_text: bool,
    form: _Form,
    by_value: Callable[[object], str],
) -> pa.Array:
    """One column's values as ``form`` writes them (JSON's text, or csv's cells): integers,
    times, booleans, plain text, text of a kind the query did not read and whole floats by
    Arrow's kernels; the others by ``by_value``, value by value (as the events hold them)."""
    column = whole(column)
    kinds = column.type
    text = pa.types.is_string(kinds) or pa.types.is_large_string(kinds)
    if not decimal_text:
        if pa.types.is_integer(kinds) and kind is not Kind.DURATION:
            if kind is Kind.TIME:
                return _iso_texts(column, form)
            return pc.fill_null(pc.cast(column, pa.large_string()), form.missing)
        if pa.types.is_boolean(kinds):
            return pc.fill_null(pc.if_else(column, _text("true"), _text("false")), form.missing)
        if text and kind in form.plain:
            written = _quoted(column) if form.json else pc.cast(column, pa.large_string())
            return pc.fill_null(written, form.missing)
        if text and kind in (Kind.TIME, Kind.INT):
            typed = _written_text(column, kind, nulls, form)  # (text the query did not read)
            if typed is not None:
                return typed
        if pa.types.is_floating(kinds):
            floats = _whole_floats(column, form)
            if floats is not None:
                return floats
    return pa.array([by_value(v) for v in column_values(column, decimal_text)], pa.large_string())


def _dumped(
    value: object,
    shape: Callable[[object, Kind, frozenset[str]], object],
    kind: Kind,
    nulls: frozenset[str],
    exact: bool,
) -> str:
    """A value as ``event_text`` dumps it (``shape``: ``json_value``, or the time column's
    ``time_json``; ``exact``: a decimal as a JSON number)."""
    shown = shape(value, kind, nulls)
    if exact:
        return (
            format(shown, "f")
            if isinstance(shown, Decimal)
            else json.dumps(shown, separators=(",", ":"), default=str)
        )
    return json.dumps(shown, separators=(",", ":"), default=str, allow_nan=False)


def _whole_floats(column: pa.Array, form: _Form) -> pa.Array | None:
    """Floats whose values are whole numbers below 1e16 (counts and minutes with missing
    values: a float column) as Python writes them (``repr``: ``12.0``, ``-0.0``; NaN and null
    missing, infinities as ``json_value`` has them), as ``form`` writes them, made by
    Arrow's kernels; None where another value has digits after the point, or is larger
    (Python writes those its own way: value by value)."""
    values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    finite = np.isfinite(values)
    if not np.all(values[finite] == np.trunc(values[finite])) or np.any(np.abs(values[finite]) >= 1e16):
        return None
    whole = np.where(finite, values, 0).astype(np.int64)
    texts = pc.binary_join_element_wise(pc.cast(arrow(whole), pa.large_string()), _text(".0"), _text(""))
    negative_zero = finite & (values == 0) & np.signbit(values)
    if negative_zero.any():
        texts = pc.if_else(arrow(negative_zero), _text("-0.0"), texts)
    if not finite.all():
        positive, negative = form.infinity
        signed = pc.if_else(arrow(values > 0), _text(positive), _text(negative))
        texts = pc.if_else(arrow(np.isinf(values)), signed, texts)
        texts = pc.if_else(arrow(np.isnan(values)), _text(form.missing), texts)
    if column.null_count:
        texts = pc.if_else(column.is_valid(), texts, _text(form.missing))
    return texts


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


def _written_text(column: pa.Array, kind: Kind, nulls: frozenset[str], form: _Form) -> pa.Array | None:
    """A text column of a kind the query did not read, as ``json_value`` types each value
    (``output._typed_text``): a null marker is null; a time's text stays text; an integer's
    text that has the shape of one is its number, other text stays text; as JSON (text
    quoted, ``null``), or as csv cells (``cell_text``'s: text as it is, missing empty), as
    ``form`` writes them. None where Arrow's kernels cannot say so exactly (text beyond ASCII,
    whose digits Python reads and Arrow does not; a number past int64): those go value by
    value."""
    if not pc.all(pc.string_is_ascii(column)).as_py():
        return None
    out = _quoted(column) if form.json else pc.cast(column, pa.large_string())
    missing = form.missing
    if kind is Kind.INT:
        shaped = pc.fill_null(pc.match_substring_regex(column, INT_SHAPE), False)
        digits = pc.replace_substring_regex(pc.utf8_trim_whitespace(column), r"^\+", "")
        try:
            numbers = pc.cast(pc.if_else(shaped, digits, pa.scalar(None, pa.string())), pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        out = pc.if_else(shaped, pc.cast(numbers, pa.large_string()), out)
    if nulls:
        out = pc.if_else(pc.is_in(column, pa.array(sorted(nulls), pa.string())), _text(missing), out)
    return pc.fill_null(out, missing)


def _iso_texts(column: pa.Array, form: _Form) -> pa.Array:
    """Times in int64 ns as ``iso_text`` writes them, as ``form`` writes them (JSON strings,
    quoted, ``null``; csv cells, as they are, missing empty). Made by numpy as a grid of
    characters, a row per time (``"YYYY-MM-DDTHH:MM:SS``, the fraction's digits with their
    dot where it has any, ``Z"``; csv's rows without the quotes), the dates and the times
    of day looked up in tables of their texts, the rows then joined (Arrow's cast of a
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
    columns = np.arange(grid.shape[1])
    if form.json:
        body = grid[columns < width[:, None]] if fractions else grid
    else:  # (the text between the quotes)
        body = grid[(columns >= 1) & (columns < width[:, None] - 1)]
        width = width - 2
    offsets = np.zeros(len(ns) + 1, dtype=np.int64)
    np.cumsum(width, out=offsets[1:])
    texts = pa.LargeStringArray.from_buffers(len(ns), pa.py_buffer(offsets), pa.py_buffer(body))
    return pc.if_else(column.is_valid(), texts, form.missing) if column.null_count else texts


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


def found_csv(found: Found, flat: ManyFlat, query: str, named: bool) -> tuple[pa.Buffer, np.ndarray]:
    """``found``'s matches (of ``query``) as their csv lines, each with its newline: the
    text ``CsvWriter.write`` makes of each (``flat``'s row of ``flat_row``'s cells, without
    the query's when not ``named``, quoted as Python's ``csv`` module quotes them), byte
    for byte, made from columns; as UTF-8 bytes, and where each line ends, in bytes from
    the first one's start. A Kleene variable's values are joined with ``;`` in row order;
    a variable the match (its query, its OR branch) does not bind is left empty."""
    unique, bound = _matched(found, flat.names[query])
    cells = event_cells(found.data, unique, flat.schema, flat.keep)
    quoted: list[pa.Array] = []  # (each event's cells quoted once, for the variables of one event)
    mine: dict[str, list[pa.Array]] = {}
    for name, index, offsets in bound:
        taken = arrow(index)
        if offsets is None:
            quoted = quoted or [_csv_quoted(c) for c in cells]
            mine[name] = [c.take(taken) for c in quoted]
            continue
        lists = [pa.LargeListArray.from_arrays(arrow(offsets), c.take(taken)) for c in cells]
        mine[name] = [
            _csv_quoted(pc.binary_join(values, _text(";"))) for values in lists
        ]  # (joined, then quoted)
    fields: list[pa.Array | str] = [_csv_cell(query)] if named else []
    for name in flat.at:  # (every query's variables, in the order of the header)
        fields.extend(mine.get(name, [""] * flat.width))
    parts: list[pa.Array | pa.Scalar] = []
    text = ""  # (constant cells and commas between arrays: one scalar each)
    for k, field in enumerate(fields):
        text += "," if k else ""
        if isinstance(field, str):
            text += field
            continue
        if text:
            parts.append(_text(text))
        parts.append(field)
        text = ""
    parts.append(_text(text + "\n"))
    return _ends(pc.binary_join_element_wise(*parts, _text("")))


def event_cells(
    data: Columns, positions: np.ndarray, schema: Schema, keep: Sequence[int] | None
) -> list[pa.Array]:
    """The csv cells of the events at ``positions`` (``flat_row``'s, unquoted): ``_row``,
    then each column ``keep`` names (all by default); integers, times, booleans and text by
    Arrow's kernels, other values by ``flat_cell``, value by value."""
    kinds, nulls, columns = schema.current_kinds(), schema.nulls, schema.columns
    time_at = columns.index(schema.time_col) if schema.time_col in columns else -1
    shown = range(len(columns)) if keep is None else keep
    if data.values is None:  # events made before (a Spark shard's): their own values
        events = data.events(positions)
        out = [pa.array([str(e.row) for e in events], pa.large_string())]
        for i in shown:
            cells = [flat_cell(e.values[i], kinds[i], nulls, i == time_at) for e in events]
            out.append(pa.array(cells, pa.large_string()))
        return out
    values = data.values(positions)
    out = [pc.cast(arrow(data.rows[positions]), pa.large_string())]
    for i in shown:
        cell = functools.partial(flat_cell, kind=kinds[i], nulls=nulls, time=i == time_at)
        out.append(_column_texts(values[i], kinds[i], nulls, i in data.decimal_text, _CSV, cell))
    return out


def _csv_quoted(cells: pa.Array) -> pa.Array:
    """Cells quoted where the writer's rows quote them (``_QUOTED``: a comma, a quote, a
    line break), each quote doubled."""
    buffers = cells.buffers()
    if buffers[2] is None:
        return cells
    offsets = np.frombuffer(buffers[1], np.int64)
    data = np.frombuffer(buffers[2], np.uint8)[offsets[cells.offset] : offsets[cells.offset + len(cells)]]
    if not np.isin(data, _QUOTED_BYTES).any():  # (one look at the text, not a pattern per cell)
        return cells
    doubled = pc.replace_substring(cells, '"', '""')
    quoted = pc.binary_join_element_wise(_text('"'), doubled, _text('"'), _text(""))
    return pc.if_else(pc.match_substring_regex(cells, _QUOTED_PATTERN), quoted, cells)


def _csv_cell(text: str) -> str:
    """One cell as the writer's rows write it in a row of several."""
    return '"' + text.replace('"', '""') + '"' if _QUOTED.search(text) else text


def _quoting() -> str:
    """The characters ``CsvLines`` (the writer's rows: Python's ``csv``) quotes a cell for,
    found by asking it."""
    lines = CsvLines()
    return "".join(char for char in ',"\n\r\t; ' if lines.line([f"a{char}b", "c"]).startswith('"'))


_QUOTED_CHARS = _quoting()
_QUOTED = re.compile("[" + re.escape(_QUOTED_CHARS) + "]")
_QUOTED_PATTERN = "[" + "".join(f"\\x{ord(c):02x}" for c in _QUOTED_CHARS) + "]"
_QUOTED_BYTES = np.frombuffer(_QUOTED_CHARS.encode("ascii"), np.uint8)
