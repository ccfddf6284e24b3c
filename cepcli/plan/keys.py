"""Values as keys: where an event's value is compared for equality outside a compiled
condition (``[attr]``, a Kleene variable's group-by attribute, the tree's count of the
values its buffers hold). The missing-value rule of the language holds here as in the
conditions: a missing value (None; NaN, which the sources make None, is treated alike)
equals nothing, not even another missing value."""

from __future__ import annotations

from collections.abc import Sequence

from cepcli.events import Event, events_of


def present(value: object) -> bool:
    """Can this value equal another (it is not missing)?"""
    return value is not None and value == value


def same_key(columns: tuple[int, ...], m: Sequence[object], event: Event) -> bool:
    """``[attr]``: ``event`` has every column present and equal to the events already
    bound in ``m``. Every take checks this, so the bound events agree with each other
    and comparing with the first of them is enough."""
    values = event.values
    for k in columns:
        if not present(values[k]):
            return False
    for binding in m:
        bound = events_of(binding)
        if bound:
            return all(bound[0].values[k] == values[k] for k in columns)
    return True
