"""Time, exactly: every instant is an int64 number of nanoseconds since 1970-01-01 UTC,
every length of time an int number of nanoseconds. How conditions see them (a number of
the input's time unit), how they are written (ISO-8601), and the window of a pattern.
The base of cepcli: no other module of it is imported here."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

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
