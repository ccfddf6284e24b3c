"""CSV input (SPEC section 1): files (plain or compressed), standard input and pipes.

pyarrow does the reading: quotes (RFC 4180, line breaks inside quoted fields), fields,
and the rows with a wrong number of fields (its ``invalid_row_handler`` numbers them, so
they become bad rows with the row ids of the file). A file is read by its streaming
reader (``open_csv``); a pipe chunk by chunk with ``read_csv``, because the streaming
reader looks one block ahead, which from a pipe would hold every row until the next one
arrives. Every column is read as text and typed afterwards (``sources.typed``), so that
null markers, column kinds and bad values are ours to decide and name. In front of it,
``records.RecordStream`` hands on whole records as soon as they are complete and replaces
rows over the size limit, which pyarrow cannot skip. Blank lines are not rows.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import os
import stat
import sys
from collections.abc import Iterator
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from cepcli.errors import InputError
from cepcli.sources.batches import RawBatch, RowIds
from cepcli.sources.options import InputOptions
from cepcli.sources.records import MARKER, RecordStream

_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\x28\xb5\x2f\xfd": "zstd", b"\x04\x22\x4d\x18": "lz4"}
_SUFFIX = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".zstd": "zstd", ".lz4": "lz4", ".br": "brotli"}


class _Read1(io.RawIOBase):
    """``read`` returns what is available (a pipe's ``read1``), for the decompressors."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self._read = getattr(raw, "read1", raw.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def open_input(path: str, name: str, stdin: IO[bytes] | None) -> tuple[IO[bytes], int | None, bool]:
    """The raw bytes of an input, its size when known, and whether it is a stream (a pipe,
    FIFO or terminal: rows are evaluated as they arrive)."""
    try:
        raw: IO[bytes] = (stdin or sys.stdin.buffer) if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror}", filename=name) from None
    try:
        mode = os.fstat(raw.fileno()).st_mode
    except (OSError, AttributeError, io.UnsupportedOperation):
        return raw, None, False  # in memory (tests): read like a file
    if stat.S_ISREG(mode):
        return raw, os.fstat(raw.fileno()).st_size, False
    return raw, None, True


def decompressed(raw: IO[bytes], path: str, streaming: bool) -> IO[bytes]:
    """The input decompressed when its name or its first bytes say it is compressed."""
    how = next((v for k, v in _SUFFIX.items() if path.lower().endswith(k)), None)
    peek = getattr(raw, "peek", None)
    head = bytes(peek(4)[:4]) if peek is not None else b""
    if not head and peek is None and raw.seekable():
        head = raw.read(4)
        raw.seek(0)
    how = next((v for k, v in _MAGIC.items() if head.startswith(k)), how)
    source: IO[bytes] = _Read1(raw) if streaming else raw  # type: ignore[assignment]
    if how == "gzip":
        return gzip.GzipFile(fileobj=source)  # type: ignore[return-value]
    if how == "bz2":
        return bz2.BZ2File(source)
    if how is not None:
        stream: IO[bytes] = pa.CompressedInputStream(pa.PythonFile(source, mode="r"), how)
        return stream
    return raw


