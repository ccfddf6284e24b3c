"""CSV input (SPEC section 1): files, ``.gz`` and standard input, read in chunks.

Each chunk is typed (numeric-looking columns become numbers, empty cells missing),
its timestamps parsed and checked, and prefiltered with vectorised masks; only the
rows some variable can use become ``Event`` objects.
"""

from __future__ import annotations

import gzip
import io
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import IO, Any

import numpy as np
import pandas as pd

from cepcli.errors import InputError
from cepcli.events import Event, Kind, Schema
from cepcli.runtime.stats import Stats
from cepcli.sources.prefilter import Prefilter

CHUNK_ROWS = 65_536


@dataclass(frozen=True, slots=True)
class CsvOptions:
    """How to read one CSV input. ``path`` is a file, ``-`` for standard input, or
    None before the command line has resolved it (the query's ``FROM``)."""

    path: str | None = "-"
    type_col: str = "type"
    time_col: str = "ts"
    time_format: str | None = None
    header: bool = True
    columns: tuple[str, ...] | None = None
    sort: bool = False
    chunk_rows: int = CHUNK_ROWS
    row_col: str | None = None  # a column that holds the row ids (the Spark path ships them)
    kinds: tuple[Kind, ...] | None = None  # column kinds decided elsewhere (the Spark driver)
    time_numeric: bool | None = None  # likewise, whether the time column holds numbers


