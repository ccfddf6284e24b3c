"""CSV input (SPEC section 1): files, ``.gz`` and standard input, read in chunks.

The byte stream is cut into blocks of whole records here (quoted fields may hold
delimiters and line breaks), and every record's number of fields is counted with numpy,
so that a row with too many or too few fields is told apart and named. Each block is
then parsed with pandas, typed (numeric-looking columns become numbers, empty cells
missing), its timestamps parsed and checked, and prefiltered with vectorised masks;
only the rows some variable can use become ``Event`` objects.

Bad rows (``--on-bad-row``): a wrong number of fields, a missing or unreadable
timestamp, text in a numeric column the query reads, a timestamp earlier than the
latest one so far (without ``--sort``). With ``fail`` the first one stops the run
after the rows before it were evaluated; with ``skip`` they are counted in
``Stats.bad_rows`` and left out. Row ids stay those of the file either way.

A record longer than ``MAX_RECORD_BYTES`` (``--max-row-bytes``) is a bad row too. The
reader never holds more than about the limit plus a block of one record: past the limit
it reads on, block by block, only to find where the record ends (quotes still count: a
quoted field may hold line breaks), and keeps none of it. A quoted field still open at
the end of the input is an error of the whole file, as for short records.
"""

from __future__ import annotations

import gzip
import io
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import IO, Any, NamedTuple

import numpy as np
import pandas as pd

from cepcli.errors import InputError
from cepcli.events import Event, Kind, Schema
from cepcli.runtime.stats import Stats
from cepcli.sources.prefilter import Prefilter

CHUNK_ROWS = 65_536
READ_BYTES = 1 << 20
MAX_RECORD_BYTES = 16 << 20  # a longer record is a bad row, read past without being held
ON_BAD_ROW = ("fail", "skip")


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
    on_bad_row: str = "fail"  # "fail": the first bad row is an error; "skip": count and leave out
    max_row_bytes: int | None = None  # a longer record is a bad row; None: MAX_RECORD_BYTES


# --- cutting the byte stream into records ---------------------------------------------------

_COMMA, _QUOTE, _LF, _CR = 44, 34, 10, 13
_EDGE = np.zeros(256, dtype=bool)  # next to these, a quote opens or closes a quoted field
_EDGE[[_COMMA, _QUOTE, _LF, _CR]] = True
_BLANK = np.zeros(256, dtype=bool)  # a line of only these is skipped (as pandas does)
_BLANK[[32, 9, _LF, _CR]] = True


