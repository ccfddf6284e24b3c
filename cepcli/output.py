"""Matches as data: the values and shapes every output shares (jsonl, csv, the table,
``cepcli.find``, Spark). No rich and no click here."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from cepcli.clock import duration_text, iso_text
from cepcli.errors import UsageError, flag
from cepcli.events import Event, Kind, Schema, events_of
from cepcli.plan.pattern import Pattern
from cepcli.runtime.matches import Binding, Match
from cepcli.sources.text import INT_SHAPE

_INT = re.compile(INT_SHAPE)  # (the shape the readers' casts read as a whole number)
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def json_value(value: object, kind: Kind, nulls: frozenset[str] = frozenset()) -> object:
    """A value as JSON has it: columns the query did not read still hold their text,
    typed here by their kind (and left as text when it does not fit; a null marker is
    missing in every kind but ``str``). A time is ISO-8601 text (UTC), a duration ISO-8601
    too (``PT1.5S``); a decimal stays a ``Decimal``; a nested value is its JSON (parsed);
    a non-finite float is the string ``"inf"`` or ``"-inf"`` (JSON has no infinity; NaN is
    a missing value, null)."""
    if isinstance(value, str):
        return _typed_text(value, kind, nulls)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if kind is Kind.TIME:
            return iso_text(value)
        return duration_text(value) if kind is Kind.DURATION else value
    if isinstance(value, float):
        if value != value:
            return None
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return value


def time_json(value: object, kind: Kind, nulls: frozenset[str] = frozenset()) -> object:
    """The time column's value as JSON has it: as the input holds it, as every column
    (``json_value``), but that a fraction written as text is its exact decimal (never
    through a float: ``1.000000001`` and ``1.000000002`` stay apart)."""
    if kind is Kind.FLOAT and isinstance(value, str):
        number = exact_number_text(value)
        if number is not None:
            return number
    return json_value(value, kind, nulls)


def exact_number_text(text: str) -> int | Decimal | None:
    """A number's text as the exact number it is written as: an int when written whole, else
    a ``Decimal`` with its digits (no exponent: ``1e3`` is ``1000``); None when no number."""
    stripped = text.strip()
    if _INT.match(stripped):
        return int(stripped)
    try:
        number = Decimal(stripped)
    except ArithmeticError:
        return None
    if not number.is_finite():
        return None
    if number.as_tuple().exponent >= 0:  # type: ignore[operator]
        return Decimal(int(number))
    return number


def exact_json(schema: Schema) -> bool:
    """Can an event object hold a ``Decimal`` (``json_text`` then writes it as a number)?"""
    kinds = schema.current_kinds()
    return Kind.DECIMAL in kinds or (
        schema.time_col in schema.columns and kinds[schema.index(schema.time_col)] is Kind.FLOAT
    )


def _typed_text(text: str, kind: Kind, nulls: frozenset[str]) -> object:
    if kind is Kind.STR:
        return text
    if text in nulls:
        return None
    if kind is Kind.INT and _INT.match(text):
        return int(text)
    if kind is Kind.FLOAT:
        try:
            return json_value(float(text), kind)
        except ValueError:
            return text
    if kind is Kind.DECIMAL:
        try:
            return Decimal(text.strip())
        except ArithmeticError:
            return text
    if kind is Kind.OTHER:
        return json.loads(text)
    if kind is Kind.BOOL:
        return _BOOLS.get(text.strip().lower(), text)
    return text


def cell_text(value: object, kind: Kind, nulls: frozenset[str] = frozenset()) -> str:
    """A value as a CSV cell, in one form whether the query read its column (a typed value)
    or not (its text, typed here by its kind: ``114.00`` in a float column is ``114.0``
    either way); text that does not fit its kind, and a ``str`` column, as written."""
    if value is None:
        return ""
    if isinstance(value, str) and kind in (Kind.STR, Kind.UNKNOWN, Kind.PENDING):
        return value
    try:
        shown = json_value(value, kind, nulls)
    except ValueError:  # (nested text that is no JSON: as written)
        return value if isinstance(value, str) else str(value)
    return shown_text(shown)


def shown_text(shown: object) -> str:
    """A value as ``json_value`` gives it, as a CSV cell."""
    if isinstance(shown, bool):
        return "true" if shown else "false"
    if isinstance(shown, Decimal):
        return format(shown, "f")
    if isinstance(shown, dict | list):
        return json.dumps(shown, separators=(",", ":"))
    return "" if shown is None else str(shown)


def event_object(event: Event, schema: Schema, keep: Sequence[int] | None = None) -> dict[str, Any]:
    """An event as JSON: its columns (``keep``: the positions of those ``--show`` names),
    then ``_row``."""
    nulls, kinds, values, columns = schema.nulls, schema.current_kinds(), event.values, schema.columns
    if keep is None:
        out = {c: json_value(v, k, nulls) for c, v, k in zip(columns, values, kinds, strict=True)}
    else:
        out = {columns[i]: json_value(values[i], kinds[i], nulls) for i in keep}
    time_col = schema.time_col
    if time_col in out:
        at = schema.index(time_col)
        out[time_col] = time_json(values[at], kinds[at], nulls)
    out["_row"] = event.row
    return out


def match_object(
    match: Match, schema: Schema, pattern: Pattern, keep: Sequence[int] | None = None
) -> dict[str, Any]:
    """A match as JSON: a key per positive variable (pattern order), an event object or,
    for a Kleene variable, a list of them in row order."""
    out: dict[str, Any] = {}
    for name, b in ordered(match, variables(pattern)):
        out[name] = (
            [event_object(e, schema, keep) for e in b]
            if isinstance(b, tuple)
            else event_object(b, schema, keep)
        )
    return out


def match_line(match: Match, schema: Schema, names: list[str], keep: Sequence[int] | None = None) -> str:
    """A match as its jsonl line (no newline): ``match_object`` in compact JSON, each event's
    JSON made once (an event is often part of many matches)."""
    parts = []
    for name, b in ordered(match, names):
        key = _KEYS.get(name)
        if key is None:
            key = _KEYS[name] = json.dumps(name) + ":"
        if isinstance(b, tuple):
            parts.append(key + "[" + ",".join([event_text(e, schema, keep) for e in b]) + "]")
        else:
            parts.append(key + event_text(b, schema, keep))
    return "{" + ",".join(parts) + "}"


_KEYS: dict[str, str] = {}  # a variable's name as a JSON key, with its colon


def event_text(event: Event, schema: Schema, keep: Sequence[int] | None) -> str:
    text = event.text  # (made with one run's ``keep``)
    if text is None:
        obj = event_object(event, schema, keep)
        if exact_json(schema):
            text = event.text = json_text(obj)
        else:
            text = event.text = json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False)
    return text


def json_text(obj: dict[str, Any]) -> str:
    """An event object as compact JSON; a decimal as a JSON number with its digits."""
    parts = (
        json.dumps(k)
        + ":"
        + (format(v, "f") if isinstance(v, Decimal) else json.dumps(v, separators=(",", ":"), default=str))
        for k, v in obj.items()
    )
    return "{" + ",".join(parts) + "}"


class MatchCodec:
    """A match as one line of text and back, exactly: what Spark's executors send the driver,
    whose writers (jsonl, csv, the table) then write what a local run writes. Each bound
    variable with its event (a Kleene variable: its events, in row order), each event with its
    row id, its time in int64 nanoseconds, its type and its values, each value of the Python
    type the event held (an int, a float, infinities included, a bool, text, None; a
    ``Decimal`` as ``{"$": "its digits"}``). The line is JSON with no newline of its own, so
    that lines can be packed, joined by newlines.

    An event is often part of many matches: the encoder makes its text once, the decoder its
    ``Event`` once (by row id; both keep the latest ``CACHED`` events)."""

    CACHED = 1 << 16

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}
        self._events: dict[int, Event] = {}

    def encode(self, match: Match) -> str:
        parts = []
        for name, binding in match.bindings:
            value = (
                "[" + ",".join(map(self._event_text, binding)) + "]"
                if isinstance(binding, tuple)
                else self._event_text(binding)
            )
            parts.append(f"[{json.dumps(name)},{value}]")
        return "[" + ",".join(parts) + "]"

    def decode(self, text: str) -> Match:
        bindings: list[tuple[str, Binding]] = []
        for name, value in json.loads(text, object_hook=_decimal):
            if isinstance(value[0], list):  # a Kleene variable's events (an event starts with its row)
                bindings.append((name, tuple(map(self._event, value))))
            else:
                bindings.append((name, self._event(value)))
        return Match(tuple(bindings))

    def _event_text(self, event: Event) -> str:
        text = self._texts.get(event.row)
        if text is None:
            if len(self._texts) >= self.CACHED:
                self._texts.clear()
            text = self._texts[event.row] = json.dumps(
                [event.row, event.ts, event.type, *event.values],
                separators=(",", ":"),
                ensure_ascii=False,
                default=_tagged,
            )
        return text

    def _event(self, parts: list[Any]) -> Event:
        row = parts[0]
        event = self._events.get(row)
        if event is None:
            if len(self._events) >= self.CACHED:
                self._events.clear()
            event = self._events[row] = Event(row, parts[1], parts[2], tuple(parts[3:]), 0)
        return event


def _tagged(value: object) -> object:
    if isinstance(value, Decimal):
        return {"$": str(value)}
    raise TypeError(f"an event value of type {type(value).__name__} cannot travel")


def _decimal(obj: dict[str, Any]) -> object:
    return Decimal(obj["$"])


def flat_columns(schema: Schema, pattern: Pattern, keep: Sequence[int] | None = None) -> list[str]:
    """The columns of the flat (csv) form: ``v._row`` and ``v.<column>`` (``keep``: the
    positions of the columns ``--show`` names)."""
    columns = schema.columns if keep is None else [schema.columns[i] for i in keep]
    return [f"{n}.{c}" for n in variables(pattern) for c in ("_row", *columns)]


def flat_row(match: Match, schema: Schema, pattern: Pattern, keep: Sequence[int] | None = None) -> list[Any]:
    """A match in the flat form; a Kleene variable's values joined with ``;``, a variable
    the match's OR branch does not bind left empty."""
    bound = dict(match.bindings)
    line: list[Any] = []
    kinds = schema.current_kinds()
    positions = range(len(kinds)) if keep is None else keep
    time_at = schema.index(schema.time_col) if schema.time_col in schema.columns else -1
    for name in variables(pattern):
        events = events_of(bound.get(name))
        line.append(";".join(str(e.row) for e in events))
        for i in positions:
            line.append(
                ";".join(flat_cell(e.values[i], kinds[i], schema.nulls, i == time_at) for e in events)
            )
    return line


