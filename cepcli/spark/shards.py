"""Time shards: where the relevant rows go, and how one shard is evaluated (no pyspark
here: this runs inside Spark's Python workers, and in the tests).

The shards cut time at the quantiles of the relevant rows' times (so a busy hour makes no
giant shard): shard ``k`` owns ``[b_k, b_(k+1))`` (the first from the start of time, the
last to its end) and receives every relevant row within a window of it
(``cepcli.spark.evaluate._shards``), ``[b_k - W, b_(k+1) + W]``, so that the window, and
leading, trailing or enclosed negations, are judged on every event they depend on. It
reports only the matches whose earliest event it owns: each match exactly once. A query
with an ``[attr]`` equivalence is also grouped by that attribute (every event of a match
shares it, and so does every row a negation forbids), but not under ``strict_contiguity``,
where any row between breaks a match, whatever its key (``cepcli.spark.evaluate.keyed``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cepcli.arrays import arrow, whole
from cepcli.clock import Slice
from cepcli.engines import engine, run_pattern
from cepcli.errors import LimitError
from cepcli.events import Event, Schema
from cepcli.lines import found_lines
from cepcli.notes import Notes
from cepcli.output import MatchCodec, flat_row, match_line, variables
from cepcli.prepare import compile_text
from cepcli.runtime.columnar import Columns, Found, evaluate_found
from cepcli.runtime.matches import Match
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats, part_work
from cepcli.sources.rows import make_events
from cepcli.spark.reading import MASK, ROW, TS, Fetch, Reading

SHARD = "__cepcli_shard"
FAR = 1 << 64
LINES = 1 << 14  # matches whose jsonl lines a shard makes at once (from columns)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What every shard needs, as plain data."""

    reading: Reading
    engine: str
    order: tuple[str, ...]
    bounds: tuple[int, ...]  # b_1 .. b_(n-1): shard k owns [b_k, b_(k+1)), b_0 and b_n unbounded
    window: int
    cut: int | None  # a bad row stops the input there (--on-bad-row fail)
    max_instances: int | None  # a shard stops past this many live instances (the driver says why)
    max_subsets: int  # a shard warns past this many subsets of one Kleene candidate set
    flat: bool  # the matches' flat columns too (csv output to a directory)
    lines: bool  # a match's text is its jsonl line (else ``MatchCodec``'s, for the driver's writers)
    typed: bool = False  # the ``Match`` itself, for the result schema (Parquet output to a directory)
    keep: tuple[int, ...] | None = None  # the positions of the columns each event keeps (--show)
    reached: int | None = None  # with ``cut``: the latest time of the rows before the bad row


def evaluate(
    job: Evaluation, shard: int, table: pa.Table, began: float | None = None
) -> Iterator[dict[str, Any]]:
    """The matches one shard owns (``kind`` ``match``: its text, the jsonl line ``match_line``
    or with ``lines`` off the ``MatchCodec`` line the driver's writers decode; with ``flat``
    the flat columns instead, with ``typed`` the match), then its statistics (``kind`` ``stats``).
    Where the local run would evaluate the pattern with the columnar engine, so does the
    shard, on the shipped columns themselves (``shard_columns``: no event made but for the
    matches, and the jsonl lines made from columns, ``cepcli.lines``). ``began``: when the
    shard's work began, if before this call (it read its own rows)."""
    began = time.time() if began is None else began
    reading = job.reading
    compiled = compile_text(reading.query, "<query>", reading.inputs.unit)
    schema, pattern = reading.schema, compiled.pattern
    part = Slice(
        job.bounds[shard - 1] if shard > 0 else -FAR, job.bounds[shard] if shard < len(job.bounds) else FAR
    )
    table = table.sort_by([(TS, "ascending"), (ROW, "ascending")])
    stats = Stats(engine=job.engine)
    notes = Notes(stats.warnings)
    limits = EvalOptions(max_subsets=job.max_subsets, max_instances=job.max_instances, notes=notes)
    owned = 0
    limit = None
    names = variables(pattern)
    codec = MatchCodec()
    fetch: Fetch | None = None

    def row(match: Match) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "match"}
        if job.typed:
            out["match"] = match
        elif job.flat:
            out["flat"] = flat_row(match, schema, pattern, job.keep)
        else:
            out["text"] = match_line(match, schema, names, job.keep) if job.lines else codec.encode(match)
        return out

    try:
        if engine(job.engine).columnar(pattern):
            if job.engine != "columnar":
                stats.extra["adaptive_ran"] = "columnar"
            fetch = Fetch(reading) if reading.away else None
            data = shard_columns(table, reading, job.reached, fetch)
            order = tuple(v.name for v in pattern.variables)
            for found in evaluate_found(pattern, order, data, schema, stats, limits):
                found = _owned(found, part)
                owned += len(found)
                if job.lines and not (job.typed or job.flat):
                    for text in _lines(found, schema, names, job.keep):
                        yield {"kind": "match", "text": text}
                else:
                    yield from map(row, found.matches())
        else:
            events = _events(table, reading, job.cut)
            for match in run_pattern(pattern, job.engine, events, schema, stats, job.order, limits):
                if part.owns(match.first_ts):  # else another shard owns it
                    owned += 1
                    yield row(match)
    except _Cut:
        pass  # a bad row stopped the input: what waited for later rows stays undecided
    except LimitError as err:
        limit = str(err)
    finally:
        if fetch is not None:
            fetch.close()
    summary = stats.as_dict()
    summary.update(part_work(stats))
    summary.update(
        {
            "shard": shard,
            "began": began,
            "ended": time.time(),
            "rows_in_shard": table.num_rows,
            "matches": owned,
            "limit": limit,
            "largest": notes.held,  # the driver says the largest of all shards' once
        }
    )
    yield {"kind": "stats", "text": json.dumps(summary, default=str)}


