"""Matches as data: the values and shapes every output shares (jsonl, csv, the table,
``cepcli.find``, Spark). No rich and no click here."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from cepcli.events import Event, Kind, Schema, events_of
from cepcli.plan.pattern import Pattern
from cepcli.runtime.matches import Binding, Match
from cepcli.sources.times import iso_text

_INT = re.compile(r"^\s*[+-]?\d+\s*$")
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def json_value(value: object, kind: Kind) -> object:
    """A value as JSON has it: columns the query did not read still hold their text,
    typed here by their kind (and left as text when it does not fit). A time is ISO-8601
    text (UTC); a non-finite float is the string ``"inf"`` or ``"-inf"`` (JSON has no
    infinity; NaN is a missing value, null)."""
    if isinstance(value, str):
        return _typed_text(value, kind)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return iso_text(value) if kind is Kind.TIME else value
    if isinstance(value, float):
        if value != value:
            return None
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return value


def _typed_text(text: str, kind: Kind) -> object:
    if text == "":
        return None
    if kind is Kind.INT and _INT.match(text):
        return int(text)
    if kind is Kind.FLOAT:
        try:
            return json_value(float(text), kind)
        except ValueError:
            return text
    if kind is Kind.BOOL:
        return _BOOLS.get(text.strip().lower(), text)
    return text


def cell_text(value: object, kind: Kind) -> str:
    """A value as a CSV cell: as the input wrote it, typed values in their usual text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    shown = json_value(value, kind)
    if isinstance(shown, bool):
        return "true" if shown else "false"
    return "" if shown is None else str(shown)


def event_object(event: Event, schema: Schema) -> dict[str, Any]:
    """An event as JSON: all its columns, then ``_row``."""
    out = {c: json_value(v, k) for c, v, k in zip(schema.columns, event.values, schema.kinds, strict=True)}
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
        text = event.text = json.dumps(
            event_object(event, schema), separators=(",", ":"), default=str, allow_nan=False
        )
    return text


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
        for i, kind in enumerate(schema.kinds):
            line.append(";".join(cell_text(e.values[i], kind) for e in events))
    return line


def variables(pattern: Pattern) -> list[str]:
    return [v.name for v in pattern.variables if not v.negated]


def ordered(match: Match, names: list[str]) -> list[tuple[str, Binding]]:
    bound = dict(match.bindings)
    return [(name, bound[name]) for name in names if name in bound]
