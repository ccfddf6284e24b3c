"""Time shards: where the relevant rows go, and how one shard is evaluated (no pyspark
here: this runs inside Spark's Python workers, and in the tests).

The shards cut time at the quantiles of the relevant rows' times (so a busy hour makes no
giant shard): shard ``k`` owns ``[b_k, b_(k+1))`` (the first from the start of time, the
last to its end) and receives every relevant row within a window of it (``cepcli.spark._shards``),
``[b_k - W, b_(k+1) + W]``, so that the window, and leading, trailing or enclosed
negations, are judged on every event they depend on. It reports only the matches whose
earliest event it owns: each match exactly once. A query with an ``[attr]`` equivalence is
also grouped by that attribute (every event of a match shares it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cepcli.clock import Slice
from cepcli.engines import run_pattern
from cepcli.errors import LimitError
from cepcli.events import Event
from cepcli.job import compile_text
from cepcli.notes import Notes
from cepcli.output import MatchCodec, flat_row, match_line, variables
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats, part_work
from cepcli.sources.rows import make_events
from cepcli.spark.reading import MASK, ROW, TS, Reading

SHARD = "__cepcli_shard"
FAR = 1 << 64


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


def evaluate(job: Evaluation, shard: int, table: pa.Table) -> Iterator[dict[str, Any]]:
    """The matches one shard owns (``kind`` ``match``: its text, the jsonl line ``match_line``
    or with ``lines`` off the ``MatchCodec`` line the driver's writers decode; with ``flat``
    the flat columns instead, with ``typed`` the match), then its statistics (``kind`` ``stats``)."""
    began = time.time()
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
    events = _events(table, reading, job.cut)
    try:
        for match in run_pattern(pattern, job.engine, events, schema, stats, job.order, limits):
            if not part.owns(match.first_ts):
                continue  # another shard owns it
            owned += 1
            row: dict[str, Any] = {"kind": "match"}
            if job.typed:
                row["match"] = match
            elif job.flat:
                row["flat"] = flat_row(match, schema, pattern, job.keep)
            else:
                row["text"] = match_line(match, schema, names, job.keep) if job.lines else codec.encode(match)
            yield row
    except _Cut:
        pass  # a bad row stopped the input: what waited for later rows stays undecided
    except LimitError as err:
        limit = str(err)
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
