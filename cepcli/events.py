"""The event model shared by sources and runtimes (SPEC section 1).

An event that reaches an automaton is a small slotted object: its row id, its
timestamp in seconds, its type, the values of all columns (``None`` when missing),
and a bit mask of the pattern variables whose type and single-variable conditions
it passed in the prefilter.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class Kind(enum.Enum):
    INT = "int"
    FLOAT = "float"
    STR = "str"
    UNKNOWN = "unknown"  # no value seen yet

    @property
    def numeric(self) -> bool:
        return self in (Kind.INT, Kind.FLOAT)


@dataclass(frozen=True, slots=True)
class Schema:
    """The columns of an input, their kinds, and which ones hold type and time."""

    columns: tuple[str, ...]
    kinds: tuple[Kind, ...]
    type_col: str = "type"
    time_col: str = "ts"

    def index(self, column: str) -> int:
        return self.columns.index(column)

    def kind(self, column: str) -> Kind:
        if column == self.time_col:
            return Kind.FLOAT  # conditions see the timestamp in seconds
        return self.kinds[self.columns.index(column)]


class Event:
    """One input row that some pattern variable can use."""

    __slots__ = ("row", "ts", "type", "values", "mask", "text")

    def __init__(self, row: int, ts: float, type_: str, values: Sequence[object], mask: int) -> None:
        self.row = row
        self.ts = ts
        self.type = type_
        self.values = values
        self.mask = mask
        self.text: str | None = None  # the event as written, cached by a writer

    def __repr__(self) -> str:
        return f"Event(row={self.row}, ts={self.ts}, type={self.type!r})"


def events_of(binding: object) -> tuple[Event, ...]:
    """The events bound to a variable in a partial match: none, one, or a Kleene subset."""
    if binding is None:
        return ()
    return binding if isinstance(binding, tuple) else (binding,)


def same_key(columns: tuple[int, ...], m: Sequence[object], event: Event) -> bool:
    """``[attr]``: ``event`` has every column present and equal to the events already
    bound in ``m``. Every take checks this, so the bound events agree with each other
    and comparing with the first of them is enough."""
    values = event.values
    for k in columns:
        if values[k] is None:
            return False
    for binding in m:
        bound = events_of(binding)
        if bound:
            return all(bound[0].values[k] == values[k] for k in columns)
    return True


def typed_value(value: object, kind: Kind) -> object:
    """A value as its column's kind says (a source may leave unused columns as text)."""
    if not isinstance(value, str):
        return value
    if value == "":
        return None
    if kind is Kind.STR:
        return value
    try:
        number = float(value)
    except ValueError:
        return value
    if kind is Kind.INT or (
        kind is Kind.UNKNOWN and number.is_integer() and value.strip().lstrip("+-").isdigit()
    ):
        return int(number) if number.is_integer() else number
    return number