class CsvReader:
    """One CSV input, read by pyarrow (see the module)."""

    text = True

    def __init__(self, options: InputOptions, stdin: IO[bytes] | None = None) -> None:
        assert options.path is not None
        self.path = options.path
        self.name = "<stdin>" if options.path == "-" else options.path
        self._raw, self.total_bytes, self.streaming = open_input(options.path, self.name, stdin)
        limit = options.row_limit
        stream = decompressed(self._raw, options.path, self.streaming)
        self.records = RecordStream(stream, self.name, limit, self.streaming, header=options.header)
        self.offset = 2 if options.header else 1  # pyarrow's row number of the first data row
        self.set_apart = 0  # rows the handler set apart (in the chunk being read, on a pipe)
        self.ids = RowIds()
        names = self._header() if options.header else list(options.columns or ())
        self.columns = tuple(names)
        self.parse = pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=self._invalid)
        self.convert = pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            check_utf8=False,
        )
        self.reader: pacsv.CSVStreamingReader | None = None
        if self.streaming:
            if options.header:  # the header is read: every chunk from here on is data
                self.records.out = self.records.out[len(self._header_bytes) :]
            self.offset = 1
            return
        try:
            self.reader = pacsv.open_csv(
                self.records,
                read_options=pacsv.ReadOptions(
                    use_threads=False, block_size=limit, column_names=None if options.header else names
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
        twice = sorted({n for n in names if names.count(n) > 1})
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
            self.ids.blank(row.number - self.offset)
            return "skip"
        why = self.records.long_row_message(text) or (
            f"{row.actual_columns} fields where {row.expected_columns} are expected"
        )
        self.ids.unreadable(row.number - self.offset, why)
        return "skip"

    def _read(self) -> Iterator[pa.RecordBatch]:
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
                table = pacsv.read_csv(
                    io.BytesIO(chunk),
                    read_options=pacsv.ReadOptions(use_threads=False, column_names=list(self.columns)),
                    parse_options=self.parse,
                    convert_options=self.convert,
                )
                records += table.num_rows + self.set_apart
                yield from table.to_batches()
        except (pa.ArrowInvalid, OSError, EOFError) as err:
            raise InputError(reason(err, limit), filename=self.name) from None

    def batches(self) -> Iterator[RawBatch]:
        for batch in self._read():
            if not batch.num_rows:
                continue
            rows, unreadable = self.ids.take(batch.num_rows)
            columns = list(batch.columns)
            self._check_utf8(columns, rows)
            if self.records.long_rows:
                columns, rows, unreadable = self._markers(columns, rows, unreadable)
            yield RawBatch(columns, rows, unreadable)
        rest = self.ids.rest()
        if rest:
            yield RawBatch([pa.array([], pa.string()) for _ in self.columns], np.zeros(0, np.int64), rest)
        if self.records.failure is not None:
            raise self.records.failure

    def _check_utf8(self, columns: list[pa.Array], rows: np.ndarray) -> None:
        """Bytes that are not UTF-8 are an error of the file, naming the row."""
        for name, column in zip(self.columns, columns, strict=True):
            try:
                column.validate(full=True)
            except pa.ArrowInvalid:
                for i, value in enumerate(column.cast(pa.binary()).to_pylist()):
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
        marked = np.array([v.startswith(MARKER) for v in first], dtype=bool)
        if not marked.any():
            return columns, rows, unreadable
        for i in np.flatnonzero(marked):
            why = self.records.long_row_message(first[i])
            assert why is not None
            unreadable.append((int(rows[i]), why))
        keep = pa.array(~marked)
        return [c.filter(keep) for c in columns], rows[~marked], sorted(unreadable)

    def progress(self) -> tuple[int, int | None]:
        """Bytes read so far and the total, for a progress bar."""
        try:
            return self._raw.tell(), self.total_bytes
        except (OSError, ValueError):
            return 0, self.total_bytes

    def close(self) -> None:
        if self.path != "-":
            self._raw.close()


def reason(err: BaseException, limit: int) -> str:
    """A pyarrow or decompression error as one line a user can act on."""
    if isinstance(err, EOFError | gzip.BadGzipFile):
        return f"the compressed input is truncated or corrupt ({err})"
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    text = text.removeprefix("CSV parse error: ")
    if "straddling" in text:
        return (
            f"a row with quoted line breaks is longer than the limit of {limit} bytes (see --max-row-bytes)"
        )
    if "Empty CSV file" in text:
        return "the input is empty (no header row)"
    if "unbalanced" in text.lower() or "quote" in text.lower():
        return f"a quoted field is not closed ({text})"
    return text
