"""What the lazy runtimes share when they take an event from the buffer: the ordering
filters ``prec``/``succ`` resolved at run time (the most restrictive bound is the
latest event that must precede, and the earliest that must follow), and the check of
``[attr]`` and the conditions that the take binds."""

from __future__ import annotations

from collections.abc import Sequence

from cepcli.events import Event, events_of
from cepcli.plan.keys import same_key
from cepcli.plan.pattern import Condition
from cepcli.plan.python import CompiledCondition
from cepcli.runtime.buffer import FIRST, LAST, Key
from cepcli.runtime.stats import Stats


def latest(slots: Sequence[int], m: Sequence[object]) -> Key:
    """The stream position after which the variable must come (``prec``)."""
    best = FIRST
    for slot in slots:
        for e in events_of(m[slot]):
            if (e.ts, e.row) > best:
                best = (e.ts, e.row)
    return best


def earliest(slots: Sequence[int], m: Sequence[object]) -> Key:
    """The stream position before which the variable must come (``succ``)."""
    best = LAST
    for slot in slots:
        for e in events_of(m[slot]):
            if (e.ts, e.row) < best:
                best = (e.ts, e.row)
    return best


def takes(
    equiv: tuple[int, ...],
    slot: int,
    check: Sequence[tuple[CompiledCondition, Condition]],
    m: list[object],
    event: Event,
    stats: Stats,
) -> bool:
    """``[attr]`` and the conditions that become bound when ``event`` fills ``slot``."""
    if equiv and not same_key(equiv, m, event):
        return False
    if not check:
        return True
    m[slot] = event
    try:
        for fn, _ in check:
            stats.predicate_evaluations += 1
            if not fn(m):
                return False
        return True
    finally:
        m[slot] = None