def flat_cell(value: object, kind: Kind, nulls: frozenset[str], time: bool = False) -> str:
    """A value's cell in the flat form (``cell_text``; ``time``: the time column's, which
    keeps a fraction written as text exact: ``time_json``)."""
    if time:
        shown = time_json(value, kind, nulls)
        return "" if shown is None else shown_text(shown)
    return cell_text(value, kind, nulls)


def kept(schema: Schema, show: Sequence[str] | None) -> tuple[int, ...] | None:
    """The positions of the columns ``--show`` (``show=``) names, checked; None: all."""
    if show is None:
        return None
    unknown = [c for c in show if c not in schema.columns]
    if unknown:
        raise UsageError(
            f"{flag('show')} names no column {unknown[0]!r} (columns: {', '.join(schema.columns)})"
        )
    return tuple(schema.index(c) for c in dict.fromkeys(show))


class ManyFlat:
    """The flat form of several queries' matches (``cepcli.run``): a ``query`` column, then
    the columns of every query's variables in the order first met (a variable name two
    queries share shares its columns; a query's match leaves the others empty)."""

    def __init__(
        self, schema: Schema, patterns: dict[str, Pattern], keep: Sequence[int] | None = None
    ) -> None:
        self.schema, self.patterns, self.keep = schema, patterns, keep
        self.names = {query: variables(p) for query, p in patterns.items()}
        union = list(dict.fromkeys(n for names in self.names.values() for n in names))
        columns = schema.columns if keep is None else [schema.columns[i] for i in keep]
        self.width = 1 + len(columns)  # a variable's cells: its row and every column kept
        self.at = {n: i * self.width for i, n in enumerate(union)}
        self.columns = ["query", *(f"{n}.{c}" for n in union for c in ("_row", *columns))]

    def row(self, query: str, match: Match) -> list[Any]:
        cells = flat_row(match, self.schema, self.patterns[query], self.keep)
        line: list[Any] = [query, *[""] * (len(self.columns) - 1)]
        width = self.width
        for k, name in enumerate(self.names[query]):
            line[1 + self.at[name] : 1 + self.at[name] + width] = cells[k * width : (k + 1) * width]
        return line


def variables(pattern: Pattern) -> list[str]:
    return [v.name for v in pattern.variables if not v.negated]


def ordered(match: Match, names: list[str]) -> list[tuple[str, Binding]]:
    bound = dict(match.bindings)
    return [(name, bound[name]) for name in names if name in bound]


class CsvLines:
    """CSV rows as text, each made whole before it is written (a row cut by a full disk or a
    signal is never half in the output), ending in a newline; a cell is quoted where it
    holds a comma, a quote or a line break (``\n`` or ``\r``: a reader ends a row at
    either), its quotes doubled."""

    def __init__(self) -> None:
        self.text = io.StringIO()
        # (Python's csv quotes a cell for the characters of the line's end: \r\n, then cut)
        self.writer = csv.writer(self.text, lineterminator="\r\n")

    def line(self, cells: Sequence[object]) -> str:
        self.writer.writerow(cells)
        row = self.text.getvalue()
        self.text.seek(0)
        self.text.truncate()
        return row[:-2] + "\n"
