"""What every reader hands on: record batches with their row ids (docs/semantics.md section 1).

A reader (CSV, Parquet, JSON lines, a DataFrame) is a small object over a pyarrow
reader that yields ``RawBatch``es: the columns as read (text for CSV, typed for the other
formats), the row id of each row, and the rows it could not read at all (a wrong number
of fields, a line over the size limit, a line that is not JSON), which are bad rows with
the row ids of the file.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import whole


@dataclass(slots=True)
class RawBatch:
    """Rows as read. ``unreadable`` are rows not in ``columns`` (row id, why), each
    before the last of ``rows`` (or, in a batch without rows, before everything after)."""

    columns: list[pa.Array]
    rows: np.ndarray
    unreadable: list[tuple[int, str]] = field(default_factory=list)
    text: bool | None = None  # the columns are text to type (None: as the reader says)

    def __len__(self) -> int:
        return len(self.rows)

    def slice(self, start: int, stop: int) -> RawBatch:
        """Rows ``start:stop`` (at least one), with the unreadable rows between the row
        before them and their last."""
        rows = self.rows[start:stop]
        low = int(self.rows[start - 1]) if start else -1
        high = int(rows[-1])
        unreadable = [u for u in self.unreadable if low < u[0] < high]
        return RawBatch([c.slice(start, stop - start) for c in self.columns], rows, unreadable, self.text)


def plain(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as the typing stage expects it: one chunk, text as ``string`` (not
    ``large_string`` or ``string_view``; ``binary_view`` as ``binary``), run-end-encoded
    values decoded, dictionaries decoded but for those of text (a type column, a column
    the query does not read: decoding millions of repeated strings is most of their cost;
    the typing decodes those it reads)."""
    column = whole(column)
    if pa.types.is_run_end_encoded(column.type):  # (no filter or take for these: as plain values)
        column = pc.run_end_decode(column)
    if pa.types.is_string_view(column.type) or pa.types.is_binary_view(column.type):
        column = column.cast(pa.string() if pa.types.is_string_view(column.type) else pa.binary())
    if pa.types.is_dictionary(column.type):
        if pa.types.is_string(column.type.value_type):
            return column
        column = column.dictionary_decode()
    if pa.types.is_large_string(column.type):
        column = column.cast(pa.string())
    return column


class Reader(Protocol):
    """One input, read as batches. ``text``: the columns are text to type (CSV);
    ``streaming``: rows arrive as they are written (a pipe), so nothing may wait for more."""

    name: str
    columns: tuple[str, ...]
    text: bool
    streaming: bool

    def batches(self) -> Iterator[RawBatch]: ...

    def ready(self) -> bool:
        """Whether the next batch can be had without waiting for the writer (a pipe's rows
        already read, or arriving now): a step of the columnar engine waits for them
        (``Source.steps``). False where nothing arrives (a file: its steps go by size)."""
        ...

    def progress(self) -> tuple[int, int | None]: ...

    def close(self) -> None: ...


@runtime_checkable
class Projecting(Protocol):
    """A reader that can read some columns only (Parquet): ``project(names)`` reads from then
    on only those (the others, returned, are nulls of their type), ``fetch(rows)`` reads the
    others of the rows with these ids."""

    def project(self, names: Collection[str]) -> list[str]: ...

    def fetch(self, rows: np.ndarray) -> list[pa.Array]: ...


class RowIds:
    """Row ids for the rows a reader returns. The reader numbers every record it meets
    (its *positions*); the records it could not read are set apart as bad rows, and blank
    ones (only blanks: not rows at all) leave the numbering, so a row's id counts the
    data rows before it. A returned row takes the next position not set apart."""

    def __init__(self, first: int = 0) -> None:
        self.next = first  # the next position
        self.blanks = 0  # blank records before it
        self.pending: list[tuple[int, str]] = []  # (position, why; "" for a blank record)

    def unreadable(self, position: int, why: str) -> None:
        insort(self.pending, (position, why))

    def blank(self, position: int) -> None:
        insort(self.pending, (position, ""))

    def take(self, count: int) -> tuple[np.ndarray, list[tuple[int, str]]]:
        """Ids for ``count`` returned rows, and the unreadable rows among or before them."""
        parts: list[np.ndarray] = []
        skipped: list[tuple[int, str]] = []
        start, left = self.next, count
        pending = self.pending
        while left:
            while pending and pending[0][0] == start:
                self._set_apart(pending.pop(0), skipped)
                start += 1
            stop = min(pending[0][0], start + left) if pending else start + left
            parts.append(np.arange(start - self.blanks, stop - self.blanks, dtype=np.int64))
            left -= stop - start
            start = stop
        self.next = start
        ids = parts[0] if len(parts) == 1 else (np.concatenate(parts) if parts else np.zeros(0, np.int64))
        return ids, skipped

    def _set_apart(self, entry: tuple[int, str], skipped: list[tuple[int, str]]) -> None:
        position, why = entry
        if why:
            skipped.append((position - self.blanks, why))
        else:
            self.blanks += 1

    def rest(self) -> list[tuple[int, str]]:
        """The unreadable rows after every returned one (at the end of the input)."""
        skipped: list[tuple[int, str]] = []
        for entry in self.pending:
            self._set_apart(entry, skipped)
        self.pending = []
        return skipped
