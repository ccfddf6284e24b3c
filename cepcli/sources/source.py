"""One input, whatever its format, as a stream of events (docs/semantics.md section 1).

``Source`` puts the stages together: a reader yields record batches (``sources.csv``,
``parquet``, ``jsonl``, ``frame``); the first rows are kept as a *sample* that decides the
column kinds and how times are read (a fixed number of rows, ``SAMPLE_ROWS``; on a pipe
the first row, since nothing may wait for more); then every batch is typed
(``sources.typed``), its bad rows are failed or skipped (``--on-bad-row``) and its time
order is checked, the prefilter drops the rows no variable can use, and the rest become
``Event`` objects. The sample is replayed first, so every row is read once.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow
from cepcli.errors import InputError, UsageError, flag
from cepcli.events import Event, Kind, Schema
from cepcli.notes import Notes
from cepcli.runtime.columnar import Columns, Increment, one_array
from cepcli.runtime.stats import Stats
from cepcli.sources.ahead import spread
from cepcli.sources.batches import Projecting, RawBatch, Reader
from cepcli.sources.frame import index_hint
from cepcli.sources.kinds import SAMPLE_ROWS, infer_kind, kind_of_type
from cepcli.sources.options import InputOptions, check_width, format_of
from cepcli.sources.prefilter import Prefilter
from cepcli.sources.rows import make_events, typed_columns
from cepcli.sources.text import DEFAULT_NULLS, missing, present_text
from cepcli.sources.times import TimeSpec, compact_warning, decide, nanoseconds, not_times
from cepcli.sources.typed import TypedBatch, Typing, time_shown, type_batch

STEP_ROWS = 1 << 16  # a file's new relevant rows in a step of an incremental evaluation, at least
STEP_QUERIES = 8  # ... times the queries over each step, up to this many (BENCHMARKS.md, "Many queries")
SPREAD_ROWS = 4_096  # a sample of at least this many rows has its columns' kinds read side by side
STEP_SECONDS = 0.25  # a pipe's rows read while more were waiting, evaluated this often at least
_INT64_MIN = -(1 << 63)
ROW_ID = "_row"  # the key a match's event gives its row id (jsonl), and csv's ``v._row``


def open_reader(options: InputOptions, data: object = None, stdin: IO[bytes] | None = None) -> Reader:
    """The reader for ``data`` (a DataFrame or Arrow table) or ``options.path``."""
    if data is not None:
        from cepcli.sources.frame import FrameReader

        return FrameReader(data, options)
    assert options.path is not None
    fmt = format_of(options.path, options.format)
    if fmt == "parquet":
        from cepcli.sources.parquet import ParquetReader

        return ParquetReader(options)
    if fmt == "jsonl":
        from cepcli.sources.jsonl import JsonlReader

        return JsonlReader(options, stdin)
    from cepcli.sources.csv import CsvReader

    return CsvReader(options, stdin)


class Source:
    """One input: ``schema()`` reads the sample; ``events()`` streams (see the module)."""

    def __init__(
        self,
        options: InputOptions,
        data: object = None,
        stdin: IO[bytes] | None = None,
        stats: Stats | None = None,
        notes: Notes | None = None,
    ) -> None:
        options.check()
        self.options = options
        self.stats = stats if stats is not None else Stats()
        self.notes = notes if notes is not None else Notes(self.stats.warnings)
        self.reader = open_reader(options, data, stdin)
        self.name = self.reader.name
        try:
            check_width(len(self.reader.columns), self.name)  # a CSV header is checked as it is read
        except InputError:
            self.reader.close()
            raise
        self.nulls = tuple(DEFAULT_NULLS if options.null_values is None else ("", *options.null_values))
        self._buffer: list[RawBatch] = []  # read, not yet replayed
        self._batches = self.reader.batches()
        self._exhausted = False
        self._cut = False  # pieces of a batch (``--chunk-rows``) are left to hand on
        self._failure: InputError | None = None  # the read failed here: raised after the rows before
        self._schema: Schema | None = None
        self._time: TimeSpec | None = None
        self.sample = ""  # where the kinds came from, for messages
        self.on_chunk: Callable[[Source], None] | None = None

    # --- the sample and the schema ------------------------------------------------------------

    def _fill(self, rows: int) -> int:
        """Read batches until ``rows`` rows are kept (or the input ends); the rows kept."""
        have = sum(len(b) for b in self._buffer)
        while have < rows and not self._exhausted:
            try:
                batch = next(self._batches, None)
            except InputError as err:  # a truncated file: its whole rows first, then this
                self._failure, batch = err, None
            if batch is None:
                self._exhausted = True
                break
            self._buffer.append(batch)
            have += len(batch)
        return have

    def schema(self) -> Schema:
        if self._schema is not None:
            return self._schema
        options, reader = self.options, self.reader
        columns = reader.columns
        if ROW_ID in columns:
            raise InputError(
                f"the input has a column named {ROW_ID!r}, the name cepcli's output gives each event's row"
                " id: rename it",
                filename=self.name,
            )
        for role, col in (("type", options.type_col), ("time", options.time_col)):
            if col not in columns:
                named = flag("type-col" if role == "type" else "time-col")
                raise InputError(
                    f"no {role} column {col!r} (columns: {', '.join(columns)}; choose one with {named})"
                    + index_hint(reader, col),
                    filename=self.name,
                )
        given = dict(options.schema)
        unknown = [c for c in given if c not in columns]
        if unknown:
            raise UsageError(
                f"{flag('schema')} names no column {unknown[0]!r} of the input"
                f" (columns: {', '.join(columns)})"
            )
        wanted = 1 if reader.streaming else SAMPLE_ROWS
        have = min(self._fill(wanted), wanted)
        self.sample = (
            "the first row (a pipe is typed by its first row)"
            if reader.streaming
            else (f"the first {have:,} rows")
        )
        sample = self._sample_columns(wanted)
        nulls = pa.array(self.nulls, pa.string())
        markers = pa.array([n for n in self.nulls if n], pa.string())
        by_values: frozenset[str] = getattr(reader, "text_columns", frozenset())  # typed: mixed columns
        declared = getattr(reader, "schema", None)
        inferred = [  # (text whose kind its values say: the columns side by side)
            i
            for i, name in enumerate(columns)
            if name not in given and name != options.type_col and (reader.text or name in by_values)
        ]

        def infer(i: int) -> Kind:
            return infer_kind(sample[i], nulls)

        said = spread(infer, inferred) if have >= SPREAD_ROWS else [infer(i) for i in inferred]
        told = dict(zip(inferred, said, strict=True))
        kinds = []
        for i, (name, values) in enumerate(zip(columns, sample, strict=True)):
            if name in given:
                kinds.append(given[name])
            elif name == options.type_col:
                kinds.append(Kind.STR)
            elif i in told:
                kinds.append(told[i])
            elif name in getattr(reader, "decimal_columns", ()):  # (Decimal objects: see FrameReader)
                kinds.append(Kind.DECIMAL)
            else:  # the reader's types (JSON lines: its sample's)
                kinds.append(kind_of_type(declared.field(name).type if declared is not None else values.type))
                if kinds[-1] is Kind.STR and pa.types.is_string(values.type):
                    # markers only (an empty string of a typed format is a value): no kind
                    kinds[-1] = Kind.STR if len(present_text(values, markers)) else Kind.UNKNOWN
            if reader.streaming and kinds[-1] is Kind.UNKNOWN:
                kinds[-1] = Kind.PENDING  # no value in the pipe's first row: its first value decides
        time_values = sample[columns.index(options.time_col)]
        held = not_times(time_values.type)
        if held is not None:
            raise InputError(
                f"the time column {options.time_col!r} holds {held}: a time column holds numbers,"
                f" date-time text or timestamps (choose it with {flag('time-col')})",
                filename=self.name,
            )
        spec = decide(time_values, nulls, options.unit, options.time_format)
        if reader.streaming and _all_missing(time_values, nulls):
            spec = TimeSpec("pending", options.unit, options.time_format)  # its first time decides
        if (
            spec.how in ("number", "iso")
            and pa.types.is_string(time_values.type)
            and options.time_col in given
        ):
            # a kind given for a text time column says how to read it (the Spark driver's choice)
            spec = TimeSpec("iso" if given[options.time_col] is Kind.TIME else "number", options.unit)
        self._time = spec
        if not options.sort and options.max_delay is None:
            self._warn_no_clock(time_values, spec, nulls, options.time_col)
        if spec.how == "number" and options.time_unit is None:
            compact = compact_warning(time_values, options.time_col)
            if compact is not None:
                self.notes.warn(compact)
        self._schema = Schema(
            tuple(columns),
            tuple(kinds),
            options.type_col,
            options.time_col,
            options.unit,
            frozenset(self.nulls),
        )
        return self._schema

    def _warn_no_clock(self, values: pa.Array, spec: TimeSpec, nulls: pa.Array, column: str) -> None:
        """A time column that goes back at a fifth of its first rows is no clock that jitters
        (``--time-col delay``): a warning asks whether it is the time, before a decreasing
        time stops the run with its advice to sort (which would sort by it)."""
        if spec.how == "pending":
            return
        ns, bad = nanoseconds(values.slice(0, 1000), spec, nulls)
        steps = np.diff(ns[~bad])
        back = int(np.count_nonzero(steps < 0))
        if len(steps) >= 10 and back * 5 > len(steps):
            self.notes.warn(
                f"the time column {column!r} goes back at {back:,} of its first {len(steps) + 1:,} rows:"
                " is it the time? (choose the column with --time-col; --sort would sort by it)"
            )

    def looks_numeric(self, column: str) -> bool:
        """Whether nine in ten of the sample's values of a text column, missing ones left
        out, are numbers (a column read as text that the user may mean as numbers)."""
        values = self._sample_columns(SAMPLE_ROWS)[self.reader.columns.index(column)]
        text = pc.utf8_trim_whitespace(values.cast(pa.string()))
        present = text.filter(pc.and_(pc.is_valid(text), pc.invert(pc.is_in(text, pa.array(self.nulls)))))
        if len(present) == 0:
            return False
        numeric = pc.match_substring_regex(present, r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")
        return int(pc.sum(numeric).as_py() or 0) >= 0.9 * len(present)

    def _sample_columns(self, rows: int) -> list[pa.Array]:
        """The buffered rows' columns, the first ``rows`` of them."""
        width = len(self.reader.columns)
        parts: list[list[pa.Array]] = [[] for _ in range(width)]
        left = rows
        for batch in self._buffer:
            if left <= 0:
                break
            take = min(left, len(batch))
            for i, column in enumerate(batch.columns):
                parts[i].append(column.slice(0, take))
            left -= take
        out = []
        for i, chunks in enumerate(parts):
            if not chunks:
                out.append(pa.array([], pa.string()))
                continue
            joined = pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]
            out.append(joined)
            del i
        return out

    def typer(self, typed: frozenset[str], coded: frozenset[str] = frozenset()) -> Typing:
        """How this input's batches are typed; ``typed``: the columns the query reads;
        ``coded``: text columns a dictionary may stay until the rows are taken
        (``Typing.coded``)."""
        schema = self.schema()
        assert self._time is not None
        return Typing(
            schema,
            list(schema.current_kinds()),
            typed,
            self._time,
            pa.array(self.nulls, pa.string()),
            frozenset(self.nulls),
            self.reader.text,
            self.reader.streaming,
            self.sample,
            coded,
        )

    # --- frequencies ---------------------------------------------------------------------------

    def count_variables(self, prefilter: Prefilter, typed: frozenset[str]) -> tuple[dict[int, int], int, str]:
        """How many events each variable can use (by bit), over a bounded prefix, read
        once: the sample of a file (no second pass); on a pipe, the rows of the first read
        (waiting for more would hold back the first matches). Returns the counts, the rows
        counted and where they came from. Bad rows are left out, as the run leaves them."""
        self.schema()
        counts = {f.bit: 0 for f in prefilter.variables}
        rows = 0
        typer = self.typer(typed | prefilter.columns)
        check = _Checks(self.options, self.name, Stats(), typer)
        try:
            for raw in self._buffer:
                for batch in _pieces(raw, self.options.chunk_rows):
                    kept, _ = check.batch(type_batch(batch, typer, self.name), batch.unreadable)
                    masks, _ = prefilter.masks(kept.types, _columns(kept, typer), kept.ts, _events_at(kept))
                    rows += len(kept.rows)
                    for bit in counts:
                        counts[bit] += int(np.count_nonzero(masks >> bit & 1))
                    if rows >= SAMPLE_ROWS:
                        break
        except InputError:
            pass  # the run meets the same error where it is, and reports it
        if self._exhausted and rows == sum(len(b) for b in self._buffer):
            where = f"all {rows:,} rows"
        elif self.reader.streaming:
            where = f"the first {rows:,} rows (on a pipe: those of its first read)"
        else:
            where = f"the first {rows:,} rows"
        return counts, rows, where

    # --- streaming events ----------------------------------------------------------------------

    def _raw(self) -> Iterator[RawBatch]:
        while self._buffer:
            yield self._buffer.pop(0)
        if not self._exhausted:
            yield from self._batches
            self._exhausted = True
        if self._failure is not None:
            raise self._failure

    def kept(
        self,
        prefilter: Prefilter,
        stats: Stats,
        typed: frozenset[str],
        floor: tuple[int, object, int] | None = None,
        checks: list[_Checks] | None = None,
    ) -> Iterator[tuple[TypedBatch, np.ndarray, InputError | None]]:
        """Each piece of the input, typed and checked (bad rows, and the time order from
        ``floor``: the latest row before it, as time, text and row), and prefiltered: the rows
        kept, their variable masks, and the error that ends the input after them (``fail``)."""
        # (text only conditions of two variables read, not the prefilter, may stay coded)
        typer = self.typer(typed | prefilter.columns, typed - prefilter.columns)
        check = _Checks(self.options, self.name, stats, typer)
        check.latest = floor
        if checks is not None:
            checks.append(check)  # (``_reordered`` follows its latest time)
        read = self._raw()
        while True:
            started = time.perf_counter()
            raw = next(read, None)
            stats.input_seconds += time.perf_counter() - started  # pyarrow's reading
            if raw is None:
                return
            pieces = list(_pieces(raw, self.options.chunk_rows))
            for n, piece in enumerate(pieces, 1):
                self._cut = n < len(pieces)
                started = time.perf_counter()
                kept, error = check.batch(type_batch(piece, typer, self.name), piece.unreadable)
                stats.events += len(kept.rows)
                masks, evaluations = prefilter.masks(
                    kept.types, _columns(kept, typer), kept.ts, _events_at(kept)
                )
                stats.prefilter_evaluations += evaluations
                stats.input_seconds += time.perf_counter() - started
                for message in typer.warnings:
                    self.notes.warn(message)
                yield kept, masks, error
                if error is not None:
                    return
                if self.on_chunk is not None:
                    self.on_chunk(self)

    def events(self, prefilter: Prefilter, stats: Stats, typed: frozenset[str]) -> Iterator[Event]:
        """The events some variable can use, in stream order (with ``--sort``, sorted by
        time, stably). Columns in ``typed`` hold typed values. An error of the input (a bad
        row under ``fail``, a truncated file) comes after the events of the rows before it:
        with ``--sort``, after those rows, sorted, are handed on."""
        if self.options.max_delay is not None:
            yield from self._reordered(prefilter, stats, typed)
            return
        if not self.options.sort:
            for kept, masks, error in self.kept(prefilter, stats, typed):
                yield from self._made(kept, masks, stats)
                if error is not None:
                    raise error
            return
        held: list[Event] = []
        failure: InputError | None = None
        try:
            for kept, masks, error in self.kept(prefilter, stats, typed):
                held.extend(self._made(kept, masks, stats))
                if error is not None:
                    raise error
        except InputError as err:
            failure = err
        started = time.perf_counter()
        held.sort(key=lambda e: (e.ts, e.row))
        stats.input_seconds += time.perf_counter() - started
        yield from held
        if failure is not None:
            raise failure

    def _reordered(self, prefilter: Prefilter, stats: Stats, typed: frozenset[str]) -> Iterator[Event]:
        """``--max-delay``: the events held until no row to come can precede them (the
        latest time minus the delay has passed them), then handed on in stream order (time,
        then row: arrival); the rest at the end of the input, or before its error. Memory:
        the events of the last delay's worth of time."""
        held: list[tuple[int, int, Event]] = []
        checks: list[_Checks] = []
        failure: InputError | None = None
        try:
            for kept, masks, error in self.kept(prefilter, stats, typed, checks=checks):
                for event in self._made(kept, masks, stats):
                    heapq.heappush(held, (event.ts, event.row, event))
                frontier = checks[0].frontier
                while held and frontier is not None and held[0][0] < frontier:
                    yield heapq.heappop(held)[2]
                if error is not None:
                    raise error
        except InputError as err:
            failure = err
        while held:
            yield heapq.heappop(held)[2]
        if failure is not None:
            raise failure

    def columns(
        self, prefilter: Prefilter, stats: Stats, typed: frozenset[str]
    ) -> tuple[Columns, InputError | None]:
        """The whole input's relevant rows as columns (a bounded input, for the columnar
        engine), in stream order (with ``--sort``, sorted by time, stably), and the error
        that ended the input (``fail``; a truncated file), with ``Columns.until`` the time
        the rows before it reached. No ``Event`` is made here: ``Columns.events`` makes
        those of the matches."""
        parts: list[tuple[TypedBatch, np.ndarray]] = []
        error: InputError | None = None
        reached: int | None = None
        schema = self.schema()
        in_order = not self.options.sort and self.options.max_delay is None
        away, fetch = self._projected(prefilter, typed, in_order)
        try:
            for kept, masks, cut in self.kept(prefilter, stats, typed):
                started = time.perf_counter()  # (the rows kept: input work, as making events is)
                if len(kept.rows):  # the time the other engines have seen (an event, or a tick)
                    last = int(kept.ts[-1]) if reached is None else max(reached, int(kept.ts[-1]))
                    relevant = np.flatnonzero(masks != 0)  # (a bool's: 5x an int64's)
                    reached = max(last, int(kept.ts[relevant].max())) if len(relevant) else last
                    if len(relevant):
                        parts.append((kept.at(relevant), masks[relevant]))
                stats.input_seconds += time.perf_counter() - started
                if cut is not None:
                    error = cut
        except InputError as err:
            error = err
        started = time.perf_counter()
        read = self._read(prefilter, typed)
        data = _columns_of(parts, schema.columns, not in_order, away, fetch, read)  # (--max-delay: sorted)
        data.until = reached if error is not None else None
        stats.input_seconds += time.perf_counter() - started
        return data, error

    def _projected(
        self, prefilter: Prefilter, typed: frozenset[str], in_order: bool
    ) -> tuple[list[int], Callable[[np.ndarray], list[pa.Array]] | None]:
        """The columns no condition reads (read for the matches only, by ``fetch``, where
        the reader can leave them away and the rows come in file order), and ``fetch``."""
        if not isinstance(self.reader, Projecting) or not in_order:
            return [], None
        schema = self.schema()
        away = [schema.index(c) for c in self.reader.project(self._used(prefilter, typed))]
        return away, (self.reader.fetch if away else None)

    def _used(self, prefilter: Prefilter, typed: frozenset[str]) -> frozenset[str]:
        """The columns a run reads beyond its matches' rows: the type and time columns and
        those its conditions read."""
        schema = self.schema()
        return frozenset({schema.type_col, schema.time_col, *typed, *prefilter.columns})

    def _read(self, prefilter: Prefilter, typed: frozenset[str]) -> frozenset[int]:
        """``_used``, as positions of the schema's columns."""
        schema = self.schema()
        return frozenset(schema.index(c) for c in self._used(prefilter, typed))

    def steps(
        self,
        prefilter: Prefilter,
        stats: Stats,
        typed: frozenset[str],
        window: int,
        waits: bool,
        queries: int = 1,
    ) -> Iterator[tuple[Columns, Increment]]:
        """The input's relevant rows as the steps of an incremental evaluation (but with
        ``--sort``). Each step's columns are the tail carried, then the new rows. The tail
        is the rows a match not yet decided may use: those within ``window`` ns of the time
        up to which every row is in (the latest time; with ``--max-delay``, the latest minus
        the delay, the rows after it held until it passes them, and a step's rows sorted by
        time, then arrival); with ``waits``, where a match waits for its window to close,
        two windows, as a negation may precede its earliest event. A step is made on a pipe
        when the rows to come would wait for the writer (its matches out as soon as its rows
        are in; with ``waits``, also when time has moved on), or ``STEP_SECONDS`` after the
        last step, so a fast writer's rows make large steps and a slow one's are evaluated
        at once; when the new rows are at least ``STEP_ROWS`` (times the ``queries`` evaluated
        over each step, up to ``STEP_QUERIES``: each pays a step's fixed cost) and as many as
        the tail's; and
        at the end (every match left decided;
        ``Columns.until`` the time reached where an error ended the input, raised after that
        step). Memory: the tail, the delay's rows and one step's rows, not the input's."""
        schema = self.schema()
        delayed = self.options.max_delay is not None
        away, fetch = self._projected(prefilter, typed, not delayed)
        read = self._read(prefilter, typed)
        tail: list[tuple[TypedBatch, np.ndarray]] = []
        new: list[tuple[TypedBatch, np.ndarray]] = []
        held: list[tuple[TypedBatch, np.ndarray]] = []  # --max-delay: rows a row to come may precede
        tail_rows = new_rows = 0
        before: int | None = None
        stepped = time.monotonic()  # (a pipe's last step)
        reached: int | None = None  # the rows before it are all in (in time order: the latest time)
        latest: int | None = None  # the latest time read
        error: InputError | None = None
        streaming = self.streaming
        reach = window * (2 if waits else 1)
        checks: list[_Checks] = []
        least = STEP_ROWS * min(max(queries, 1), STEP_QUERIES)

        def step(now: int | None, until: int | None = None) -> tuple[Columns, Increment]:
            started = time.perf_counter()
            # (with --max-delay, its rows put in time order)
            data = _columns_of(tail + new, schema.columns, delayed, away, fetch, read)
            data.until = until
            stats.input_seconds += time.perf_counter() - started
            return data, Increment(tail_rows, before, now)

        try:
            for kept, masks, cut in self.kept(prefilter, stats, typed, checks=checks):
                started = time.perf_counter()
                if len(kept.rows):  # the time the other engines have seen (an event, or a tick)
                    last = int(kept.ts.max()) if delayed else int(kept.ts[-1])
                    latest = last if latest is None else max(latest, last)
                    relevant = np.flatnonzero(masks != 0)  # (a bool's: 5x an int64's)
                    if len(relevant):
                        (held if delayed else new).append((kept.at(relevant), masks[relevant]))
                        new_rows += 0 if delayed else len(relevant)
                reached = checks[0].frontier if delayed else latest
                if held and reached is not None:  # the rows no row to come can precede, in order
                    done, held = _released(held, reached)
                    new.extend(done)
                    new_rows += sum(len(b.ts) for b, _ in done)
                stats.input_seconds += time.perf_counter() - started
                if cut is not None:
                    error = cut
                moved = waits and tail and reached != before
                due = new_rows >= max(tail_rows, least) or (
                    streaming and (time.monotonic() - stepped >= STEP_SECONDS or not self._ready())
                )
                if (new_rows or moved) and due:
                    assert reached is not None
                    yield step(reached)
                    stepped = time.monotonic()
                    tail, tail_rows = _since(tail + new, max(reached - reach, _INT64_MIN))
                    new, new_rows, before = [], 0, reached
        except InputError as err:
            error = err
        if held:
            new.extend(_released(held, None)[0])
        if tail or new:
            yield step(None, latest if error is not None else None)
        if error is not None:
            raise error

    @staticmethod
    def _made(kept: TypedBatch, masks: np.ndarray, stats: Stats) -> list[Event]:
        """The events of a piece's rows some variable can use (and a clock tick)."""
        started = time.perf_counter()
        events = _events_at(kept)(np.flatnonzero(masks != 0), masks)
        if len(masks) and not masks[-1]:  # time passed: a clock tick (see _tick)
            events.append(_tick(kept))
        stats.input_seconds += time.perf_counter() - started
        return events

    def _ready(self) -> bool:
        """Whether more rows can be had without waiting for the writer (a pipe's: read
        already, or arriving now)."""
        return self._cut or bool(self._buffer) or (not self._exhausted and self.reader.ready())

    @property
    def streaming(self) -> bool:
        """Whether the input is a pipe, read as it comes."""
        return self.reader.streaming

    def progress(self) -> tuple[int, int | None]:
        return self.reader.progress()

    def close(self) -> None:
        self.reader.close()


