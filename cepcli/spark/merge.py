"""The statistics of ``--spark``: the shards' merged into the run's (``merge``), and the
seconds of each step (``Laps``).

Rows and bad rows come from the splits (``cepcli.spark.scan.counted``); the engines'
counters are summed over the shards (events in the overlaps are counted in each), peaks
are the largest of any shard, the adaptive engine's choices are summed, and each shard's
time span is kept (``spark_shards``), with how many ran at once (``overlap``). A shard past
``--max-instances`` fails the run with the local message.
"""

from __future__ import annotations

import time
from typing import Any

from cepcli.errors import LimitError
from cepcli.notes import Notes
from cepcli.runtime.stats import Stats, add_part


class Laps:
    """Seconds of each step, in the stats (``spark_steps``)."""

    def __init__(self, stats: Stats) -> None:
        self.steps: dict[str, float] = {}
        stats.extra["spark_steps"] = self.steps
        self.last = time.perf_counter()

    def __call__(self, step: str) -> float:
        now = time.perf_counter()
        self.steps[step] = round(now - self.last, 3)
        self.last = now
        return self.steps[step]


def merge(stats: Stats, parts: list[dict[str, Any]], notes: Notes) -> None:
    limits = [p["limit"] for p in parts if p.get("limit")]
    if limits:
        raise LimitError(limits[0])
    for part in parts:
        add_part(stats, part)
        for message in part.get("warnings", ()):
            notes.warn(message)
        for key, (size, message) in part.get("largest", {}).items():  # a Kleene set too large
            notes.largest(key, size, message)
    notes.flush()
    _merge_adaptive(stats, parts)
    stats.extra["spark_shards"] = [
        {
            "shard": p["shard"],
            "began": p["began"],
            "ended": p["ended"],
            "rows": p["rows_in_shard"],
            "matches": p["matches"],
            "relevant_events": p["relevant_events"],
        }
        for p in sorted(parts, key=lambda p: int(p["shard"]))
    ]
    stats.extra["partitions"] = len(parts)
    stats.extra["spark_shard_overlap"] = overlap([(float(p["began"]), float(p["ended"])) for p in parts])


def overlap(spans: list[tuple[float, float]]) -> float:
    """How many shards ran at once, on average over the time any ran: their seconds of work
    over the seconds of the union of their spans (1.0: one after another; up to the cores)."""
    busy = sum(end - start for start, end in spans)
    union, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            union += end - max(start, reach)
            reach = end
    return round(busy / union, 2) if union > 0 else 1.0


def _merge_adaptive(stats: Stats, parts: list[dict[str, Any]]) -> None:
    """The adaptive engine's choices over every shard: segments by engine and the runtimes
    started, summed (each shard chooses on its own events); the changes, with their shard."""
    columnar = [p for p in parts if "adaptive_ran" in p]
    if columnar:  # the columnar engine ran the shards' bounded inputs whole
        stats.extra["adaptive_ran"] = columnar[0]["adaptive_ran"]
        # (a shard that an input error stopped before its joins has none)
        stats.extra["columnar_joins"] = _sum_joins(
            [p["columnar_joins"] for p in columnar if "columnar_joins" in p]
        )
    shards = [p for p in parts if isinstance(p.get("adaptive_segments"), dict)]
    if not shards:
        return
    engines = dict.fromkeys(shards[0]["adaptive_segments"], 0)
    for p in shards:
        for name, n in p["adaptive_segments"].items():
            engines[name] = engines.get(name, 0) + int(n)
    stats.extra["adaptive_segments"] = engines
    stats.extra["adaptive_segment_seconds"] = shards[0].get("adaptive_segment_seconds")
    for key in ("adaptive_runtimes", "adaptive_switches"):
        stats.extra[key] = sum(int(p.get(key, 0)) for p in shards)
    stats.extra["adaptive_changes"] = [
        {"shard": p["shard"], **change}
        for p in sorted(shards, key=lambda p: int(p["shard"]))
        for change in p.get("adaptive_changes", [])
    ]


def _sum_joins(shards: list[list[list[dict[str, Any]]]]) -> list[list[dict[str, Any]]]:
    """The columnar engine's partial matches after each join, per branch, summed over the
    shards (each shard joins in the order of its own counts: by variable, in the first's)."""
    sums: list[dict[str, int]] = []
    for joins in shards:
        for b, branch in enumerate(joins):
            if b == len(sums):
                sums.append({})
            for j in branch:
                sums[b][j["variable"]] = sums[b].get(j["variable"], 0) + int(j["partial_matches"])
    return [[{"variable": v, "partial_matches": n} for v, n in branch.items()] for branch in sums]
