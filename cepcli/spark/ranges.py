"""Time-sorted Parquet read by time range: each shard reads its own rows, no shuffle (no
pyspark here: this runs inside Spark's Python workers, and in the tests).

A Parquet file says, for each row group, the least and greatest value of each column. When
those of the time column follow each other (each group's greatest at most the next one's
least) the input is sorted by time as far as the metadata tells, and the time shards can
be cut at row-group edges: shard ``k`` owns a run of whole row groups and the time from its
first group's least time to the next shard's, ``[b_k, b_(k+1))``. It reads its own groups
and, for the window around its slice (``Window.around``, as ``cepcli.spark.shards`` says),
the neighbouring groups whose times reach into it, and keeps of those only the rows in
reach. Spark then carries no event at all: only the matches.

The metadata is a claim, and the shards check it on the rows themselves (``read_range``):
each group's times lie within its least and greatest (so the groups, and the shards, follow
each other in time), and no row is bad (a row earlier than the one before it is a bad row,
``cepcli.sources.source``). When a shard finds otherwise the driver discards the run's
results and reads the input the general way (``cepcli.spark``: splits, the time-order check
chained across them, a shuffle into shards), which says what the local run says.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cepcli.clock import Slice, Window
from cepcli.spark.reading import ROW, TS, Reading, arrow_schema, read_split
from cepcli.spark.splits import Split

FAR = 1 << 64  # (as ``cepcli.spark.shards``: the first and last shard reach the ends of time)
# the rows neighbours add to the input (each shard's extra reads), at most this share of it:
# past it, a shuffle sends each row only where its window reaches, at lower cost
EXTRA_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Group:
    """A row group: rows ``start:stop`` of its file, the first with row id ``first_row``, its
    times within ``low..high`` (nanoseconds, from the file's metadata)."""

    path: str
    start: int
    stop: int
    first_row: int
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Part:
    """Rows a shard reads: its own groups (``owned``: counted), or a neighbour's (kept only
    within the shard's reach); every group's first row id and times (``groups``), against
    which the rows are checked."""

    split: Split
    groups: tuple[tuple[int, int, int], ...]  # (first row id, low, high) of each group
    owned: bool

    @property
    def low(self) -> int:
        return self.groups[0][1]

    @property
    def high(self) -> int:
        return self.groups[-1][2]


@dataclass(frozen=True, slots=True)
class Ranges:
    """The shards of a time-sorted Parquet input: ``bounds`` b_1 .. b_(n-1) (as the shuffle's,
    ``cepcli.spark.shards.Evaluation.bounds``), and what each shard reads."""

    bounds: tuple[int, ...]
    parts: tuple[tuple[Part, ...], ...]
    window: int
    rows: int  # in the input
    extra: int  # read twice or more: the neighbours' rows, summed over the shards

    def reach(self, shard: int) -> tuple[int, int]:
        """The times shard ``shard`` needs (``Window.around`` its slice)."""
        low = self.bounds[shard - 1] if shard > 0 else -FAR
        high = self.bounds[shard] if shard < len(self.bounds) else FAR
        return Window(self.window).around(Slice(low, high))


def time_groups(files: Sequence[str], time_col: str) -> list[Group] | None:
    """The row groups of ``files`` (in order, row ids going on from file to file) with the
    times their metadata gives, in nanoseconds as the local reader reads them; None when a
    group says nothing of its times, has a missing time, or the time column is no timestamp
    or date (a number or a text is typed by its values, not by the metadata's)."""
    import pyarrow.parquet as pq

    from cepcli.sources.times import native_nanoseconds

    groups: list[Group] = []
    first = 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        arrow = meta.schema.to_arrow_schema()
        if time_col not in arrow.names:
            return None
        type_ = arrow.field(time_col).type
        if not (pa.types.is_timestamp(type_) or pa.types.is_date32(type_)):
            return None
        leaves = [meta.schema.column(i).path for i in range(meta.num_columns)]
        if leaves.count(time_col) != 1:
            return None
        at = leaves.index(time_col)  # (a nested column before it has several leaves)
        start = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            rows = group.num_rows
            if rows:
                stats = group.column(at).statistics
                if stats is None or not stats.has_min_max or stats.null_count != 0:
                    return None
                if group.column(at).physical_type not in ("INT64", "INT32"):
                    return None  # (INT96 times: no trusted order in their statistics)
                low, high = native_nanoseconds(pa.array([stats.min_raw, stats.max_raw], type_)).to_pylist()
                groups.append(Group(path, start, start + rows, first + start, int(low), int(high)))
            start += rows
        first += start
    return groups


def plan(
    groups: Sequence[Group], shards: int, window: int, extra_share: float = EXTRA_SHARE
) -> Ranges | None:
    """``shards`` runs of whole groups, of about equal rows, and what each reads; None when
    the groups do not follow each other in time, are fewer than the shards, or the
    neighbours would add more than ``extra_share`` of the input (a window long against the
    groups' spans)."""
    if len(groups) < max(shards, 2):
        return None
    if any(g.low > g.high for g in groups) or any(a.high > b.low for a, b in itertools.pairwise(groups)):
        return None
    sizes = np.array([g.stop - g.start for g in groups], dtype=np.int64)
    total = int(sizes.sum())
    before = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    owner = np.minimum((before * shards) // max(total, 1), shards - 1)  # contiguous, balanced
    runs: list[list[Group]] = []
    previous = -1
    for g, k in zip(groups, owner.tolist(), strict=True):
        if not runs or k != previous and g.low > runs[-1][0].low:  # (equal bounds: one shard)
            runs.append([])
        runs[-1].append(g)
        previous = k
    if len(runs) < 2:
        return None
    bounds = tuple(run[0].low for run in runs[1:])
    ranges = Ranges(bounds, (), window, total, 0)
    parts: list[tuple[Part, ...]] = []
    extra = 0
    for k, run in enumerate(runs):
        low, high = ranges.reach(k)
        mine = {id(g) for g in run}
        reads = [(g, id(g) in mine) for g in groups if id(g) in mine or (g.high >= low and g.low <= high)]
        extra += sum(g.stop - g.start for g, owned in reads if not owned)
        parts.append(tuple(_joined(reads)))
    if extra > extra_share * total:
        return None
    return Ranges(bounds, tuple(parts), window, total, extra)


def _joined(reads: list[tuple[Group, bool]]) -> list[Part]:
    """Consecutive groups of one file, all owned or all not, read as one split."""
    parts: list[Part] = []
    for g, owned in reads:
        last = parts[-1] if parts else None
        times = ((g.first_row, g.low, g.high),)
        if last and last.owned == owned and last.split.path == g.path and last.split.stop == g.start:
            split = Split(g.path, last.split.start, g.stop, last.split.first_row, g.stop - last.split.start)
            parts[-1] = Part(split, last.groups + times, owned)
        else:
            parts.append(Part(Split(g.path, g.start, g.stop, g.first_row, g.stop - g.start), times, owned))
    return parts


def read_range(
    reading: Reading, ranges: Ranges, shard: int
) -> tuple[pa.Table, list[dict[str, Any]], str | None]:
    """The relevant rows shard ``shard`` needs (its own groups' and, within its reach, its
    neighbours'), the reports of its own splits (``read_split``'s), and why the shard cannot
    stand for the local run (None: it can): a bad row (the general way says which, and
    where), or times outside what the metadata claimed."""
    low, high = ranges.reach(shard)
    tables: list[pa.Table] = []
    reports: list[dict[str, Any]] = []
    for part in ranges.parts[shard]:
        table, report = read_split(reading, part.split)
        if report["error"] or report["bad_rows"] or report["bad"]:
            return arrow_schema(reading).empty_table(), [], f"a bad row in rows {part.split.first_row:,}.."
        early = report["least"] is not None and report["least"] < part.low
        late = report["last"] is not None and int(report["last"][0]) > part.high
        if early or late or not _claimed(table, part):
            return arrow_schema(reading).empty_table(), [], "times outside the row groups' statistics"
        if part.owned:
            reports.append(report)
        elif table.num_rows:
            ts = table.column(TS).to_numpy()
            inside = np.flatnonzero((ts >= max(low, -(1 << 63))) & (ts <= min(high, (1 << 63) - 1)))
            table = table.take(pa.array(inside))
        tables.append(table)
    return (pa.concat_tables(tables) if tables else arrow_schema(reading).empty_table()), reports, None


def _claimed(table: pa.Table, part: Part) -> bool:
    """Does every relevant row lie within the times its own row group claims? (What a
    neighbour reads is chosen by those claims; the reader checks the order of all rows.)"""
    if not table.num_rows:
        return True
    firsts, lows, highs = (np.array(column, dtype=np.int64) for column in zip(*part.groups, strict=True))
    at = np.searchsorted(firsts, table.column(ROW).to_numpy(), "right") - 1
    ts = table.column(TS).to_numpy()
    return bool(((ts >= lows[at]) & (ts <= highs[at])).all())


def shards_wanted(parallelism: int, partitions: int | None) -> int:
    """As many shards as the shuffle would make: ``--partitions``, else twice the cores."""
    return max(1, partitions or 2 * parallelism)