def _columns_of(
    parts: list[tuple[TypedBatch, np.ndarray]],
    names: tuple[str, ...],
    sort: bool,
    away: Sequence[int] = (),
    fetch: Callable[[np.ndarray], list[pa.Array]] | None = None,
    read: Collection[int] | None = None,
) -> Columns:
    """The relevant rows of the pieces, joined (sorted by time, stably, with ``sort``); the
    columns at ``away`` were not read: ``fetch`` reads them for the events made. Sorted,
    only the columns at ``read`` (None: all; the ones an engine reads) are put in order;
    the others are nulls there, and ``values`` takes the rows it is asked for from them as
    they came (the matches' rows, not every relevant row, are taken)."""
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return Columns(empty, empty, empty, [pa.nulls(0) for _ in names], lambda at: [])
    rows = np.concatenate([b.rows for b, _ in parts])
    ts = np.concatenate([b.ts for b, _ in parts])
    masks = np.concatenate([m for _, m in parts])
    columns = [_one(_joined([b.columns[i] for b, _ in parts])) for i in range(len(names))]
    types = _joined([b.types for b, _ in parts])
    decimals, pending = parts[0][0].decimals, parts[0][0].pending
    came: list[pa.Array | pa.ChunkedArray] = []  # (sorted: the columns left as they came)
    order = np.zeros(0, dtype=np.int64)
    if sort:
        order = np.lexsort((rows, ts))
        if not (order == np.arange(len(order))).all():
            at = arrow(order)
            rows, ts, masks = rows[order], ts[order], masks[order]
            came = columns
            columns = [
                c.take(at) if read is None or i in read else pa.nulls(len(c), c.type)
                for i, c in enumerate(columns)
            ]
            types = types.take(at)
    moved = [i for i in range(len(columns)) if came and read is not None and i not in read]

    def values(positions: np.ndarray) -> list[pa.Array]:
        at = arrow(positions.astype(np.int64, copy=False))
        taken = [c.take(at) for c in columns]
        if moved and len(positions):
            where = arrow(order[positions])
            for i in moved:
                taken[i] = came[i].take(where)
        if fetch is not None and len(positions):
            for i, fetched in zip(away, fetch(rows[positions]), strict=True):
                taken[i] = fetched
        return typed_columns(taken, pending)

    def events(positions: np.ndarray) -> list[Event]:
        at = arrow(positions.astype(np.int64, copy=False))
        return make_events(
            rows[positions], ts[positions], types.take(at), values(positions), decimals, masks[positions]
        )

    return Columns(rows, ts, masks, columns, events, values=values, decimal_text=frozenset(decimals))


