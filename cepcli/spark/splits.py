"""The parts of an input that Spark's executors read, each with the row id of its first row.

The local reader numbers rows and decides where records end (quotes may hold line breaks),
so a part of a file must start where a record starts and know how many data rows come
before it. Nothing but a scan of the bytes tells that:

1. The data bytes of each file (after its header) are cut into ranges (``plan_ranges``).
2. Each range is scanned on its own, in parallel (``scan``): the quotes that open or close
   a field, the line breaks, and, for each of the two states a range can start in (inside
   a quoted field or not), where records end in it and how many are not blank.
3. The driver chains the scans in file order (``chain``): each range's state at its start
   follows from the previous one's, and so do the splits: the records that end in a range
   (and the last, unfinished one, at the end of the file) form a split that starts where
   the previous one stopped, with the rows counted before it as its first row id.

A JSON-lines file is cut the same way (no quotes: a record is a line). A Parquet file is
split by its rows, from the row groups' counts in its metadata: runs of whole row groups,
and a large row group cut in pieces; a compressed CSV cannot be cut and is one split. A
directory holds several files, read in the order of their names, with the row ids going on
from one file to the next.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cepcli.sources.records import _COMMA, _CR, _EDGE, _LF, _QUOTE

_BLANK = np.zeros(256, dtype=bool)  # a record of only these is no row
_BLANK[[32, 9, _LF, _CR]] = True
RANGE_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class Split:
    """Part of one file: bytes (CSV, JSON lines) or rows (Parquet) ``start:stop``,
    whose first data row has the row id ``first_row``; ``rows`` data rows in it."""

    path: str
    start: int
    stop: int
    first_row: int
    rows: int


@dataclass(frozen=True, slots=True)
class Ends:
    """What a range says of its records, for one state at its start."""

    count: int  # record ends in the range
    filled: int  # of the records ending after the first one, those not blank
    first_end: int  # the offset after the first record end (-1: none)
    last_end: int  # after the last one (-1: none)
    head_filled: bool  # a byte that is not blank before the first end (the whole range when none)
    tail_filled: bool  # one after the last end


@dataclass(frozen=True, slots=True)
class Scan:
    """One range of a file: whether it holds an odd number of quotes that open or close a
    field, and its record ends if it starts outside (``ends[0]``) or inside (``ends[1]``) a
    quoted field."""

    path: str
    start: int
    stop: int
    odd: bool
    ends: tuple[Ends, Ends]


def plan_ranges(path: str, data_start: int, parts: int, least: int = 1 << 20) -> list[tuple[str, int, int]]:
    """The data bytes of a file cut into about ``parts`` ranges (of at most
    ``RANGE_BYTES``, and at least ``least`` bytes)."""
    size = os.path.getsize(path)
    length = size - data_start
    if length <= 0:
        return []
    step = min(RANGE_BYTES, max(least, -(-length // max(parts, 1))))
    return [(path, s, min(s + step, size)) for s in range(data_start, size, step)]


def scan(path: str, start: int, stop: int, quotes: bool = True) -> Scan:
    """Scans bytes ``start:stop`` of ``path`` (reading one byte on each side for the
    quotes and line breaks at its edges). ``quotes``: CSV (JSON lines has none)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(max(start - 1, 0))
        data = f.read(stop - start + (2 if start else 1))
    before = data[0] if start else _COMMA
    body = np.frombuffer(data, dtype=np.uint8)[(1 if start else 0) : (1 if start else 0) + stop - start]
    final = stop >= size
    after = _COMMA if final else data[-1]
    padded = np.concatenate(([before], body, [after])).astype(np.uint8)
    toggles = np.zeros(0, dtype=np.int64)
    if quotes:
        at = np.flatnonzero(body == _QUOTE)
        if len(at):
            toggles = at[_EDGE[padded[at]] | _EDGE[padded[at + 2]]]
    breaks = np.flatnonzero(body == _LF)
    returns = np.flatnonzero(body == _CR)
    if len(returns):
        follow = padded[returns + 2]
        lone = returns[(follow != _LF) | ((returns == len(body) - 1) & final)]
        breaks = np.union1d(breaks, lone)
    filled = ~_BLANK[body]
    before_break = np.searchsorted(toggles, breaks)
    ends = tuple(_ends(breaks[(before_break + state) % 2 == 0], filled, start) for state in (0, 1))
    return Scan(path, start, stop, bool(len(toggles) % 2), ends)  # type: ignore[arg-type]


def _ends(breaks: np.ndarray, filled: np.ndarray, start: int) -> Ends:
    if not len(breaks):
        return Ends(0, 0, -1, -1, bool(filled.any()), False)
    stops = breaks + 1
    head = bool(filled[: stops[0]].any())
    filled_records = 0
    if len(stops) > 1:  # the records between the first end and the last: any byte not blank
        filled_records = int(np.count_nonzero(np.maximum.reduceat(filled[: stops[-1]], stops[:-1])))
    tail = bool(filled[stops[-1] :].any())
    return Ends(len(stops), filled_records, start + int(stops[0]), start + int(stops[-1]), head, tail)


def chain(scans: list[Scan], data_start: int, size: int, first_row: int) -> tuple[list[Split], int]:
    """The splits of one file from the scans of its ranges (in order), its data starting at
    ``data_start`` with row ``first_row``; and the rows it holds."""
    splits: list[Split] = []
    state = 0
    start, rows = data_start, first_row
    carried = False  # a byte that is not blank in the record still open
    for s in scans:
        e = s.ends[state]
        state ^= int(s.odd)
        if not e.count:
            carried = carried or e.head_filled
            continue
        found = int(carried or e.head_filled) + e.filled
        splits.append(Split(s.path, start, e.last_end, rows, found))
        start, rows, carried = e.last_end, rows + found, e.tail_filled
    if start < size and (carried or not splits):  # the last record, without a line break
        last = int(carried)
        if splits and splits[-1].stop == start:
            previous = splits.pop()
            splits.append(
                Split(previous.path, previous.start, size, previous.first_row, previous.rows + last)
            )
        else:
            splits.append(Split(scans[0].path if scans else "", start, size, rows, last))
        rows += last
    elif splits and start < size:  # blanks after the last record: the last split reads them
        previous = splits.pop()
        splits.append(Split(previous.path, previous.start, size, previous.first_row, previous.rows))
    return splits, rows - first_row


def row_groups(path: str, first_row: int, parts: int) -> tuple[list[Split], int]:
    """A Parquet file's splits, about ``parts`` of them, as rows ``start:stop`` of the file:
    runs of whole row groups, and a row group larger than a split's share cut into equal
    pieces (each of its readers decodes the group, and keeps its own rows), so that a file
    of one large row group is read by several tasks."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    share = max(1, -(-sum(counts) // max(parts, 1)))
    pieces: list[tuple[int, int]] = []  # (start, stop): whole groups, or pieces of one
    at = 0
    for n in counts:
        cuts = max(1, -(-n // share)) if n > share else 1
        edges = [at + n * k // cuts for k in range(cuts + 1)]
        pieces += [(a, b) for a, b in zip(edges, edges[1:], strict=False) if b > a]
        at += n
    splits: list[Split] = []
    start = stop = 0
    for a, b in pieces:  # whole groups joined while they fit a share
        if stop > start and b - start > share:
            splits.append(Split(path, start, stop, first_row + start, stop - start))
            start = a
        stop = b
    if stop > start:
        splits.append(Split(path, start, stop, first_row + start, stop - start))
    return splits, at
