"""Time, exactly: every instant is an int64 number of nanoseconds since 1970-01-01 UTC,
every length of time an int number of nanoseconds. How conditions see them (a number of
the input's time unit), how they are written (ISO-8601), and the window of a pattern.
The base of cepcli: no other module of it is imported here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, Protocol, Self, TypeVar

TIME_UNITS = ("s", "ms", "us", "ns")
UNITS: dict[str, int] = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}  # nanoseconds per unit
RANGE = "between 1677-09-21 and 2262-04-11 (64-bit nanoseconds)"


def to_units(ns: int, unit: int) -> int | Fraction:
    """A time or a duration as conditions see it: in time units, exactly (an int when
    whole)."""
    whole, rest = divmod(ns, unit)
    return whole if not rest else Fraction(ns, unit)


def iso_text(ns: int) -> str:
    """An instant as ISO-8601 text, UTC, to the nanosecond when needed."""
    seconds, frac = divmod(ns, 10**9)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        stamp += f".{frac:09d}".rstrip("0")
    return stamp + "Z"


def duration_text(ns: int) -> str:
    """A duration as ISO-8601 text in seconds, exact: ``PT1.5S``, ``-PT0.000000001S``."""
    seconds, rest = divmod(abs(ns), 10**9)
    fraction = f".{rest:09d}".rstrip("0") if rest else ""
    return f"{'-' if ns < 0 else ''}PT{seconds}{fraction}S"


class Instants(Protocol):
    """Times in nanoseconds, one (an int) or many at once (a numpy array)."""

    def __add__(self, other: int, /) -> Self: ...

    def __sub__(self, other: int, /) -> Self: ...


T = TypeVar("T", bound=Instants)


_MAX, _MIN = (1 << 63) - 1, -(1 << 63)


def _shifted(at: T, by: int) -> T:
    """``at + by``: exact for an int; for many times at once (int64, which would wrap
    around), held to int64's least and greatest."""
    many: Any = at
    if isinstance(many, int):
        return at + by
    if by > _MAX or by < -_MAX:  # (a window longer than int64: all of time)
        return many * 0 + (_MAX if by > 0 else _MIN)  # type: ignore[no-any-return]
    held = many.clip(max=_MAX - by) if by >= 0 else many.clip(min=_MIN - by)
    return held + by  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Window:
    """A pattern's window ``W`` in nanoseconds. Events are inside it together when the
    latest of them is at most ``W`` after the earliest, inclusive (computed exactly on
    int64 nanoseconds). The one definition of it that every runtime, the adaptive segments
    and the Spark shards use."""

    ns: int

    def holds(self, earliest: int, latest: int) -> bool:
        """Are events from ``earliest`` to ``latest`` inside one window?"""
        return latest - earliest <= self.ns

    def reach(self, earliest: T, latest: T) -> tuple[T, T]:
        """The times an event may have to share a window with events spanning
        ``[earliest, latest]``: ``[latest - W, earliest + W]`` (for many spans at once too,
        held to int64: a reach past its ends is all of that end)."""
        return _shifted(latest, -self.ns), _shifted(earliest, self.ns)

    def horizon(self, now: int) -> int:
        """The earliest time that can still share a window with an event at ``now`` or
        later: an event before it can be dropped."""
        return now - self.ns

    def closes(self, earliest: T) -> T:
        """The latest time that can share a window with an event at ``earliest``: once an
        event past it has been seen, nothing can join or violate a match that began there."""
        return _shifted(earliest, self.ns)

    def around(self, part: Slice) -> tuple[int, int]:
        """The events a slice of time needs to find every match it owns, and to judge its
        negations: those of ``[low - W, high + W]``."""
        return part.low - self.ns, part.high + self.ns


@dataclass(frozen=True, slots=True)
class Slice:
    """A span of time ``[low, high)`` (an adaptive segment, a Spark shard) that owns the
    matches whose earliest event falls in it: cut time into slices and each match is owned
    by exactly one."""

    low: int
    high: int

    def owns(self, first_ts: int) -> bool:
        return self.low <= first_ts < self.high
