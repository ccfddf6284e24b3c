"""Work counters, incremented where the work happens (paper section 8 definitions), and the
report of one evaluation. Counters only: how a run goes (its input is a pipe, its limits,
where its warnings go) is ``runtime.options``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cepcli.errors import flag


@dataclass(slots=True)
class Stats:
    """Counters of one evaluation. ``memory_operations`` = instance creations and
    deletions plus buffer insertions and removals."""

    engine: str = ""
    order: tuple[str, ...] = ()
    events: int = 0  # rows read, relevant or not (bad rows skipped are not events)
    relevant_events: int = 0  # events that reached the automaton
    matches: int = 0
    seconds: float = 0.0
    input_seconds: float = 0.0  # of ``seconds``: reading, typing, prefiltering the input
    instances_created: int = 0
    instances_deleted: int = 0
    alive_instances: int = 0
    peak_instances: int = 0
    buffered_events: int = 0
    peak_buffered_events: int = 0
    buffer_insertions: int = 0
    buffer_removals: int = 0
    predicate_evaluations: int = 0
    prefilter_evaluations: int = 0
    bad_rows: int = 0  # rows skipped with --on-bad-row skip
    first_bad_row: tuple[int, str] | None = None  # (row, why) of the first of them
    peak_rss_mb: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what the run said (``notes.Notes``)
    series: list[dict[str, int]] | None = None  # the counters over time (--stats-every), if asked

    def snapshot(self) -> None:
        """Record the cumulative counters now (for work over time, e.g. per segment)."""
        if self.series is None:
            self.series = []
        self.series.append(
            {
                "relevant_events": self.relevant_events,
                "matches": self.matches,
                "instances": self.alive_instances,
                "buffered_events": self.buffered_events,
                "predicate_evaluations": self.predicate_evaluations,
                "memory_operations": self.memory_operations,
            }
        )

    def created(self, n: int = 1) -> None:
        self.instances_created += n
        self.alive_instances += n
        if self.alive_instances > self.peak_instances:
            self.peak_instances = self.alive_instances

    def deleted(self, n: int = 1) -> None:
        self.instances_deleted += n
        self.alive_instances -= n

    def buffered(self, n: int = 1) -> None:
        self.buffer_insertions += n
        self.buffered_events += n
        if self.buffered_events > self.peak_buffered_events:
            self.peak_buffered_events = self.buffered_events

    def unbuffered(self, n: int = 1) -> None:
        self.buffer_removals += n
        self.buffered_events -= n

    @property
    def memory_operations(self) -> int:
        return self.instances_created + self.instances_deleted + self.buffer_insertions + self.buffer_removals

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, object]:
        """The ``--stats-json`` object (docs/running.md, "Progress and statistics")."""
        return {
            "engine": self.engine,
            "order": list(self.order),
            "events": self.events,
            "relevant_events": self.relevant_events,
            "matches": self.matches,
            "seconds": round(self.seconds, 6),
            "events_per_second": round(self.events_per_second, 1),
            "input_seconds": round(self.input_seconds, 6),
            "peak_instances": self.peak_instances,
            "peak_buffered_events": self.peak_buffered_events,
            "predicate_evaluations": self.predicate_evaluations,
            "prefilter_evaluations": self.prefilter_evaluations,
            "memory_operations": self.memory_operations,
            "instances_created": self.instances_created,
            "buffer_insertions": self.buffer_insertions,
            "bad_rows": self.bad_rows,
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            **self.extra,
            **({"series": self.series} if self.series is not None else {}),
            **({"warnings": self.warnings} if self.warnings else {}),
        }


# The work counters of a part of one evaluation (a Spark shard, a segment of the adaptive
# engine), which the whole sums; and the peaks, of which the whole keeps the largest part's.
PART_SUMS = (
    "predicate_evaluations",
    "instances_created",
    "instances_deleted",
    "buffer_insertions",
    "buffer_removals",
)
PART_PEAKS = ("peak_instances", "peak_buffered_events")


def part_work(stats: Stats) -> dict[str, int]:
    """A part's work counters and peaks, as plain data (a Spark shard sends them)."""
    return {key: int(getattr(stats, key)) for key in PART_SUMS + PART_PEAKS}


def add_part(stats: Stats, part: Mapping[str, object]) -> None:
    """Add a part's work (``part_work``) to the whole's counters."""
    for key in PART_SUMS:
        setattr(stats, key, getattr(stats, key) + int(part.get(key, 0)))  # type: ignore[call-overload]
    for key in PART_PEAKS:
        setattr(stats, key, max(getattr(stats, key), int(part.get(key, 0))))  # type: ignore[call-overload]


def too_many_instances(engine: str, limit: int) -> str:
    """Why a run stopped at ``--max-instances``, and what to do."""
    why = (
        "the eager NFA keeps one instance per partial match, which under skip-till-any-match"
        " grows with every subset of a Kleene or AND candidate set in the window; a lazy engine"
        f" ({flag('engine', 'tree')}, or {flag('engine', 'chain')}) stores each event once"
        if engine == "eager"
        else "partial matches pile up in the window"
    )
    return (
        f"more than {limit:,} live instances ({flag('max-instances')}): {why}."
        f" Narrow the window or the conditions, or raise {flag('max-instances')}"
    )