def _released(
    parts: list[tuple[TypedBatch, np.ndarray]], frontier: int | None
) -> tuple[list[tuple[TypedBatch, np.ndarray]], list[tuple[TypedBatch, np.ndarray]]]:
    """The rows of the pieces earlier than ``frontier`` (None: all), and the rest, still
    held (each piece as it came: the step sorts its rows)."""
    if frontier is None:
        return parts, []
    done: list[tuple[TypedBatch, np.ndarray]] = []
    rest: list[tuple[TypedBatch, np.ndarray]] = []
    for batch, masks in parts:
        early = batch.ts < frontier
        if early.all():
            done.append((batch, masks))
        elif not early.any():
            rest.append((batch, masks))
        else:
            done.append((batch.take(early), masks[early]))
            rest.append((batch.take(~early), masks[~early]))
    return done, rest


def _since(
    parts: list[tuple[TypedBatch, np.ndarray]], horizon: int
) -> tuple[list[tuple[TypedBatch, np.ndarray]], int]:
    """The rows of the pieces at ``horizon`` or later, and how many."""
    kept: list[tuple[TypedBatch, np.ndarray]] = []
    for batch, masks in parts:
        if not len(batch.ts) or int(batch.ts.max()) < horizon:
            continue
        if int(batch.ts.min()) < horizon:
            keep = batch.ts >= horizon
            batch, masks = batch.take(keep), masks[keep]
        kept.append((batch, masks))
    return kept, sum(len(b.ts) for b, _ in kept)


