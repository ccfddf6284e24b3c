"""Matches as data: the values and shapes every output shares (jsonl, csv, the table,
``cepcli.find``, Spark). No rich and no click here."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from cepcli.clock import duration_text, iso_text
from cepcli.events import Event, Kind, Schema, events_of
from cepcli.plan.pattern import Pattern
from cepcli.runtime.matches import Binding, Match

_INT = re.compile(r"^\s*[+-]?\d+\s*$")
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
    """A value as a CSV cell: as the input wrote it, typed values in their usual text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    shown = json_value(value, kind, nulls)
    if isinstance(shown, bool):
        return "true" if shown else "false"
    if isinstance(shown, Decimal):
        return format(shown, "f")
    if isinstance(shown, dict | list):
        return json.dumps(shown, separators=(",", ":"))
    return "" if shown is None else str(shown)


def event_object(event: Event, schema: Schema) -> dict[str, Any]:
    """An event as JSON: all its columns, then ``_row``."""
    nulls = schema.nulls
    out = {
        c: json_value(v, k, nulls)
        for c, v, k in zip(schema.columns, event.values, schema.current_kinds(), strict=True)
    }
    out["_row"] = event.row
    return out


def match_object(match: Match, schema: Schema, pattern: Pattern) -> dict[str, Any]:
    """A match as JSON: a key per positive variable (pattern order), an event object or,
    for a Kleene variable, a list of them in row order."""
    out: dict[str, Any] = {}
    for name, b in ordered(match, variables(pattern)):
        out[name] = [event_object(e, schema) for e in b] if isinstance(b, tuple) else event_object(b, schema)
    return out


def match_line(match: Match, schema: Schema, names: list[str]) -> str:
    """A match as its jsonl line (no newline): ``match_object`` in compact JSON, each event's
    JSON made once (an event is often part of many matches)."""
    parts = []
    for name, b in ordered(match, names):
        value = (
            "[" + ",".join(_event_text(e, schema) for e in b) + "]"
            if isinstance(b, tuple)
            else _event_text(b, schema)
        )
        parts.append(f"{json.dumps(name)}:{value}")
    return "{" + ",".join(parts) + "}"


def _event_text(event: Event, schema: Schema) -> str:
    text = event.text
    if text is None:
        obj = event_object(event, schema)
        if Kind.DECIMAL in schema.kinds:
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


def flat_columns(schema: Schema, pattern: Pattern) -> list[str]:
    """The columns of the flat (csv, DataFrame) form: ``v._row`` and ``v.<column>``."""
    return [f"{n}.{c}" for n in variables(pattern) for c in ("_row", *schema.columns)]


def flat_row(match: Match, schema: Schema, pattern: Pattern) -> list[Any]:
    """A match in the flat form; a Kleene variable's values joined with ``;``, a variable
    the match's OR branch does not bind left empty."""
    bound = dict(match.bindings)
    line: list[Any] = []
    for name in variables(pattern):
        events = events_of(bound.get(name))
        line.append(";".join(str(e.row) for e in events))
        for i, kind in enumerate(schema.current_kinds()):
            line.append(";".join(cell_text(e.values[i], kind, schema.nulls) for e in events))
    return line


def variables(pattern: Pattern) -> list[str]:
    return [v.name for v in pattern.variables if not v.negated]


def ordered(match: Match, names: list[str]) -> list[tuple[str, Binding]]:
    bound = dict(match.bindings)
    return [(name, bound[name]) for name in names if name in bound]