def shard_columns(
    table: pa.Table, reading: Reading, reached: int | None = None, fetch: Fetch | None = None
) -> Columns:
    """A shard's rows (sorted by time, then row) as the columnar engine's input: the
    shipped columns as they are, which hold what the local run's columns hold for its
    conditions (times and durations as int64 nanoseconds, exact decimals as their text, in
    ``decimal_text``); the events of the matches made from them by the local row factory,
    with the columns the splits left unread fetched (``fetch``). ``reached``: a bad row cut
    the input (``fail``) after a row at this time."""
    columns = [whole(table.column(name)) for name, _ in reading.ship]
    types = whole(table.column(reading.schema.type_col))
    rows = table.column(ROW).to_numpy()
    ts = table.column(TS).to_numpy()
    masks = table.column(MASK).to_numpy()

    def values(positions: np.ndarray) -> list[pa.Array]:
        at = arrow(positions.astype(np.int64, copy=False))
        taken = [c.take(at) for c in columns]
        if fetch is not None and len(positions):
            for i, fetched in fetch(rows[positions]).items():
                taken[i] = fetched
        return taken

    def events(positions: np.ndarray) -> list[Event]:
        at = arrow(positions.astype(np.int64, copy=False))
        return make_events(
            rows[positions],
            ts[positions],
            types.take(at),
            values(positions),
            reading.decimals,
            masks[positions],
        )

    return Columns(rows, ts, masks, columns, events, reached, values=values, decimal_text=reading.decimals)


def _owned(found: Found, part: Slice) -> Found:
    """The matches of ``found`` whose earliest event lies in ``part`` (this shard's)."""
    ts = found.data.ts
    first = np.minimum.reduce([ts[p] for p in found.positions])
    keep = np.ones(len(first), dtype=np.bool_)
    if part.low > -FAR:
        keep &= first >= part.low
    if part.high < FAR:
        keep &= first < part.high
    if keep.all():
        return found
    return found.take(keep)


def _lines(found: Found, schema: Schema, names: Sequence[str], keep: Sequence[int] | None) -> Iterator[str]:
    """``found``'s jsonl lines (``match_line``'s text), without their newlines."""
    for piece in found.pieces(LINES):
        body, ends = found_lines(piece, schema, names, keep)
        offsets = np.concatenate([[0], ends]).astype(np.int64)
        texts = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets.tobytes()), body)
        yield from (text[:-1] for text in texts.to_pylist())


class _Cut(Exception):
    """The input ends at a bad row (``fail``): as locally, the engine stops without the
    end of the stream (matches waiting on a trailing negation are not released)."""


def _events(table: pa.Table, reading: Reading, cut: int | None) -> Iterator[Event]:
    """The shard's events, made by the local row factory from the shipped columns."""
    yield from make_events(
        table.column(ROW),
        table.column(TS),
        table.column(reading.schema.type_col),
        [table.column(name) for name, _ in reading.ship],
        reading.decimals,
        table.column(MASK),
    )
    if cut is not None:
        raise _Cut
