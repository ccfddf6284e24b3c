"""How one evaluation runs, beside what it counts (``Stats``): whether its input is a pipe
(every match is written as soon as it is decided), how often the counters are recorded,
what it may hold (``--max-subsets``, ``--max-instances``) and where its warnings go. Given
to every runtime; the guard of ``--max-instances`` is where instances are made
(``Instances``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cepcli.errors import LimitError
from cepcli.notes import Notes
from cepcli.runtime.stats import Stats, too_many_instances

MAX_SUBSETS = 1_000_000


@dataclass(frozen=True, slots=True)
class EvalOptions:
    live: bool = False  # the input is a pipe: nothing may wait for later rows
    every: int = 0  # with --stats-every: record the counters every this many relevant events
    max_subsets: int = MAX_SUBSETS  # warn (once) when one Kleene candidate set allows more subsets
    max_instances: int | None = None  # stop with LimitError when more instances are alive at once
    notes: Notes = field(default_factory=Notes, compare=False)


class Instances:
    """Instances (partial matches held in memory) made by one runtime, counted in its
    ``Stats``; more than ``limit`` alive at once stops the run with one line."""

    __slots__ = ("stats", "limit", "engine")

    def __init__(self, stats: Stats, limit: int | None, engine: str) -> None:
        self.stats, self.limit, self.engine = stats, limit, engine

    def made(self, n: int = 1) -> None:
        stats = self.stats
        stats.created(n)
        if self.limit is not None and stats.peak_instances > self.limit:
            raise LimitError(too_many_instances(self.engine, self.limit))
