"""The event model shared by sources and runtimes (docs/semantics.md section 1).

An event that reaches an automaton is a small slotted object: its row id, its
timestamp in exact int64 nanoseconds (UTC), its type, the values of all columns
(``None`` when missing), and a bit mask of the pattern variables whose type and
single-variable conditions it passed in the prefilter.

The columns a condition reads hold typed values (int, float, bool, str; a ``time``
column int nanoseconds); the others hold what the reader gave (text for CSV), typed
when written (``cepcli.render``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

# Bounds beyond every int64 nanosecond timestamp (int sentinels keep comparisons exact).
FAR_PAST = -(1 << 64)
FAR_FUTURE = 1 << 64


class Kind(enum.Enum):
    INT = "int"
    FLOAT = "float"
    DECIMAL = "decimal"  # exact: a decimal type, or decimal text (``--schema x:decimal``)
    BOOL = "bool"
    TIME = "time"  # an instant; conditions see it as a number of time units
    DURATION = "duration"  # a length of time; conditions see it as a number of time units
    STR = "str"
    OTHER = "other"  # nested values (struct, list, map, ...): printed as JSON, never compared
    UNKNOWN = "unknown"  # no value in the sample
    PENDING = "pending"  # a pipe's column with no value yet: its first present value decides

    @property
    def numeric(self) -> bool:
        """Compared and computed with as numbers in conditions."""
        return self in (Kind.INT, Kind.FLOAT, Kind.DECIMAL, Kind.TIME, Kind.DURATION)

    @property
    def timed(self) -> bool:
        """Held as int64 nanoseconds; conditions see a number of time units."""
        return self in (Kind.TIME, Kind.DURATION)


@dataclass(frozen=True, slots=True)
class Schema:
    """The columns of an input, their kinds, and which ones hold type and time."""

    columns: tuple[str, ...]
    kinds: tuple[Kind, ...]
    type_col: str = "type"
    time_col: str = "ts"
    time_unit: int = 10**9  # nanoseconds per time unit: conditions see times in these units
    nulls: frozenset[str] = frozenset()  # the null markers: missing in every kind but str
    # On a pipe, kinds decided as the stream goes (a column's first present value; a column
    # of whole numbers widened to float), by column position: the writers type by them.
    decided: dict[int, Kind] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def index(self, column: str) -> int:
        return self.columns.index(column)

    def kind(self, column: str) -> Kind:
        """A column's kind as conditions see it (the time column is a time)."""
        if column == self.time_col:
            return Kind.TIME
        i = self.columns.index(column)
        return self.decided.get(i, self.kinds[i])

    def kind_at(self, i: int) -> Kind:
        """The kind of the column at position ``i`` now (decided on a pipe, or as sampled)."""
        return self.decided.get(i, self.kinds[i])

    def current_kinds(self) -> tuple[Kind, ...]:
        """The kinds now, with those decided on a pipe so far."""
        if not self.decided:
            return self.kinds
        return tuple(self.decided.get(i, k) for i, k in enumerate(self.kinds))


class Event:
    """One input row that some pattern variable can use."""

    __slots__ = ("row", "ts", "type", "values", "mask", "text")

    def __init__(self, row: int, ts: int, type_: str, values: Sequence[object], mask: int) -> None:
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