def split_records(buf: bytes, final: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The complete records of ``buf``, which starts at a record boundary: their ends
    (exclusive, after the line break), their numbers of fields, whether they hold
    anything (blank lines are not rows), and whether a quoted field is open at the end.

    Vectorised: a delimiter or line break counts when an even number of quotes precede
    it. A quote counts when it can open or close a field (next to a delimiter, a line
    break, another quote or the ends), so a stray ``5" screen`` inside an unquoted field
    is text, as for pandas. ``final``: the stream ends here (a last line needs no break).
    """
    arr = np.frombuffer(buf, dtype=np.uint8)
    size = len(arr)
    outside: np.ndarray | None = None
    quotes = np.flatnonzero(arr == _QUOTE)
    if len(quotes):
        before = np.where(quotes > 0, arr[np.maximum(quotes - 1, 0)], _COMMA)
        after = np.where(quotes < size - 1, arr[np.minimum(quotes + 1, size - 1)], _COMMA)
        toggles = quotes[_EDGE[before] | _EDGE[after]]
        if len(toggles):
            flips = np.zeros(size, dtype=np.uint8)
            flips[toggles] = 1
            outside = np.bitwise_xor.accumulate(flips) == 0
    breaks = arr == _LF
    returns = np.flatnonzero(arr == _CR)
    if len(returns):  # a lone CR ends a line too; one at the very end may be followed by LF
        follow = np.where(returns < size - 1, arr[np.minimum(returns + 1, size - 1)], 0)
        lone = returns[(follow != _LF) & ((returns < size - 1) | final)]
        breaks[lone] = True
    commas = arr == _COMMA
    open_quote = False
    if outside is not None:
        breaks &= outside
        commas &= outside
        open_quote = not bool(outside[-1])
    ends = np.flatnonzero(breaks) + 1
    if final and size and (len(ends) == 0 or ends[-1] < size):
        ends = np.append(ends, size)
    starts = np.concatenate(([0], ends[:-1]))
    comma_at = np.flatnonzero(commas)
    fields = 1 + np.searchsorted(comma_at, ends) - np.searchsorted(comma_at, starts)
    # a record holds something when a byte of it is not blank; most start with one
    filled = ~_BLANK[arr[np.minimum(starts, max(size - 1, 0))]] & (ends > starts) if size else ends > starts
    for i in np.flatnonzero(~filled & (ends > starts)):
        filled[i] = bool(buf[starts[i] : ends[i]].strip(b" \t\r\n"))
    return ends, fields, filled, open_quote


def _record_end(arr: np.ndarray, before: int, inside: bool, final: bool) -> tuple[int, int, bool]:
    """Where a record that began before ``arr`` ends, by the rules of ``split_records``:
    the index after its line break, or -1 when it goes on. ``before`` is the byte before
    ``arr`` and ``inside`` whether a quoted field is open there. Also returns how many
    bytes were judged (all but the last unless ``final``: whether a quote there opens or
    closes a field, or a CR ends a line, depends on the byte after it) and whether a
    quoted field is open after them."""
    size = len(arr)
    judged = size if final else size - 1
    if judged <= 0:
        return -1, 0, inside
    head = arr[:judged]
    toggles = np.flatnonzero(head == _QUOTE)
    if len(toggles):
        prev = np.where(toggles > 0, arr[np.maximum(toggles - 1, 0)], before)
        after = np.where(toggles < size - 1, arr[np.minimum(toggles + 1, size - 1)], _COMMA)
        toggles = toggles[_EDGE[prev] | _EDGE[after]]
    breaks = np.flatnonzero(head == _LF)
    returns = np.flatnonzero(head == _CR)
    if len(returns):
        follow = np.where(returns < size - 1, arr[np.minimum(returns + 1, size - 1)], 0)
        breaks = np.union1d(breaks, returns[follow != _LF])
    hits = breaks[(np.searchsorted(toggles, breaks) + int(inside)) % 2 == 0]
    end = int(hits[0]) + 1 if len(hits) else -1
    return end, judged, inside != bool(len(toggles) % 2)


def _breaks(data: bytes) -> int:
    return max(data.count(b"\n"), data.count(b"\r"))


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


class _Passed(NamedTuple):
    """Bytes of a too long record (or blank line), read past and not kept in ``data``."""

    first: int  # the first record of the piece after them
    at: int  # where they were in ``data``
    size: int
    lines: int  # line breaks in them


@dataclass(slots=True)
class _Piece:
    """Whole non-blank records: the bytes that hold them, and for each record its start
    and end in ``data`` and its number of fields. A record longer than the limit has an
    empty span, -1 fields and its size in ``too_long``; its bytes are in ``passed``."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    fields: np.ndarray
    offset: int  # of ``data`` in the (decompressed) stream
    lines: int  # line breaks before ``data``
    too_long: dict[int, int] = field(default_factory=dict)  # record -> its size in bytes
    passed: list[_Passed] = field(default_factory=list)

    def line(self, i: int) -> int:
        """The 1-based line of the file where record ``i`` starts."""
        skipped = sum(p.lines for p in self.passed if p.first <= i)
        return self.lines + skipped + self.data.count(b"\n", 0, int(self.starts[i])) + 1

    def skipped(self, at: int) -> tuple[int, int]:
        """Bytes and line breaks of the stream read past before ``data[at]``."""
        before = [p for p in self.passed if p.at <= at]
        return sum(p.size for p in before), sum(p.lines for p in before)


class _Records:
    """A byte stream cut into blocks of whole CSV records, none longer than ``limit``
    held: a longer one is read past (see ``_Piece``)."""

    def __init__(self, stream: IO[bytes] | gzip.GzipFile, name: str, limit: int) -> None:
        self.stream = stream
        self.name = name
        self.limit = limit
        self.carry = b""
        self.eof = False
        self.offset = 0  # bytes before ``carry``
        self.lines = 0  # line breaks before ``carry``

    def take(self, count: int) -> _Piece | None:
        """The next ``count`` non-blank records (fewer at the end); None when there are none.

        Reads blocks until they likely hold ``count`` records or more than the limit,
        then cuts them; an unfinished record is carried to the next round (which reads at
        least one more block), unless it is already longer than the limit: then it is read
        past. So no buffer holds more than the limit and a block of one record."""
        limit = self.limit
        segments: list[bytes] = []
        starts: list[np.ndarray] = []
        ends: list[np.ndarray] = []
        fields: list[np.ndarray] = []
        too_long: dict[int, int] = {}
        passed: list[_Passed] = []
        base = found = 0  # bytes in ``segments``; records taken
        rest, more_needed = self.carry, False
        while True:
            parts = [rest]
            size, breaks = len(rest), _breaks(rest)
            while not self.eof and (more_needed or (breaks < count - found and size <= limit)):
                more = self.stream.read(READ_BYTES)
                if not more:
                    self.eof = True
                    break
                parts.append(more)
                size += len(more)
                breaks += _breaks(more)
                more_needed = False
            buf = b"".join(parts) if len(parts) > 1 else parts[0]
            cuts, counts, filled, open_quote = split_records(buf, self.eof)
            if self.eof and open_quote:  # in the last record
                opened = int(cuts[-2]) if len(cuts) > 1 else 0
                line = self._line(segments, passed) + buf.count(b"\n", 0, opened)
                raise InputError(f"a quoted field is not closed (from line {line} on)", filename=self.name)
            rows = np.flatnonzero(filled)[: count - found]
            last = int(rows[-1]) if len(rows) == count - found else len(cuts) - 1  # whole records
            cut = int(cuts[last]) if last >= 0 else 0
            begin = np.concatenate(([0], cuts[:-1]))[rows]
            stop = cuts[rows]
            counts = counts[rows]
            segment = buf[:cut]
            long = np.flatnonzero(stop - begin > limit)
            if len(long):  # whole but too long: leave their bytes out
                sizes = (stop - begin)[long]
                left_out = np.cumsum(sizes) - sizes  # bytes left out before each
                kept = [segment[: int(begin[long[0]])]]
                for k, j in enumerate(long):
                    a, b = int(begin[j]), int(stop[j])
                    kept.append(segment[b : int(begin[long[k + 1]]) if k + 1 < len(long) else cut])
                    too_long[found + int(j)] = b - a
                    at = base + a - int(left_out[k])
                    passed.append(_Passed(found + int(j) + 1, at, b - a, segment.count(b"\n", a, b)))
                shift = np.zeros(len(rows) + 1, dtype=np.int64)
                shift[long + 1] = sizes
                shift = np.cumsum(shift)[:-1]
                begin, stop, counts = begin - shift, stop - shift, counts.copy()
                stop[long] = begin[long]
                counts[long] = -1
                segment = b"".join(kept)
            segments.append(segment)
            starts.append(begin + base if base else begin)
            ends.append(stop + base if base else stop)
            fields.append(counts)
            base += len(segment)
            found += len(rows)
            rest = buf[cut:]
            if found == count or self.eof:
                break
            more_needed = len(rest) <= limit
            if not more_needed:  # an unfinished record already too long: read past it
                size, lines, nonblank, rest = self._pass(rest, self._line(segments, passed))
                passed.append(_Passed(found + int(nonblank), base, size, lines))
                if nonblank:
                    too_long[found] = size
                    starts.append(np.array([base], dtype=np.int64))
                    ends.append(np.array([base], dtype=np.int64))
                    fields.append(np.array([-1], dtype=counts.dtype))
                    found += 1
                    if found == count:
                        break
        self.carry = rest
        data = segments[0] if len(segments) == 1 else b"".join(segments)
        piece = _Piece(
            data, _cat(starts), _cat(ends), _cat(fields), self.offset, self.lines, too_long, passed
        )
        self.offset += len(data) + sum(p.size for p in passed)
        self.lines += data.count(b"\n") + sum(p.lines for p in passed)
        return piece if found else None

    def _line(self, segments: list[bytes], passed: list[_Passed]) -> int:
        """The 1-based line after ``segments`` and ``passed``."""
        lines = sum(s.count(b"\n") for s in segments) + sum(p.lines for p in passed)
        return self.lines + lines + 1

    def _pass(self, head: bytes, line: int) -> tuple[int, int, bool, bytes]:
        """Reads past the record that begins ``head`` (already longer than the limit),
        a block at a time: its size, its line breaks, whether it holds more than blanks,
        and the bytes after it."""
        arr = np.frombuffer(head, dtype=np.uint8)
        size = lines = 0
        nonblank = False
        before, inside = _COMMA, False
        while True:
            end, judged, after = _record_end(arr, before, inside, self.eof)
            done = arr[: end if end >= 0 else judged]
            size += len(done)
            lines += int(np.count_nonzero(done == _LF))
            nonblank = nonblank or bool((~_BLANK[done]).any())
            if end >= 0:
                return size, lines, nonblank, arr[end:].tobytes()
            if self.eof:
                if after:
                    raise InputError(
                        f"a quoted field is not closed (from line {line} on)", filename=self.name
                    )
                return size, lines, nonblank, b""
            if judged:
                before = int(arr[judged - 1])
            inside = after
            more = self.stream.read(READ_BYTES)
            if not more:
                self.eof = True
            arr = np.concatenate((arr[judged:], np.frombuffer(more, dtype=np.uint8)))


@dataclass(slots=True)
class _Chunk:
    """Up to ``chunk_rows`` data rows: those with the right number of fields parsed, the
    others only named."""

    frame: pd.DataFrame
    ids: np.ndarray  # the frame's row ids
    rows: int  # data rows in the chunk, bad ones included
    wrong_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    wrong_message: str = ""  # why the first of ``wrong_ids`` is bad


class CsvSource:
    """Reads one CSV input. ``schema()`` peeks at the first chunk; ``events()`` streams."""

    def __init__(self, options: CsvOptions, stdin: IO[bytes] | None = None) -> None:
        self.options = options
        if options.path is None:
            raise ValueError("CsvSource needs a resolved path")
        if options.on_bad_row not in ON_BAD_ROW:
            raise ValueError(f"on_bad_row must be one of {ON_BAD_ROW}")
        if options.max_row_bytes is not None and options.max_row_bytes < 1:
            raise ValueError("max_row_bytes must be positive")
        self.path: str = options.path
        self.name = "<stdin>" if options.path == "-" else options.path
        self._raw: IO[bytes] | None = None
        self._stdin = stdin
        self._records: _Records | None = None
        self._columns: list[str] = []
        self._first: _Chunk | None = None
        self._schema: Schema | None = None
        self._time_numeric: bool | None = None
        self.rows_read = 0  # data rows, bad ones included
        self.total_bytes: int | None = None
        self.on_chunk: Callable[[CsvSource], None] | None = None

    # --- opening and the schema -------------------------------------------------------

    def _open(self) -> _Records:
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
        return _Records(stream, self.name, self.options.max_row_bytes or MAX_RECORD_BYTES)

    def schema(self) -> Schema:
        if self._schema is None:
            self._records = self._open()
            opts = self.options
            if opts.header:
                head = self._take(1)
                if head is None:
                    raise InputError("the input is empty (no header row)", filename=self.name)
                if head.too_long:
                    raise InputError(self._too_long(head, 0, "the header row"), filename=self.name)
                self._columns = self._header(head)
            else:
                self._columns = list(opts.columns or ())
            first = self._next_chunk()
            if first is None:
                if not opts.header:
                    raise InputError("the input is empty (no header row)", filename=self.name)
                first = _Chunk(
                    pd.DataFrame({c: pd.Series([], dtype=object) for c in self._columns}), _ids(0), 0
                )
            self._first = first
            columns = tuple(str(c) for c in self._columns if c != opts.row_col)
            for role, col in (("type", opts.type_col), ("time", opts.time_col)):
                if col not in columns:
                    flag = "--type-col" if role == "type" else "--time-col"
                    raise InputError(
                        f"no {role} column {col!r} (columns: {', '.join(columns)}; choose one with {flag})",
                        filename=self.name,
                    )
            frame = first.frame
            kinds = opts.kinds or tuple(
                Kind.STR if c == opts.type_col else column_kind(frame[c]) for c in columns
            )
            self._schema = Schema(columns, kinds, opts.type_col, opts.time_col)
        return self._schema

    def _take(self, count: int) -> _Piece | None:
        assert self._records is not None
        try:
            return self._records.take(count)
        except (EOFError, OSError, ValueError) as err:
            raise InputError(_reason(err), filename=self.name) from None

    def _header(self, head: _Piece) -> list[str]:
        try:
            names = pd.read_csv(io.BytesIO(head.data), header=0, nrows=0, dtype=str, encoding="utf-8")
        except UnicodeDecodeError:
            raise self._not_utf8(head) from None
        except (ValueError, pd.errors.ParserError) as err:
            raise InputError(_reason(err), filename=self.name) from None
        return [str(c) for c in names.columns]

    def _next_chunk(self) -> _Chunk | None:
        """The next data rows, parsed; rows with a wrong number of fields set apart."""
        if self._records is None:
            return None
        piece = self._take(self.options.chunk_rows)
        if piece is None:
            return None
        expected = len(self._columns)
        base = self.rows_read
        self.rows_read += len(piece.fields)
        all_ids = _ids(base, len(piece.fields))
        right = piece.fields == expected
        data = piece.data
        wrong = np.flatnonzero(~right)
        message = ""
        if len(wrong):
            first = int(wrong[0])
            message = (
                self._too_long(piece, first)
                if first in piece.too_long
                else f"{int(piece.fields[first])} fields where {expected} are expected"
                f" (line {piece.line(first)} of the file)"
            )
            edges = np.zeros(len(data) + 1, dtype=np.int8)  # drop the bytes of those records
            edges[piece.starts[wrong]] += 1
            edges[piece.ends[wrong]] -= 1
            kept = np.cumsum(edges[:-1]) == 0
            data = np.frombuffer(data, dtype=np.uint8)[kept].tobytes()
        good = int(right.sum())
        if good:
            try:
                frame = pd.read_csv(
                    io.BytesIO(data),
                    header=None,
                    names=self._columns,
                    index_col=False,
                    dtype=str,
                    keep_default_na=False,
                    na_filter=False,
                    encoding="utf-8",
                )
            except UnicodeDecodeError:
                raise self._not_utf8(piece) from None
            except (ValueError, pd.errors.ParserError) as err:
                raise InputError(_reason(err), filename=self.name) from None
        else:
            frame = pd.DataFrame({c: pd.Series([], dtype=object) for c in self._columns})
        if len(frame) != good:
            raise InputError(
                f"cannot cut lines {piece.line(0)}-{piece.line(len(piece.fields) - 1)} into rows"
                " consistently (is a '\"' misplaced in a field?)",
                filename=self.name,
            )
        ids = all_ids[right]
        if self.options.row_col is not None:
            ids = frame[self.options.row_col].to_numpy(dtype=np.int64)
        return _Chunk(frame, ids, len(piece.fields), all_ids[wrong], message)

    def _too_long(self, piece: _Piece, i: int, what: str = "the row") -> str:
        assert self._records is not None
        return (
            f"{what} is {piece.too_long[i]} bytes long (line {piece.line(i)} of the file; the limit is"
            f" {self._records.limit} bytes, see --max-row-bytes)"
        )

    def _not_utf8(self, piece: _Piece) -> InputError:
        try:
            piece.data.decode("utf-8")
        except UnicodeDecodeError as err:
            byte = err.object[err.start : err.start + 1]
            skipped, skipped_lines = piece.skipped(err.start)
            line = piece.lines + skipped_lines + piece.data.count(b"\n", 0, err.start) + 1
            offset = piece.offset + skipped + err.start
            return InputError(
                f"the input is not valid UTF-8 (byte {byte!r} at offset {offset}, line {line})",
                filename=self.name,
            )
        return InputError("the input is not valid UTF-8", filename=self.name)

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
        when None) hold numbers as numbers; the others keep their text until written.
        A numeric column in ``typed`` or read by the prefilter that holds text makes a
        bad row."""
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
        chunks = self._masked_chunks(schema, prefilter, stats, kinds, typed)
        while True:
            started = time.perf_counter()  # input time: parse, type, prefilter, build
            found = next(chunks, None)
            if found is None:
                stats.input_seconds += time.perf_counter() - started
                return
            chunk, ids, ts, masks, values = found
            keep = np.flatnonzero(masks)
            events = self._build(chunk, keep, masks, ts, ids, values, schema, typed) if len(keep) else []
            stats.input_seconds += time.perf_counter() - started
            yield from events
            if self.on_chunk is not None:
                self.on_chunk(self)

    def _masked_chunks(
        self,
        schema: Schema,
        prefilter: Prefilter,
        stats: Stats,
        kinds: list[Kind],
        typed: frozenset[str] = frozenset(),
    ) -> Iterator[tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray, dict[str, pd.Series]]]:
        """Each chunk, bad rows left out (``skip``) or cut at the first (``fail``: raised
        after the rows before it), with its row ids, timestamps, typed columns and
        variable masks."""
        skip = self.options.on_bad_row == "skip"
        checked = [c for c in schema.columns if c in typed or c in prefilter.columns]
        latest: tuple[float, object, int] | None = None  # the latest timestamp kept: value, text, row
        chunk = self._first
        self._first = None
        while chunk is not None:
            frame, ids = chunk.frame, chunk.ids
            col = frame[schema.time_col]
            ts = self._timestamps(col)
            bad = np.isnan(ts)
            values: dict[str, pd.Series] = {}
            wrong_values: list[tuple[str, np.ndarray]] = []
            for c in checked:
                values[c], wrong = _typed(frame[c], schema.columns.index(c), kinds)
                if wrong is not None:
                    bad |= wrong
                    wrong_values.append((c, wrong))
            late = np.zeros(len(ts), dtype=bool)
            if not self.options.sort and len(ts):
                running = np.maximum.accumulate(np.where(bad, -np.inf, ts))
                before = np.concatenate(([latest[0] if latest else -np.inf], running[:-1]))
                late = ~bad & (ts < before)
                bad |= late

            where = np.flatnonzero(bad)
            first: tuple[int, str] | None = None
            if len(where):
                pos = int(where[0])
                first = (int(ids[pos]), self._why(pos, frame, ids, ts, bad, wrong_values, latest))
            if len(chunk.wrong_ids) and (first is None or int(chunk.wrong_ids[0]) < first[0]):
                first = (int(chunk.wrong_ids[0]), chunk.wrong_message)
            error: InputError | None = None
            keep: np.ndarray | None = None
            if first is not None and not skip:
                keep = ids < first[0]
                error = InputError(first[1], first[0], self.name)
            elif first is not None:
                keep = ~bad
                stats.bad_rows += len(where) + len(chunk.wrong_ids)
                if stats.first_bad_row is None:
                    stats.first_bad_row = f"row {first[0]}: {first[1]}"
            if keep is not None:
                frame, ids, ts, col = frame[keep], ids[keep], ts[keep], col[keep]
                values = {c: v[keep] for c, v in values.items()}
            if len(ts):
                latest = (float(ts[-1]), col.iloc[-1], int(ids[-1]))
            stats.events += len(frame)
            series = {c: values[c] for c in prefilter.columns if c != schema.time_col}
            series[schema.time_col] = pd.Series(ts, index=frame.index)
            masks, evaluations = prefilter.masks(frame[schema.type_col], series)
            stats.prefilter_evaluations += evaluations
            yield frame, ids, ts, masks, values
            if error is not None:
                raise error
            chunk = self._next_chunk()

    def _why(
        self,
        pos: int,
        frame: pd.DataFrame,
        ids: np.ndarray,
        ts: np.ndarray,
        bad: np.ndarray,
        wrong_values: list[tuple[str, np.ndarray]],
        latest: tuple[float, object, int] | None,
    ) -> str:
        """Why the row at ``pos`` of ``frame`` is bad: its timestamp, then its values,
        then its time order (against the latest row kept before it)."""
        col = frame[self.options.time_col]
        value = col.iloc[pos]
        if np.isnan(ts[pos]):
            return self._time_problem(value)
        for c, wrong in wrong_values:
            if wrong[pos]:
                return f"column {c!r} is numeric but holds {frame[c].iloc[pos]!r}"
        earlier = np.flatnonzero(~bad[:pos])
        if len(earlier):
            j = int(earlier[-1])
            held: tuple[object, int] = (col.iloc[j], int(ids[j]))
        else:
            assert latest is not None
            held = (latest[1], latest[2])
        whose = "the previous row's" if held[1] == int(ids[pos]) - 1 else f"row {held[1]}'s"
        return (
            f"timestamp {value!r} is earlier than {whose} {held[0]!r}"
            " (the input must be in time order; pass --sort to sort it)"
        )

    def count_variables(
        self, prefilter: Prefilter, typed: frozenset[str] = frozenset()
    ) -> tuple[dict[int, int], int, bool]:
        """How many events each variable can use (by bit): over the whole file, in a
        separate pass, or for standard input over the first chunk (a warm-up sample).
        Returns the counts, the rows counted and whether it was a sample. Bad rows are
        skipped as the run will skip them; with ``fail`` the count stops at the first
        (the run reports it, after the matches before it)."""
        schema = self.schema()
        bits = [f.bit for f in prefilter.variables]
        counts = dict.fromkeys(bits, 0)
        whole: CsvSource | None = None
        is_sample = self.path == "-"
        rows = 0
        try:
            if is_sample:
                assert self._first is not None
                sample = CsvSource(self.options, stdin=io.BytesIO(b""))
                sample._schema, sample._first = schema, self._first
                chunks = sample._masked_chunks(schema, prefilter, Stats(), list(schema.kinds), typed)
            else:
                whole = CsvSource(self.options)
                whole.schema()
                chunks = whole._masked_chunks(schema, prefilter, Stats(), list(schema.kinds), typed)
            for chunk, _, _, masks, _ in chunks:
                rows += len(chunk)
                for bit in bits:
                    counts[bit] += int(np.count_nonzero(masks >> bit & 1))
        except InputError:
            pass  # the run itself meets the same error where it is, and reports it
        finally:
            if whole is not None:
                whole.close()
        return counts, rows, is_sample

    def _build(
        self,
        chunk: pd.DataFrame,
        keep: np.ndarray,
        masks: np.ndarray,
        ts: np.ndarray,
        ids: np.ndarray,
        values: dict[str, pd.Series],
        schema: Schema,
        typed: frozenset[str],
    ) -> list[Event]:
        part = chunk.iloc[keep]
        grid = part[list(schema.columns)].to_numpy(dtype=object)
        for i, c in enumerate(schema.columns):
            if c in typed:
                grid[:, i] = _python(values[c].iloc[keep])
        # Other columns keep their text ('' for missing) and are typed when written
        # (events.typed_value): most events are never part of a match.
        rows = grid.tolist()
        types = part[schema.type_col].tolist()
        row_ids = ids[keep].tolist()
        times = ts[keep].tolist()
        return list(map(Event, row_ids, times, types, rows, masks[keep].tolist()))

    def _timestamps(self, col: pd.Series) -> np.ndarray:
        """Seconds; NaN where the value is missing or unreadable."""
        opts = self.options
        if self._time_numeric is None:
            self._time_numeric = (
                opts.time_numeric if opts.time_numeric is not None else time_is_numeric(col, opts.time_format)
            )
        return read_times(col, self._time_numeric, opts.time_format)

    def _time_problem(self, value: object) -> str:
        opts = self.options
        return time_problem(value, bool(self._time_numeric), opts.time_format, opts.time_col)


def _ids(start: int, count: int = 0) -> np.ndarray:
    return np.arange(start, start + count, dtype=np.int64)


def _typed(col: pd.Series, i: int, kinds: list[Kind]) -> tuple[pd.Series, np.ndarray | None]:
    """A column typed by its kind: numbers (NaN when missing) or strings (None); and
    where a numeric column holds text (None when nowhere)."""
    kind = kinds[i]
    if kind is Kind.UNKNOWN:
        kind = kinds[i] = column_kind(col)
    if kind is Kind.STR or kind is Kind.UNKNOWN:
        return col.where(col != "", None), None
    numbers = pd.to_numeric(col, errors="coerce")
    wrong = (numbers.isna() & (col != "")).to_numpy()
    if kind is Kind.INT and numbers.dtype.kind in "iu":
        return numbers.astype("int64"), (wrong if wrong.any() else None)
    whole = numbers.dropna()
    if kind is Kind.INT and bool((np.isfinite(whole) & (whole == np.floor(whole))).all()):
        return numbers.astype("Int64"), (wrong if wrong.any() else None)
    return numbers.astype("float64"), (wrong if wrong.any() else None)


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
    """Numbers or date-times? Decided by the values of the first chunk: numbers when
    most of them are (a later non-number is then a bad row naming its row)."""
    if time_format is not None:
        return False
    present = col[col != ""]
    if present.empty:
        return True
    numbers = int(pd.to_numeric(present, errors="coerce").notna().sum())
    return 2 * numbers > len(present)


def read_times(col: pd.Series, numeric: bool, time_format: str | None) -> np.ndarray:
    """Timestamps in seconds; NaN where a value is missing or unreadable."""
    if numeric:
        parsed = pd.to_numeric(col, errors="coerce").astype("float64")
    else:
        try:
            stamps = pd.to_datetime(col, format=time_format or "ISO8601", errors="coerce", utc=True)
        except ValueError:
            stamps = pd.Series(pd.NaT, index=col.index)
        parsed = (stamps.astype("int64") / 1e9).where(stamps.notna())
    out = parsed.to_numpy(dtype="float64")
    out[(col == "").to_numpy()] = np.nan
    return out


def time_problem(value: object, numeric: bool, time_format: str | None, time_col: str) -> str:
    """Why a timestamp cannot be read."""
    if value == "":
        return f"missing timestamp in column {time_col!r}"
    how = (
        f"with --time-format {time_format!r}"
        if time_format
        else ("as a number" if numeric else "as an ISO-8601 date-time")
    )
    return f"cannot read timestamp {value!r} {how}"


def parse_times(
    col: pd.Series, ids: np.ndarray, numeric: bool, time_format: str | None, time_col: str, name: str
) -> np.ndarray:
    """Timestamps in seconds; an empty or unreadable one is an error naming its row."""
    parsed = read_times(col, numeric, time_format)
    bad = np.isnan(parsed)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise InputError(time_problem(col.iloc[pos], numeric, time_format, time_col), int(ids[pos]), name)
    return parsed


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
