"""JSON lines input: one JSON object per line (files, compressed files, standard input).

The field names and types come from a sample at the start (the first ``SAMPLE_ROWS``
lines; on a pipe the first line), by the JSON types of the field's values there (nulls
left out): only integers -> int64, integers and fractions -> float64, only booleans ->
bool, only strings -> text (a JSON string is text, as in Parquet or a DataFrame), objects
or arrays -> a nested value (printed, never compared). A field of mixed types (numbers and
a string ``"n/a"``), or with no value in the sample, is read as text and given the kind
most of its present values have, as a CSV column is: a null marker among numbers is
missing and a stray word a bad row; so is a field whose whole numbers a float cannot hold
(beyond 2^53: the typing then says which one). A field first seen after the sample is left
out. A pipe is typed by its first line, and its fields are those of its first read (a field
not in the first line waits for its first value, as a field null there does).

Blocks of whole lines are read with ``pyarrow.json.read_json`` under that schema. A block
it refuses (a line that is not JSON, a value of another type) is read line by line with
Python's ``json`` instead, its values as exact text (numbers as written), and typed like
CSV: a line that is not a JSON object, or a value that contradicts its field's kind, is a
bad row. Row ids count the non-blank lines. A float is read by pyarrow as a 64-bit float: a
time with more than 15 significant digits (epoch nanoseconds in seconds) should be an
integer in a finer ``--time-unit``, or text.
"""

from __future__ import annotations

import json
import select
from collections.abc import Iterator
from decimal import Decimal
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson

from cepcli.errors import InputError, flag
from cepcli.events import Kind
from cepcli.sources.batches import RawBatch, plain
from cepcli.sources.kinds import SAMPLE_ROWS
from cepcli.sources.options import InputOptions
from cepcli.sources.raw import RawInput, arrow_owned, descriptor, gathered

READ_BYTES = 4 << 20


