"""CSV input (docs/input.md): files (plain or compressed), standard input and pipes.

pyarrow does the reading: quotes (RFC 4180, line breaks inside quoted fields), fields,
and the rows with a wrong number of fields (its ``invalid_row_handler`` numbers them, so
they become bad rows with the row ids of the file). A file is read by its streaming
reader (``open_csv``), a thread of its own parsing a few blocks ahead of the rows taken
(the rows it sets apart are handed to the numbering by the thread that takes the rows);
a pipe chunk by chunk, each chunk read whole on its own, because
the streaming reader looks one block ahead, which from a pipe would hold every row until
the next one arrives. (Not with ``read_csv``: pyarrow's handling of Ctrl-C around it
lets a signal go now and then, and a run would go on after it.) A chunk is handed to
pyarrow in memory Arrow owns (``raw.arrow_owned``), neither a Python file nor a buffer over
Python bytes: pyarrow's I/O thread lets go of those after a read, now and then after the
read has returned, and taking the GIL there as the process exits aborts it ("terminate
called without an active exception"). So are JSON lines' blocks (``sources.jsonl``). Every column is read as
text (an empty cell as missing) and typed afterwards (``sources.typed``), so that null
markers, column kinds and bad values are ours to decide and name. In front of it,
``records.RecordStream`` hands on whole records as soon as they are complete and replaces
rows over the size limit, which pyarrow cannot skip. Blank lines are not rows.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
from collections import Counter, deque
from collections.abc import Generator, Iterator
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from cepcli.arrays import arrow
from cepcli.errors import InputError, flag
from cepcli.sources.ahead import read_ahead
from cepcli.sources.batches import RawBatch, RowIds
from cepcli.sources.options import InputOptions, check_width
from cepcli.sources.raw import RawInput, arrow_owned
from cepcli.sources.records import MARKER, RecordStream

PARSED_AHEAD = 2  # a file's blocks parsed ahead of the rows taken, at most


class CsvReader:
    """One CSV input, read by pyarrow (see the module)."""

    text = True

    def __init__(self, options: InputOptions, stdin: IO[bytes] | None = None) -> None:
        assert options.path is not None
        split = options.split  # a part of the file (a Spark worker's): no header in it
        part = split[:2] if split and split[0] >= 0 else None  # (start < 0: the whole file)
        header = options.header and part is None
        self.input = RawInput(options.path, stdin, part, options.follow)
        self.name, self.streaming = self.input.name, self.input.streaming
        limit = options.row_limit
        self.records = RecordStream(self.input.stream, self.name, limit, self.streaming, header=header)
        first = split[2] if split else 0  # the row id of the first data row
        self.offset = (2 if header else 1) - first  # pyarrow numbers the first data row 2 after a header
        self.set_apart = 0  # rows the handler set apart (in the chunk being read, on a pipe)
        self.ids = RowIds(first)
        # the rows the handler set apart (position, why; "" for a blank line), handed to
        # ``ids`` by the thread that takes the rows (pyarrow may parse ahead on another)
        self.met: deque[tuple[int, str]] = deque()
        names = self._header() if header else list(options.columns or ())
        self.columns = tuple(names)
        self.records.width = len(names)
        self.parse = pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=self._invalid)
        self.convert = pacsv.ConvertOptions(  # text, and an empty cell (quoted or not) is missing
            column_types=dict.fromkeys(names, pa.string()),
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
            check_utf8=False,
        )
        self.reader: pacsv.CSVStreamingReader | None = None
        self._queued = 0  # a pipe's batches parsed and not yet handed on
        if self.streaming:
            if header:  # the header is read: every chunk from here on is data
                self.records.out = self.records.out[len(self._header_bytes) :]
            self.offset = 1
            return
        try:
            self.reader = pacsv.open_csv(
                self.records,
                read_options=pacsv.ReadOptions(
                    use_threads=False, block_size=limit, column_names=None if header else names
                ),
                parse_options=self.parse,
                convert_options=self.convert,
            )
        except (pa.ArrowInvalid, OSError, EOFError) as err:
            raise InputError(reason(err, limit), filename=self.name) from None

    def _header(self) -> list[str]:
        first = self.records.first_record()
        self._header_bytes = first
        if self.records.failure is not None and not first.endswith((b"\n", b"\r")):
            raise self.records.failure
        if not first.strip():
            raise InputError("the input is empty (no header row)", filename=self.name)
        try:
            text = first.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as err:
            raise InputError(
                f"the header row is not valid UTF-8 (byte {first[err.start : err.start + 1]!r})",
                filename=self.name,
            ) from None
        names = next(csv.reader(io.StringIO(text)))
        check_width(len(names), self.name, "the header has")
        twice = sorted(n for n, count in Counter(names).items() if count > 1)
        if twice:
            raise InputError(
                f"the header names {'a column' if len(twice) == 1 else 'columns'} twice"
                f" ({', '.join(repr(n) for n in twice)}): rename them",
                filename=self.name,
            )
        return names

    def _invalid(self, row: pacsv.InvalidRow) -> str:
        """A row of the wrong width: a bad row (a line of only blanks is no row at all)."""
        text = row.text or ""
        assert row.number is not None, "pyarrow numbers rows when it reads without threads"
        self.set_apart += 1
        if not text.strip(" \t\r\n"):
            self.met.append((row.number - self.offset, ""))
            return "skip"
        why = self.records.marker_message(text) or (
            f"{row.actual_columns} fields where {row.expected_columns} are expected"
        )
        self.met.append((row.number - self.offset, why))
        return "skip"

    def _read(self) -> Generator[pa.RecordBatch, None, None]:
        """The batches pyarrow reads: from a file, its streaming reader; from a pipe, each
        chunk of whole records on its own, as soon as it is read."""
        limit = self.records.limit
        try:
            if self.reader is not None:
                yield from self.reader
                return
            records = 0  # records of the chunks read so far, read or set apart
            while chunk := self.records.records():
                self.offset, self.set_apart = 1 - records, 0  # pyarrow numbers a chunk's rows from 1
                table = pacsv.open_csv(  # (not read_csv: its Ctrl-C handling loses a signal now and then)
                    pa.BufferReader(arrow_owned(chunk)),  # (no Python object: see raw.arrow_owned)
                    read_options=pacsv.ReadOptions(
                        use_threads=False, block_size=limit, column_names=list(self.columns)
                    ),
                    parse_options=self.parse,
                    convert_options=self.convert,
                ).read_all()
                records += table.num_rows + self.set_apart
                batches = table.to_batches()
                for i, batch in enumerate(batches):
                    self._queued = len(batches) - 1 - i  # (read: none waits for the writer)
                    yield batch
                self._queued = 0
        except (pa.ArrowInvalid, OSError, EOFError) as err:
            raise InputError(reason(err, limit), filename=self.name) from None

    def ready(self) -> bool:
        return self.streaming and (self._queued > 0 or self.records.ready())

    def batches(self) -> Iterator[RawBatch]:
        """The batches with their rows' ids. A file's blocks are parsed by a thread of
        their own a few blocks ahead (pyarrow parses without the GIL: parsing and typing
        overlap on two cores); a pipe's chunks as they come."""
        parsed = self._read() if self.reader is None else read_ahead(self._read, PARSED_AHEAD, "cepcli-csv")
        with contextlib.closing(parsed):  # (its thread stops)
            for batch in parsed:
                if not batch.num_rows:
                    continue
                self._set_apart()  # (every row before the batch's end is met: parsed)
                rows, unreadable = self.ids.take(batch.num_rows)
                columns = list(batch.columns)
                if not self.records.utf8:  # (bytes that are not UTF-8 were read: which row?)
                    self._check_utf8(columns, rows)
                if self.records.set_apart:
                    columns, rows, unreadable = self._markers(columns, rows, unreadable)
                yield RawBatch(columns, rows, unreadable)
        self._set_apart()
        rest = self.ids.rest()
        if rest:
            yield RawBatch([pa.array([], pa.string()) for _ in self.columns], np.zeros(0, np.int64), rest)
        if self.records.failure is not None:
            raise self.records.failure

    def _set_apart(self) -> None:
        """The rows the handler met so far, set apart from the numbering (``RowIds``)."""
        while self.met:
            position, why = self.met.popleft()
            if why:
                self.ids.unreadable(position, why)
            else:
                self.ids.blank(position)

    def _check_utf8(self, columns: list[pa.Array], rows: np.ndarray) -> None:
        """Bytes that are not UTF-8 are an error of the file, naming the row."""
        for name, column in zip(self.columns, columns, strict=True):
            try:
                column.validate(full=True)
            except pa.ArrowInvalid:
                for i, value in enumerate(column.cast(pa.binary()).to_pylist()):
                    if value is None:
                        continue
                    try:
                        value.decode("utf-8")
                    except UnicodeDecodeError as err:
                        raise InputError(
                            f"the input is not valid UTF-8 (column {name!r}:"
                            f" byte {value[err.start : err.start + 1]!r})",
                            int(rows[i]),
                            self.name,
                        ) from None

    def _markers(
        self, columns: list[pa.Array], rows: np.ndarray, unreadable: list[tuple[int, str]]
    ) -> tuple[list[pa.Array], np.ndarray, list[tuple[int, str]]]:
        """A two-column file reads a marker row (a row over the limit) as a row: set apart."""
        first = columns[0].to_pylist()
        marked = np.array([v is not None and v.startswith(MARKER) for v in first], dtype=bool)
        if not marked.any():
            return columns, rows, unreadable
        for i in np.flatnonzero(marked):
            why = self.records.marker_message(first[i])
            assert why is not None
            unreadable.append((int(rows[i]), why))
        keep = arrow(~marked)
        return [c.filter(keep) for c in columns], rows[~marked], sorted(unreadable)

    def progress(self) -> tuple[int, int | None]:
        return self.input.progress()

    def close(self) -> None:
        self.input.close()


def reason(err: BaseException, limit: int) -> str:
    """A pyarrow or decompression error as one line a user can act on."""
    if isinstance(err, EOFError | gzip.BadGzipFile):
        return f"the compressed input is truncated or corrupt ({err})"
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    text = text.removeprefix("CSV parse error: ")
    if "straddling" in text:
        return (
            f"a row with quoted line breaks is longer than the limit of {limit} bytes"
            f" (see {flag('max-row-bytes')})"
        )
    if "Empty CSV file" in text:
        return "the input is empty (no header row)"
    if "unbalanced" in text.lower() or "quote" in text.lower():
        return f"a quoted field is not closed ({text})"
    return text