def _joined(chunks: list[pa.Array]) -> pa.Array | pa.ChunkedArray:
    """One column of pieces (of one type: chunked, not copied; where a piece's type differs,
    as Python values: ``one_array``)."""
    if len(chunks) == 1:
        return chunks[0]
    try:
        return pa.chunked_array(chunks)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return one_array([v for c in chunks for v in c.to_pylist()])


def _one(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A column in one piece where Arrow can hold it so (a ``take`` of a few rows from a
    column of many chunks costs 40x more); else as it is (text past 2 GiB)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    try:
        return column.combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowCapacityError, pa.ArrowNotImplementedError):
        return column


def _all_missing(values: pa.Array, nulls: pa.Array) -> bool:
    """No present value (a pipe's first row with a missing time)."""
    if not pa.types.is_string(values.type):
        return bool(values.null_count == len(values))
    return not pc.any(pc.invert(missing(values, nulls))).as_py()


def _pieces(raw: RawBatch, size: int) -> Iterator[RawBatch]:
    """A batch cut into pieces of at most ``size`` rows (``--chunk-rows``)."""
    if len(raw) <= size:
        yield raw
        return
    for start in range(0, len(raw), size):
        yield raw.slice(start, min(start + size, len(raw)))


def _tick(batch: TypedBatch) -> Event:
    """The last row of a batch that no variable can use, as an event of no variable: it
    tells the engine that time has passed, so a match waiting for a trailing negation's
    window to close is released now (on a pipe, not only at the end), and buffers evict."""
    last = len(batch.rows) - 1
    return Event(int(batch.rows[last]), int(batch.ts[last]), "", (), 0)