class CsvSource:
    """Reads one CSV input. ``schema()`` peeks at the first chunk; ``events()`` streams."""

    def __init__(self, options: CsvOptions, stdin: IO[bytes] | None = None) -> None:
        self.options = options
        if options.path is None:
            raise ValueError("CsvSource needs a resolved path")
        self.path: str = options.path
        self.name = "<stdin>" if options.path == "-" else options.path
        self._raw: IO[bytes] | None = None
        self._stdin = stdin
        self._reader: Iterator[pd.DataFrame] | None = None
        self._first: pd.DataFrame | None = None
        self._schema: Schema | None = None
        self._time_numeric: bool | None = None
        self.rows_read = 0
        self.total_bytes: int | None = None
        self.on_chunk: Callable[[CsvSource], None] | None = None

    # --- opening and the schema -------------------------------------------------------

    def _open(self) -> Iterator[pd.DataFrame]:
        opts = self.options
        try:
            if self.path == "-":
                raw: IO[bytes] = self._stdin or sys.stdin.buffer
            else:
                raw = open(self.path, "rb")  # noqa: SIM115 - closed in close()
                raw.seek(0, io.SEEK_END)
                self.total_bytes = raw.tell()
                raw.seek(0)
        except OSError as err:
            raise InputError(f"cannot open: {err.strerror}", filename=self.name) from None
        self._raw = raw
        stream: IO[bytes] | gzip.GzipFile = raw
        if self.path.endswith(".gz") or _gzip_magic(raw):
            stream = gzip.GzipFile(fileobj=raw)
        try:
            return pd.read_csv(
                stream,
                chunksize=opts.chunk_rows,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                header=0 if opts.header else None,
                names=list(opts.columns) if opts.columns else None,
                encoding="utf-8",
            )
        except pd.errors.EmptyDataError:
            raise InputError("the input is empty (no header row)", filename=self.name) from None
        except (ValueError, OSError, EOFError, UnicodeDecodeError) as err:
            raise InputError(_reason(err), filename=self.name) from None

    def schema(self) -> Schema:
        if self._schema is None:
            self._reader = self._open()
            first = self._next_chunk()
            if first is None:
                raise InputError("the input is empty (no header row)", filename=self.name)
            self._first = first
            opts = self.options
            columns = tuple(str(c) for c in first.columns if c != opts.row_col)
            for role, col in (("type", opts.type_col), ("time", opts.time_col)):
                if col not in columns:
                    flag = "--type-col" if role == "type" else "--time-col"
                    raise InputError(
                        f"no {role} column {col!r} (columns: {', '.join(columns)}; choose one with {flag})",
                        filename=self.name,
                    )
            kinds = opts.kinds or tuple(
                Kind.STR if c == opts.type_col else column_kind(first[c]) for c in columns
            )
            self._schema = Schema(columns, kinds, opts.type_col, opts.time_col)
        return self._schema

    def _next_chunk(self) -> pd.DataFrame | None:
        assert self._reader is not None
        try:
            return next(self._reader)
        except StopIteration:
            return None
        except pd.errors.ParserError as err:
            ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(err))
            if ragged:
                expected, line, saw = (int(g) for g in ragged.groups())
                row = line - 1 - (1 if self.options.header else 0)
                raise InputError(
                    f"{saw} fields where {expected} are expected (line {line} of the file)", row, self.name
                ) from None
            raise InputError(_reason(err), filename=self.name) from None
        except (UnicodeDecodeError, EOFError, OSError, ValueError) as err:
            raise InputError(_reason(err), filename=self.name) from None

    def progress(self) -> tuple[int, int | None]:
        """Bytes consumed so far and the total, for a progress bar."""
        raw = self._raw
        if raw is None or self.total_bytes is None:
            return 0, None
        try:
            return raw.tell(), self.total_bytes
        except (OSError, ValueError):
            return 0, self.total_bytes

    def close(self) -> None:
        if self._raw is not None and self.path != "-":
            self._raw.close()

    # --- streaming events -------------------------------------------------------------

    def events(
        self, prefilter: Prefilter, stats: Stats, typed: frozenset[str] | None = None
    ) -> Iterator[Event]:
        """The events some variable can use, in stream order. Columns in ``typed`` (all
        when None) hold numbers as numbers; the others keep their text until written."""
        schema = self.schema()
        columns = frozenset(schema.columns) if typed is None else typed | {schema.type_col}
        chunks = self._chunk_events(schema, prefilter, stats, columns)
        if not self.options.sort:
            yield from chunks
            return
        started = time.perf_counter()
        ordered = sorted(chunks, key=attrgetter("ts"))
        stats.input_seconds = time.perf_counter() - started  # reading and sorting, all of it
        yield from ordered

    def _chunk_events(
        self, schema: Schema, prefilter: Prefilter, stats: Stats, typed: frozenset[str]
    ) -> Iterator[Event]:
        kinds = list(schema.kinds)
        chunks = self._masked_chunks(schema, prefilter, stats, kinds)
        while True:
            started = time.perf_counter()  # input time: parse, type, prefilter, build
            found = next(chunks, None)
            if found is None:
                stats.input_seconds += time.perf_counter() - started
                return
            chunk, ids, ts, masks = found
            keep = np.flatnonzero(masks)
            events = self._build(chunk, keep, masks, ts, ids, kinds, schema, typed) if len(keep) else []
            stats.input_seconds += time.perf_counter() - started
            yield from events
            if self.on_chunk is not None:
                self.on_chunk(self)

    def _masked_chunks(
        self, schema: Schema, prefilter: Prefilter, stats: Stats, kinds: list[Kind]
    ) -> Iterator[tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]]:
        """Each chunk with its row ids, its timestamps and its variable masks."""
        last_ts: float | None = None
        last_value: object = None
        chunk = self._first
        self._first = None
        while chunk is not None:
            base = self.rows_read
            self.rows_read += len(chunk)
            stats.events = self.rows_read
            if self.options.row_col is not None:
                ids = chunk[self.options.row_col].to_numpy(dtype=np.int64)
            else:
                ids = np.arange(base, base + len(chunk), dtype=np.int64)
            ts = self._timestamps(chunk[schema.time_col], ids)
            if not self.options.sort and len(ts):
                last_ts, last_value = self._check_order(chunk, ts, ids, last_ts, last_value)
            frame = {
                c: self._column(chunk[c], c, kinds, schema, ids)
                for c in prefilter.columns
                if c != schema.time_col
            }
            frame[schema.time_col] = pd.Series(ts, index=chunk.index)
            masks, evaluations = prefilter.masks(chunk[schema.type_col], frame)
            stats.prefilter_evaluations += evaluations
            yield chunk, ids, ts, masks
            chunk = self._next_chunk()

    def count_variables(self, prefilter: Prefilter) -> tuple[dict[int, int], int, bool]:
        """How many events each variable can use (by bit): over the whole file, in a
        separate pass, or for standard input over the first chunk (a warm-up sample).
        Returns the counts, the rows counted and whether it was a sample."""
        schema = self.schema()
        bits = [f.bit for f in prefilter.variables]
        counts = dict.fromkeys(bits, 0)
        if self.path == "-":
            assert self._first is not None
            sample = CsvSource(self.options, stdin=io.BytesIO(b""))
            sample._schema, sample._first, sample._reader = schema, self._first, iter(())
            chunks = sample._masked_chunks(schema, prefilter, Stats(), list(schema.kinds))
            is_sample = True
        else:
            whole = CsvSource(self.options)
            whole.schema()
            chunks = whole._masked_chunks(schema, prefilter, Stats(), list(schema.kinds))
            is_sample = False
        rows = 0
        try:
            for chunk, _, _, masks in chunks:
                rows += len(chunk)
                for bit in bits:
                    counts[bit] += int(np.count_nonzero(masks >> bit & 1))
        finally:
            if not is_sample:
                whole.close()
        return counts, rows, is_sample

    def _build(
        self,
        chunk: pd.DataFrame,
        keep: np.ndarray,
        masks: np.ndarray,
        ts: np.ndarray,
        ids: np.ndarray,
        kinds: list[Kind],
        schema: Schema,
        typed: frozenset[str],
    ) -> list[Event]:
        part = chunk.iloc[keep]
        grid = part[list(schema.columns)].to_numpy(dtype=object)
        for i, c in enumerate(schema.columns):
            if c in typed:
                grid[:, i] = _python(self._column(part[c], c, kinds, schema, ids[keep]))
        # Other columns keep their text ('' for missing) and are typed when written
        # (events.typed_value): most events are never part of a match.
        values = grid.tolist()
        types = part[schema.type_col].tolist()
        rows = ids[keep].tolist()
        times = ts[keep].tolist()
        return list(map(Event, rows, times, types, values, masks[keep].tolist()))

    def _column(
        self, col: pd.Series, name: str, kinds: list[Kind], schema: Schema, ids: np.ndarray
    ) -> pd.Series:
        """A column typed by its kind: numbers (NaN when missing) or strings (None)."""
        i = schema.columns.index(name)
        kind = kinds[i]
        if kind is Kind.UNKNOWN:
            kind = kinds[i] = column_kind(col)
        if kind is Kind.STR or kind is Kind.UNKNOWN:
            return col.where(col != "", None)
        numbers = pd.to_numeric(col, errors="coerce")
        bad = numbers.isna() & (col != "")
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"column {name!r} is numeric but holds {col.iloc[pos]!r}",
                int(ids[pos]),
                self.name,
            )
        if kind is Kind.INT:
            return numbers.astype("Int64") if numbers.isna().any() else numbers.astype("int64")
        return numbers.astype("float64")

    def _timestamps(self, col: pd.Series, ids: np.ndarray) -> np.ndarray:
        opts = self.options
        if self._time_numeric is None:
            self._time_numeric = (
                opts.time_numeric if opts.time_numeric is not None else time_is_numeric(col, opts.time_format)
            )
        return parse_times(col, ids, self._time_numeric, opts.time_format, opts.time_col, self.name)

    def _check_order(
        self, chunk: pd.DataFrame, ts: np.ndarray, ids: np.ndarray, last_ts: float | None, last_value: object
    ) -> tuple[float, object]:
        col = chunk[self.options.time_col]
        if last_ts is not None and ts[0] < last_ts:
            self._decrease(0, last_value, col.iloc[0], ids)
        drops = np.flatnonzero(np.diff(ts) < 0)
        if len(drops):
            pos = int(drops[0]) + 1
            self._decrease(pos, col.iloc[pos - 1], col.iloc[pos], ids)
        return float(ts[-1]), col.iloc[-1]

    def _decrease(self, pos: int, before: object, after: object, ids: np.ndarray) -> None:
        raise InputError(
            f"timestamp {after!r} is earlier than the previous row's {before!r}"
            " (the input must be in time order; pass --sort to sort it)",
            int(ids[pos]),
            self.name,
        )


