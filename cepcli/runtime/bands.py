"""Range joins by sorted blocks: for each partial match, the candidates in its range of
positions whose value lies on one side of the match's own value (``a.delay < b.delay``),
found by search instead of by expanding every pair in the window.

The candidates (in the join's order: by position, or by key and position) are cut into
blocks of ``BLOCK``; each block is sorted by value. A partial match's range covers some
whole blocks and at most two partial ones at its ends: in a whole block the candidates on
the right side of its value are a prefix or a suffix of the block's sorted values, found
by one binary search (all the searches of a join are one ``searchsorted`` over the blocks'
values as ``block * n + rank``); the ends are expanded and compared, at most
``2 * BLOCK`` pairs. So a join costs its kept pairs, a search per whole block, and the
ends, not the window's pairs (the piecewise merge join of polars and DuckDB, in blocks
because a window is a range of positions as well as a range of values).

The comparison here is numpy's on the values with a missing one filled in: a superset of
the pairs where the condition holds, which the engine then checks exactly
(``plan.arrow``), so missing values and exact numbers keep their one home there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

BLOCK = 64  # candidates per sorted block
MIN_PAIRS = 1 << 16  # a join of fewer pairs in its windows expands them all
MIN_WINDOW = 2 * BLOCK  # ... and so does one whose windows hold fewer candidates on average (measured:
# even at 132, 1.4x at 200, 4x at 467; expanding 1.4-1.7x faster at 42-77: benchmarks/range_choice.py)
_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


@dataclass(frozen=True, slots=True)
class Pairs:
    """Per partial match (``parent``), the candidates kept (``index``, into the join's
    candidate order), sorted by (parent, index); ``compared``: the pairs whose values
    were compared one by one (the ends of the ranges), ``searched``: the whole blocks
    searched."""

    parent: np.ndarray
    index: np.ndarray
    compared: int
    searched: int


@dataclass(frozen=True, slots=True)
class Blocks:
    """Candidates' values in blocks sorted by value: ``order`` the candidate indices by
    (block, value), ``keys`` their ``block * n + rank`` (ascending), ``ranked`` every value
    sorted (a value's rank: how many are less)."""

    values: np.ndarray
    order: np.ndarray
    keys: np.ndarray
    ranked: np.ndarray
    block: int

    @classmethod
    def of(cls, values: np.ndarray, block: int | None = None) -> Blocks:
        n, block = len(values), block or BLOCK
        of_block = np.arange(n, dtype=np.int64) // block
        order = np.lexsort((values, of_block))
        ranked = np.sort(values)
        rank = np.searchsorted(ranked, values[order], "left").astype(np.int64)
        return cls(values, order, of_block[order] * max(n, 1) + rank, ranked, block)

    def pairs(
        self, first: np.ndarray, last: np.ndarray, threshold: np.ndarray, op: str, dense: float = 0.5
    ) -> Pairs | None:
        """For each row ``i``, the candidate indices ``j`` in ``[first[i], last[i])`` with
        ``values[j] op threshold[i]``. None when the whole blocks keep more than ``dense``
        of their candidates (then expanding every pair costs less than sorting them)."""
        n, size = len(self.values), self.block
        rows = np.arange(len(first), dtype=np.int64)
        first_block = -(-first // size)
        last_block = last // size
        head_end = np.minimum(first_block * size, last)
        tail_start = np.maximum(last_block * size, head_end)
        whole = np.maximum(last_block - first_block, 0)
        whole[last <= first] = 0
        # the whole blocks: one search each, by rank
        below = op in ("<", "<=")
        side: Literal["left", "right"] = "left" if op in ("<", ">=") else "right"
        bound = np.asarray(np.searchsorted(self.ranked, threshold, side), dtype=np.int64)
        parent = np.repeat(rows, whole)
        at = np.repeat(first_block, whole) + within(whole)
        cut = np.searchsorted(self.keys, at * max(n, 1) + bound[parent], "left")
        start, stop = at * size, np.minimum(at * size + size, n)
        low, high = (start, cut) if below else (cut, stop)
        kept = int(np.sum(high - low))
        if kept > dense * int(np.sum(stop - start)):
            return None
        # the ends, expanded and compared
        ends_parent, ends_index = _expand(
            np.concatenate((rows, rows)),
            np.concatenate((first, tail_start)),
            np.concatenate((head_end, last)),
        )
        hold = _COMPARE[op](self.values[ends_index], threshold[ends_parent])
        ends_parent, ends_index = ends_parent[hold], ends_index[hold]
        block_parent, at_sorted = _expand(parent, low, high)
        block_index = self.order[at_sorted]
        parent = np.concatenate((ends_parent, block_parent))
        index = np.concatenate((ends_index, block_index))
        order = np.lexsort((index, parent))
        return Pairs(parent[order], index[order], len(hold), len(at))


def within(counts: np.ndarray) -> np.ndarray:
    """``0 .. counts[i] - 1`` for each ``i``, concatenated: each item's offset within its
    run when runs of ``counts`` items are laid end to end (a join's expansion; numpy only:
    ``explain`` reads this module's thresholds without importing pyarrow)."""
    starts = np.cumsum(counts) - counts
    out: np.ndarray = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
    return out


def _expand(rows: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``[low, high)``, expanded: (row, index) pairs."""
    counts = np.maximum(high - low, 0)
    return np.repeat(rows, counts), np.repeat(low, counts) + within(counts)