def _columns(batch: TypedBatch, typer: Typing) -> dict[str, pa.Array]:
    return dict(zip(typer.schema.columns, batch.columns, strict=True))


def _events_at(batch: TypedBatch) -> Callable[..., list[Event]]:
    """Makes the events of the rows at some positions (with their variable masks)."""

    def make(positions: np.ndarray, masks: np.ndarray | None = None) -> list[Event]:
        if not len(positions):
            return []
        at = arrow(positions.astype(np.int64, copy=False))
        return make_events(
            batch.rows[positions],
            batch.ts[positions],
            batch.types.take(at),
            [c.take(at) for c in batch.columns],
            batch.decimals,
            masks[positions] if masks is not None else None,
            batch.pending,
        )

    return make


class _Checks:
    """Bad rows (``--on-bad-row``) and the time order, batch after batch. Without ``--sort``
    a row earlier than the latest one kept before it is a bad row; with ``--max-delay D``,
    only one more than D earlier (docs/semantics.md section 8: the others are reordered)."""

    def __init__(self, options: InputOptions, name: str, stats: Stats, typer: Typing) -> None:
        self.skip = options.on_bad_row == "skip"
        self.sort = options.sort
        self.delay = options.delay
        self.delay_text = options.max_delay
        self.name = name
        self.stats = stats
        self.typer = typer
        # the latest row kept: time, as read (a scalar, shown by ``time_shown`` only for a
        # message), row (with --max-delay, the one of the latest time)
        self.latest: tuple[int, object, int] | None = None

    def batch(
        self, batch: TypedBatch, unreadable: list[tuple[int, str]]
    ) -> tuple[TypedBatch, InputError | None]:
        """The rows to evaluate, and the error to raise after them (``fail``)."""
        bad = batch.bad
        why = batch.first_why
        first_bad = int(np.flatnonzero(bad)[0]) if bad.any() else None
        if not self.sort and len(batch.ts):
            late, before = self._late(batch.ts, bad)
            if self.delay is not None:
                # T - t > D (T - D held to int64: a time that far back is before every time)
                floor = np.maximum(before, np.iinfo(np.int64).min + self.delay) - self.delay
                late = late & (batch.ts < floor)
            if late.any():
                p = int(np.flatnonzero(late)[0])
                if first_bad is None or p < first_bad:
                    first_bad, why = p, self._order_problem(batch, bad, p, int(before[p]))
                bad = bad | late
        first: tuple[int, str] | None = None
        if first_bad is not None:
            assert why is not None
            first = (int(batch.rows[first_bad]), why)
        if unreadable and (first is None or unreadable[0][0] < first[0]):
            first = unreadable[0]
        error: InputError | None = None
        kept = batch
        if first is not None and not self.skip:
            error = InputError(first[1], first[0], self.name)
            keep = batch.rows < first[0]
            kept = batch.take(keep)
        elif first is not None:
            self.stats.bad_rows += int(np.count_nonzero(bad)) + len(unreadable)
            if self.stats.first_bad_row is None:
                self.stats.first_bad_row = first
            kept = batch.take(~bad)
        if len(kept.rows):
            last = len(kept.rows) - 1 if self.delay is None else int(np.argmax(kept.ts))
            if self.latest is None or int(kept.ts[last]) >= self.latest[0] or self.delay is None:
                self.latest = (int(kept.ts[last]), kept.time_text[last], int(kept.rows[last]))
        return kept, error

    @property
    def frontier(self) -> int | None:
        """With ``--max-delay``: the rows before this time can be evaluated (no row to come
        may precede them: a later row more than the delay earlier than the latest is bad)."""
        if self.delay is None or self.latest is None:
            return None
        return self.latest[0] - self.delay

    def _late(self, ts: np.ndarray, bad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows earlier than the latest row kept before them, and that latest time."""
        floor = np.iinfo(np.int64).min
        start = self.latest[0] if self.latest else floor
        if ts[0] >= start and bool((ts[1:] >= ts[:-1]).all()) and not bad.any():  # in order: none
            return np.zeros(len(ts), dtype=bool), ts
        running = np.maximum.accumulate(np.where(bad, floor, ts))
        before = np.concatenate(([start], running[:-1]))
        before = np.maximum(before, start)
        return ~bad & (ts < before), before

    def _order_problem(self, batch: TypedBatch, bad: np.ndarray, p: int, held_ts: int) -> str:
        value = time_shown(batch.time_text[p])
        earlier = [j for j in range(p) if not bad[j] and int(batch.ts[j]) == held_ts]
        if earlier:
            j = earlier[-1]
            held: tuple[object, int] = (time_shown(batch.time_text[j]), int(batch.rows[j]))
        else:
            assert self.latest is not None
            held = (time_shown(self.latest[1]), self.latest[2])
        whose = "the previous row's" if held[1] == int(batch.rows[p]) - 1 else f"row {held[1]}'s"
        if self.delay is not None:
            return (
                f"timestamp {value!r} comes later than {flag('max-delay', self.delay_text)} allows: it is"
                f" more than that before {whose} {held[0]!r}, the latest time read"
            )
        return (
            f"timestamp {value!r} is earlier than {whose} {held[0]!r}"
            f" (the input must be in time order; pass {flag('sort')} to sort it, or"
            f" {flag('max-delay', '5min')} to take rows up to 5 minutes late)"
        )
