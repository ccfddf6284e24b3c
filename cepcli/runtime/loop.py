"""The loop every runtime runs in: events in, matches out, statistics along the way."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from cepcli.events import Event
from cepcli.runtime.matches import Match
from cepcli.runtime.stats import Stats


class Runtime(Protocol):
    def process(self, event: Event) -> Iterable[Match]: ...

    def finish(self) -> Iterable[Match]: ...

    def report(self) -> None: ...


def drive(runtime: Runtime, events: Iterable[Event], stats: Stats, every: int = 0) -> Iterator[Match]:
    """Feed the relevant events to a runtime, yielding matches as they are found; with
    ``every`` (``--stats-every``), snapshot the counters every that many relevant events."""
    try:
        for event in events:
            if not event.mask:  # a clock tick: time passed, no variable can use it
                yield from runtime.process(event)
                continue
            stats.relevant_events += 1
            yield from runtime.process(event)
            if every and stats.relevant_events % every == 0:
                stats.snapshot()
        yield from runtime.finish()
    finally:
        runtime.report()