def _gzip_magic(raw: IO[bytes]) -> bool:
    """Does the input start like a gzip file? (Peeks, so pipes work too.)"""
    peek = getattr(raw, "peek", None)
    if peek is not None:
        return bytes(peek(2)[:2]) == b"\x1f\x8b"
    if not raw.seekable():
        return False
    head = raw.read(2)
    raw.seek(0)
    return head == b"\x1f\x8b"


def time_is_numeric(col: pd.Series, time_format: str | None) -> bool:
    """Numbers or date-times? Decided by the first value (a later non-number is then an
    error naming its row)."""
    first = pd.to_numeric(col.iloc[:1], errors="coerce")
    return time_format is None and bool(first.notna().all())


def parse_times(
    col: pd.Series, ids: np.ndarray, numeric: bool, time_format: str | None, time_col: str, name: str
) -> np.ndarray:
    """Timestamps in seconds; an empty or unreadable one is an error naming its row."""
    empty = (col == "").to_numpy()
    if empty.any():
        pos = int(np.flatnonzero(empty)[0])
        raise InputError(f"missing timestamp in column {time_col!r}", int(ids[pos]), name)
    if numeric:
        parsed = pd.to_numeric(col, errors="coerce").astype("float64")
        bad = parsed.isna().to_numpy()
    else:
        try:
            stamps = pd.to_datetime(col, format=time_format or "ISO8601", errors="coerce", utc=True)
        except ValueError:
            stamps = pd.Series(pd.NaT, index=col.index)
        bad = stamps.isna().to_numpy()
        parsed = stamps.astype("int64") / 1e9
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        how = (
            f"with --time-format {time_format!r}"
            if time_format
            else ("as a number" if numeric else "as an ISO-8601 date-time")
        )
        raise InputError(f"cannot read timestamp {col.iloc[pos]!r} {how}", int(ids[pos]), name)
    return parsed.to_numpy(dtype="float64")


def column_kind(col: pd.Series) -> Kind:
    """Numeric-looking columns are numbers (INT when every value is whole)."""
    present = col[col != ""]
    if present.empty:
        return Kind.UNKNOWN
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.isna().any():
        return Kind.STR
    return Kind.INT if numbers.dtype.kind in "iu" else Kind.FLOAT


def _python(col: pd.Series) -> list[Any]:
    """A column as Python values, ``None`` for missing."""
    if col.dtype == object:
        return col.tolist()
    if str(col.dtype) == "Int64":
        return [None if v is pd.NA else int(v) for v in col.tolist()]
    values = col.tolist()
    if col.dtype.kind == "f":
        return [None if v != v else v for v in values]
    return values


def _reason(err: BaseException) -> str:
    if isinstance(err, UnicodeDecodeError):
        byte = err.object[err.start : err.start + 1]
        return f"the input is not valid UTF-8 (byte {byte!r} at offset {err.start})"
    if isinstance(err, EOFError | gzip.BadGzipFile):
        return f"the compressed input is truncated or corrupt ({err})"
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return text.replace("Error tokenizing data. C error: ", "")