class JsonlReader:
    text = False

    def __init__(self, options: InputOptions, stdin: IO[bytes] | None = None) -> None:
        assert options.path is not None
        split = options.split
        part = split[:2] if split and split[0] >= 0 else None  # (start < 0: the whole file)
        self.input = RawInput(options.path, stdin, part, options.follow)
        self.name, self.streaming = self.input.name, self.input.streaming
        stream = self.input.stream
        self._read = getattr(stream, "read1", stream.read) if self.streaming else stream.read
        self.fd = descriptor(stream) if self.streaming else None  # a pipe's, to wait on
        self.tail = b""
        self.eof = False
        self.next_row = split[2] if split else 0
        self.limit = options.row_limit
        self._held: list[bytes] = []  # blocks read for the sample, not yet handed on
        self.failure: InputError | None = None  # a failed read, raised after the lines before it
        self.text_columns: frozenset[str] = frozenset()  # read as text, kinds by their values
        if split is not None and options.columns:  # a part: the fields and kinds the whole file has
            kinds = dict(options.schema)
            names = options.columns or ()
            self.schema = pa.schema([(n, _ARROW.get(kinds.get(n, Kind.STR), pa.string())) for n in names])
        else:
            self.schema = self._sample(1 if self.streaming else SAMPLE_ROWS)
        self.columns = tuple(self.schema.names)
        # pyarrow reads the nested fields by its own inference (their values are only printed)
        self.parse_schema = pa.schema([f for f in self.schema if f.type != NESTED])

    def _block(self, wait: bool = True) -> bytes | None:
        """The next whole lines (None at the end). A read that fails (a truncated ``.gz``)
        ends the input there: the line it cut is no row, and the error waits in ``failure``
        until the lines before it are handed on. Not ``wait``: empty where a pipe has no
        whole line to read now."""
        while True:
            if self.failure is not None:
                return None
            if not wait and self.fd is not None and not select.select([self.fd], [], [], 0)[0]:
                return b""
            try:
                data = self._read(READ_BYTES)
            except (EOFError, OSError) as err:
                why = f"the compressed input is truncated or corrupt ({err})"
                self.failure = InputError(why, filename=self.name)
                self.tail = b""
                return None
            if not data:
                if self.eof:
                    return None
                self.eof = True
                out, self.tail = self.tail, b""
                return out if out.strip() else None
            buf = self.tail + data
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                self.tail = buf
                if len(buf) > self.limit:
                    raise InputError(
                        f"a line is longer than the limit of {self.limit} bytes"
                        f" (see {flag('max-row-bytes')})",
                        filename=self.name,
                    )
                continue
            self.tail = buf[cut:]
            return buf[:cut]

    def ready(self) -> bool:
        if self._held:
            return True
        if self.fd is None or not self.streaming:
            return False
        block = self._block(wait=False)
        if block:
            self._held.append(block)
        return block != b""  # (the end too: nothing to wait for)

    def _gathered(self) -> bytes | None:
        """The next whole lines; from a pipe, with what arrives soon after
        (``raw.gathered``)."""
        block = self._block()
        if block is None or self.fd is None:
            return block
        return gathered(block, lambda: self._block() or b"", self.fd, READ_BYTES, lambda: self.eof)

    def _sample(self, rows: int) -> pa.Schema:
        """Field names and types from the first ``rows`` objects (see the module). On a pipe
        (``rows`` 1: its first line types it) the fields are those of the lines of its first
        read, up to ``SAMPLE_ROWS`` of them (read anyway, so nothing waits for more): a field
        that is not in the first line has no value there, and its first value decides its
        kind, as for a field that is null there."""
        types: dict[str, set[type]] = {}
        inexact: set[str] = set()  # fields with a whole number a float cannot hold
        seen = 0
        while seen < rows:
            block = self._block()
            if block is None:
                break
            self._held.append(block)
            for line in block.splitlines():
                if not line.strip():
                    continue
                seen += 1
                record = _object(line)
                if seen > rows:  # (the rest of a pipe's first read: its field names)
                    if seen > SAMPLE_ROWS:
                        break
                    for key in record or ():
                        types.setdefault(str(key), set())
                    continue
                for key, value in (record or {}).items():
                    types.setdefault(str(key), set()).add(type(value))
                    if type(value) is int and abs(value) > 2**53 and int(float(value)) != value:
                        inexact.add(str(key))
                if seen >= rows and not self.streaming:
                    break
        if not types:
            if self.failure is not None:
                raise self.failure
            if not self._held:
                raise InputError("the input is empty (no JSON lines)", filename=self.name)
            raise InputError("no JSON object in the first lines", filename=self.name)
        fields = [
            (name, None if name in inexact else _arrow_type(found - {type(None)}))
            for name, found in types.items()
        ]
        self.text_columns = frozenset(name for name, type_ in fields if type_ is None)
        return pa.schema([(name, pa.string() if type_ is None else type_) for name, type_ in fields])

    def batches(self) -> Iterator[RawBatch]:
        while True:
            block = self._held.pop(0) if self._held else self._gathered()
            if block is None:
                if self.failure is not None:
                    raise self.failure
                return
            try:
                table = pajson.read_json(
                    pa.BufferReader(arrow_owned(block)),  # (no Python object: see raw.arrow_owned)
                    read_options=pajson.ReadOptions(use_threads=False, block_size=len(block) + 1),
                    parse_options=pajson.ParseOptions(
                        explicit_schema=self.parse_schema, unexpected_field_behavior="infer"
                    ),
                )
            except pa.ArrowInvalid:
                yield from self._line_by_line(block)
                continue
            n = table.num_rows
            if not n:
                continue
            rows = np.arange(self.next_row, self.next_row + n, dtype=np.int64)
            self.next_row += n
            yield RawBatch([self._column(table, c) for c in self.columns], rows)

    def _column(self, table: pa.Table, name: str) -> pa.Array:
        """A field of a block (a nested field absent from the whole block: nulls)."""
        if name not in table.column_names:
            return pa.nulls(table.num_rows, pa.string())
        return plain(table.column(name))

    def _line_by_line(self, block: bytes) -> Iterator[RawBatch]:
        """A block pyarrow refused: every value as exact text, bad lines set apart."""
        values: list[list[str | None]] = [[] for _ in self.columns]
        rows: list[int] = []
        unreadable: list[tuple[int, str]] = []
        for line in block.splitlines():
            if not line.strip():
                continue
            row = self.next_row
            self.next_row += 1
            try:
                record = json.loads(line, parse_float=Decimal)
            except ValueError as err:
                unreadable.append((row, f"the line is not JSON ({err})"))
                continue
            if not isinstance(record, dict):
                unreadable.append((row, f"the line is a JSON {type(record).__name__}, not an object"))
                continue
            rows.append(row)
            for i, name in enumerate(self.columns):
                values[i].append(_text(record.get(name)))
        columns = [pa.array(v, pa.string()) for v in values]
        yield RawBatch(columns, np.array(rows, dtype=np.int64), unreadable, text=True)

    def progress(self) -> tuple[int, int | None]:
        return self.input.progress()

    def close(self) -> None:
        self.input.close()


NESTED = pa.struct([])  # the declared type of a field of objects or arrays (kind ``other``)
_ARROW = {Kind.INT: pa.int64(), Kind.FLOAT: pa.float64(), Kind.BOOL: pa.bool_(), Kind.OTHER: NESTED}


def _arrow_type(found: set[type]) -> pa.DataType | None:
    """A field's type by the JSON types of its values; None: mixed or none (read as text,
    its kind decided by its values as a CSV column's is)."""
    if found == {bool}:
        return pa.bool_()
    if found == {int}:
        return pa.int64()
    if found and found <= {int, float}:
        return pa.float64()
    if found == {str}:
        return pa.string()
    if found and found <= {dict, list}:
        return NESTED
    return None


def _object(line: bytes) -> dict[object, object] | None:
    """A line's JSON object (None: not JSON, or not an object)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _text(value: object) -> str | None:
    """A JSON value as the text the CSV typing reads."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | Decimal):
        return str(value)
    return json.dumps(value, separators=(",", ":"))
