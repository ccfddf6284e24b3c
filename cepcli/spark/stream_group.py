"""One group of a streaming query (``cepcli.spark.streams``): its rows as they arrive, the
window's tail carried in its state, each match out once it is decided (no pyspark here:
this runs inside Spark's Python workers, and in the tests).

A group is a key's rows (an ``[attr]`` pattern grouped by it) or the whole stream. It is
the incremental columnar evaluation of a pipe (``cepcli.sources.source.Source.steps``,
``cepcli.runtime.columnar.Increment``), with the stream's clock in place of a pipe's end:

* **Arrival.** A micro-batch brings some of the group's rows (read and typed by the local
  reader, ``cepcli.spark.reading.read_table``, in the partitions and order Spark read
  them). Each is numbered in arrival order from the group's count (its ``_row``).
* **Late rows.** A row is late when its time is before the watermark, the later of
  Spark's (the latest event time of the micro-batches before, less the delay) and the time
  up to which this group has evaluated: a row to come may not precede a decision taken.
  ``on_bad_row="fail"`` stops the query with the local message; ``skip`` leaves it out,
  counts it and hands it on (``Step.late``).
* **Order.** A row waits (``pending``) until no row to come can precede it: until the
  group's latest time less the delay, or Spark's watermark, has passed it. With no delay
  (the default) every row is evaluated in the micro-batch it came in.
* **Decision.** The rows released are one step of the incremental evaluation: the tail
  carried, then the new rows in time order (equal times in arrival order); a match is
  reported when its last event is new, or, where a negation trails, once the time up to
  which every row is in (``now``) has passed its window.
* **State.** The tail: the rows within the window (two, with a trailing negation) of
  ``now``; when no row is left, the state is dropped. A timer (milliseconds of event time,
  fired when Spark's watermark reaches it) brings a quiet group back to release its
  waiting rows, to decide its trailing negations and to drop its state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.clock import iso_text
from cepcli.errors import InputError
from cepcli.plan.pattern import Pattern
from cepcli.prepare import Compiled, compile_text
from cepcli.runtime.columnar import Increment, evaluate_found
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats
from cepcli.spark.deliver import typed_shard
from cepcli.spark.reading import ROW, TS, Reading, arrow_schema
from cepcli.spark.shards import shard_columns

NAME = "<stream>"  # the input's name in messages
_MS = 1_000_000  # nanoseconds in a millisecond (Spark's watermark and timers are in ms)


@dataclass(frozen=True, slots=True)
class StreamJob:
    """What every group needs, as plain data (compiled where it runs)."""

    reading: Reading
    delay: int  # ns: how far a row may come behind the latest (``max_delay``)
    fail: bool  # on_bad_row="fail": a late row stops the query
    show: tuple[str, ...] | None
    typed: pa.Schema  # the result schema as shipped (``cepcli.results.shipped_schema``)
    scales: dict[str, int]  # each decimal's scale in the result, by ``variable.column``
    max_instances: int | None = None

    @property
    def pattern(self) -> Pattern:
        return _compiled(self.reading.query, self.reading.inputs.unit).pattern

    @property
    def reach(self) -> int:
        """How far back from ``now`` a row may still be used: the window, two with a
        trailing negation (which may precede a match's earliest event)."""
        return self.pattern.window * (2 if self.waits else 1)

    @property
    def waits(self) -> bool:
        return any(b.trailing for b in self.pattern.branches)


@dataclass(frozen=True, slots=True)
class GroupState:
    """What a group carries from one micro-batch to the next: the tail (rows evaluated
    that a match not yet decided may use), the rows waiting for the watermark, the next
    row number, and the time up to which the group has evaluated (``now`` of its last step)."""

    tail: pa.Table
    pending: pa.Table
    next_row: int = 0
    now: int | None = None

    @property
    def empty(self) -> bool:
        return not self.tail.num_rows and not self.pending.num_rows

    @property
    def earliest(self) -> int | None:
        """The earliest time of a row held (the tail's, else a waiting row's)."""
        held = [t for t in (self.tail, self.pending) if t.num_rows]
        return min(int(pc.min(t.column(TS)).as_py()) for t in held) if held else None

    def encode(self) -> tuple[bytes, bytes, int, int | None, int | None]:
        """As the processor's state holds it (``STATE_SCHEMA``)."""
        return (ipc(self.tail), ipc(self.pending), self.next_row, self.now, self.earliest)

    @staticmethod
    def decode(value: tuple[Any, ...] | None, job: StreamJob) -> GroupState:
        if value is None:
            empty = arrow_schema(job.reading).empty_table()
            return GroupState(empty, empty)
        tail, pending, next_row, now = value[0], value[1], value[2], value[3]
        return GroupState(from_ipc(tail), from_ipc(pending), int(next_row), None if now is None else int(now))


@lru_cache(maxsize=16)
def _compiled(query: str, unit: int) -> Compiled:
    """A query compiled once in a worker (each group and micro-batch asks for it)."""
    return compile_text(query, "<query>", unit)


STATE_SCHEMA = "tail binary, pending binary, next_row long, now long, earliest long"


@dataclass(slots=True)
class Step:
    """What one call on a group gives: the matches decided (the result schema, shipped),
    the late rows left out, the new state (None: nothing held, drop it), and when to be
    called again (a timer, ms of event time; None: only when rows come)."""

    matches: pa.Table | None = None
    late: pa.Table | None = None
    state: GroupState | None = None
    timer: int | None = None
    stats: Stats = field(default_factory=Stats)


def advance(job: StreamJob, state: GroupState, rows: pa.Table | None, watermark_ms: int | None) -> Step:
    """One call on a group: ``rows`` (new, shipped as ``arrow_schema``, their ``ROW`` the
    order they arrived in; None: a timer) with Spark's watermark (ms; None or not above 0:
    none yet). See the module for the rules."""
    schema = arrow_schema(job.reading)
    spark_mark = watermark_ms * _MS if watermark_ms is not None and watermark_ms > 0 else None
    marks = [m for m in (spark_mark, state.now) if m is not None]
    mark = max(marks) if marks else None  # a row before it is late
    step = Step()
    pending, next_row = state.pending, state.next_row
    if rows is not None and rows.num_rows:
        rows = rows.sort_by([(ROW, "ascending")])  # arrival order: numbered so
        numbers = pa.array(np.arange(next_row, next_row + rows.num_rows, dtype=np.int64))
        rows = rows.set_column(rows.schema.get_field_index(ROW), ROW, numbers)
        next_row += rows.num_rows
        if mark is not None:
            late = pc.less(rows.column(TS), pa.scalar(mark, pa.int64()))
            if pc.any(late).as_py():
                step.late = rows.filter(late)
                if job.fail:
                    first = step.late.slice(0, 1)
                    raise InputError(_late_message(first, mark), None, NAME)
                rows = rows.filter(pc.invert(late))
        pending = pa.concat_tables([pending, rows.cast(schema)]) if pending.num_rows else rows.cast(schema)
    latest = int(pc.max(pending.column(TS)).as_py()) if pending.num_rows else None
    bounds = [m for m in (mark, None if latest is None else latest - job.delay) if m is not None]
    now = max(bounds) if bounds else None  # every row to come is at or after it
    if now is None:
        return replace(step, state=None if state.empty else state)
    pending = pending.sort_by([(TS, "ascending"), (ROW, "ascending")])
    due = pc.less_equal(pending.column(TS), pa.scalar(now, pa.int64()))
    released, pending = pending.filter(due), pending.filter(pc.invert(due))
    if released.num_rows or (job.waits and state.tail.num_rows and now != state.now):
        increment = Increment(state.tail.num_rows, state.now, now)
        step.matches = _evaluate(job, state.tail, released, increment, step)
    both = pa.concat_tables([state.tail, released]) if released.num_rows else state.tail
    tail = both.filter(pc.greater_equal(both.column(TS), pa.scalar(now - job.reach, pa.int64())))
    after = GroupState(tail, pending, next_row, now)
    step.state = None if after.empty else after
    timer = _timer(job, after)
    # (a timer fires when the watermark moves past it: none can be set at or before it)
    step.timer = None if timer is None else max(timer, (watermark_ms or 0) + 1)
    return step


def _evaluate(
    job: StreamJob, tail: pa.Table, released: pa.Table, increment: Increment, step: Step
) -> pa.Table:
    """The matches the step decides, in the result schema as shipped."""
    table = pa.concat_tables([tail, released]) if tail.num_rows else released
    data = shard_columns(table, job.reading)
    pattern = job.pattern
    order = tuple(v.name for v in pattern.variables)
    options = EvalOptions(max_instances=job.max_instances)
    found = evaluate_found(pattern, order, data, job.reading.schema, step.stats, options, increment)
    rows = ({"kind": "match", "match": m} for f in found for m in f.matches())
    out = pa.schema([pa.field("kind", pa.string()), pa.field("text", pa.string()), *job.typed])
    typed = typed_shard(rows, job.reading, pattern, job.show, job.typed, out, job.scales)
    matches = typed.filter(pc.equal(typed.column("kind"), "match"))
    return matches.drop_columns(["kind", "text"])


def _timer(job: StreamJob, state: GroupState) -> int | None:
    """When to be called again without rows (ms; a timer fires once Spark's watermark
    reaches it): a trailing negation's matches are decided as time moves on, so at the next
    millisecond past ``now``; a waiting row is released when the watermark passes it; and
    the state is dropped once the watermark is a reach past its latest row."""
    if state.empty or state.now is None:
        return None
    if job.waits and state.tail.num_rows:
        return state.now // _MS + 1
    if state.pending.num_rows:
        return -(-int(pc.min(state.pending.column(TS)).as_py()) // _MS)
    latest = int(pc.max(state.tail.column(TS)).as_py())
    return -(-(latest + job.reach) // _MS) + 1


def _late_message(row: pa.Table, mark: int) -> str:
    return (
        f"a row at {iso_text(int(row.column(TS)[0].as_py()))} came after the watermark, {iso_text(mark)}:"
        " later than max_delay allows (on_bad_row='skip' leaves such rows out and counts them)"
    )


def ipc(table: pa.Table) -> bytes:
    """A table as Arrow IPC bytes: how rows, state and matches travel through the stateful
    operator (exact: Spark's pandas conversion would make an integer with nulls a float)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def chunks(rows: pa.Table, keys: tuple[str, ...]) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
    """A micro-batch partition's rows by group: each key's rows (rows without a key left
    out: no match can use them), or all of them (no key)."""
    if not keys:
        if rows.num_rows:
            yield (), rows
        return
    present = rows
    for name in keys:
        present = present.filter(pc.is_valid(present.column(name)))
    if not present.num_rows:
        return
    index = pa.array(np.arange(present.num_rows, dtype=np.int64))
    numbered = present.append_column("__cepcli_i", index)
    grouped = numbered.group_by(list(keys)).aggregate([("__cepcli_i", "list")])
    for i in range(grouped.num_rows):
        value = tuple(grouped.column(k)[i].as_py() for k in keys)
        yield value, present.take(grouped.column("__cepcli_i_list")[i].values)
