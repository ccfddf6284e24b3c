"""Parquet input: ``pyarrow.parquet.ParquetFile``, a row group at a time, typed by its
schema (integers, floats, booleans, text, timestamps; a timestamp column is already an
instant). Row ids are the rows' positions in the file. A text type column is read as a
dictionary.

A columnar run in file order reads only the columns the query uses (``project``): the
others are nulls of their type in the batches, and ``fetch`` reads them, a row group at a
time, for the rows whose events are made (the matches'), keeping the groups the run has
not passed yet. From ``project`` on, a thread reads the next row groups ahead of the run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Generator, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cepcli.arrays import arrow, sorted_distinct
from cepcli.errors import InputError
from cepcli.sources.ahead import read_ahead
from cepcli.sources.batches import RawBatch, plain
from cepcli.sources.options import InputOptions


class ParquetReader:
    text = False
    streaming = False

    def __init__(self, options: InputOptions) -> None:
        assert options.path is not None
        self.path = options.path
        self.name = options.path
        if options.path == "-":
            raise InputError("Parquet cannot be read from standard input: give its path", filename="<stdin>")
        try:
            self.file = pq.ParquetFile(options.path)
            self.dictionary = _text_columns(self.file)
            if self.dictionary:
                self.file.close()
                self.file = pq.ParquetFile(options.path, read_dictionary=self.dictionary)
        except FileNotFoundError:
            raise InputError("cannot open: No such file or directory", filename=self.name) from None
        except (OSError, pa.ArrowException) as err:
            raise InputError(
                f"cannot read it as Parquet ({str(err).splitlines()[0]})", filename=self.name
            ) from None
        self.columns = tuple(self.file.schema_arrow.names)
        self.total_rows = self.file.metadata.num_rows
        self.total_bytes = os.path.getsize(options.path)
        self.chunk = options.chunk_rows
        # a part of the file (a Spark executor's): its rows start:stop (positions in the file,
        # which may cut a row group), the first of which has the row id split[2]
        split = options.split
        self.first = split[2] if split else 0
        self.read = 0
        meta = self.file.metadata
        counts = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        self.starts = np.cumsum([0, *counts])[:-1].astype(np.int64)  # each group's first position
        self.span = (split[0], split[1]) if split and split[0] >= 0 else (0, self.total_rows)
        self.groups = (
            range(
                int(np.searchsorted(self.starts, self.span[0], "right")) - 1,
                int(np.searchsorted(self.starts, self.span[1], "left")),
            )
            if split and split[0] >= 0
            else None
        )
        self.base = self.first - self.span[0]  # a row's id less its position
        self.wanted: list[str] | None = None  # project(): the columns read from then on
        self.ahead = False  # project(): the row groups after the one in progress read ahead
        self.away: list[str] = []  # the others, read by fetch
        self.fetched: dict[int, pa.Table] = {}  # fetch's row groups
        self.fetch_file: pq.ParquetFile | None = None  # the file as fetch reads it (``_fetching``)
        self.coded: list[str] = []  # the text columns fetch reads as their dictionaries
        if options.only is not None:
            self.project(options.only)

    def project(self, names: Collection[str]) -> list[str]:
        """From the next row group on, read only the columns ``names`` (and those of a
        fixed width: ``_cheap``), and read ahead; the columns left away (returned) are nulls
        of their type, until ``fetch`` reads them."""
        self.away = left_away(self.file.schema_arrow, names)
        self.wanted = [c for c in self.columns if c not in self.away]
        self.ahead = True
        return self.away

    def batches(self) -> Iterator[RawBatch]:
        """The row groups in order, in batches of ``chunk_rows``: streamed (a run that makes
        events holds a batch at a time), and after ``project`` (a columnar run, which keeps
        the rows it reads) read whole by a thread of their own up to ``AHEAD`` groups before
        the run needs them (pyarrow decodes without the GIL: reading and the run's work
        overlap on two cores)."""
        groups = list(self.groups if self.groups is not None else range(self.file.num_row_groups))
        chunk = max(self.chunk, 1)
        while groups and not self.ahead:
            group = groups.pop(0)
            yield from self._numbered(self._cut(group, self._streamed(group, chunk)))
        if groups:
            with contextlib.closing(_read_ahead(self, groups)) as tables:  # (its thread stops)
                for group, table in zip(groups, tables, strict=False):
                    yield from self._numbered(self._cut(group, table.to_batches(max_chunksize=chunk)))

    def _cut(self, group: int, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """A row group's batches, cut to the reader's rows (``span``: a split may begin or
        end inside a row group)."""
        at = int(self.starts[group])  # the position of the batch's first row
        low, high = self.span
        for batch in batches:
            n = batch.num_rows
            first, last = max(low - at, 0), min(high - at, n)
            if first == 0 and last == n:
                yield batch
            elif first < last:
                yield batch.slice(first, last - first)
            at += n
            if at >= high:
                return

    def _streamed(self, group: int, chunk: int) -> Iterator[pa.RecordBatch]:
        try:
            yield from self.file.iter_batches(
                batch_size=chunk, row_groups=[group], columns=self.wanted, use_threads=False
            )
        except (OSError, pa.ArrowException) as err:
            raise self._error(err) from None

    def _numbered(self, batches: Iterable[pa.RecordBatch]) -> Iterator[RawBatch]:
        """The batches, every column of the file in each, with their rows' ids."""
        for batch in batches:
            n = batch.num_rows
            rows = np.arange(self.first + self.read, self.first + self.read + n, dtype=np.int64)
            self.read += n
            yield RawBatch(self._all(batch), rows)

    def _all(self, batch: pa.RecordBatch) -> list[pa.Array]:
        """Every column of the file, those left away as nulls."""
        if batch.num_columns == len(self.columns):
            return [plain(c) for c in batch.columns]
        read = dict(zip(batch.schema.names, batch.columns, strict=True))
        types = self.file.schema_arrow
        n = batch.num_rows
        return [
            plain(read[c]) if c in read else plain(pa.nulls(n, types.field(c).type)) for c in self.columns
        ]

    def fetch(self, rows: np.ndarray) -> list[pa.Array]:
        """The columns left away (``project``) of the rows with these ids (in this order),
        as ``batches`` would have read them. The row groups read are kept, the most
        recently used ``FETCH_BYTES`` of them: each is read once while the calls come in
        file order, and once for all the queries of ``cepcli.run`` that fit."""
        positions = rows - self.base
        groups = np.searchsorted(self.starts, positions, side="right") - 1
        order = np.argsort(groups, kind="stable")
        pieces: list[list[pa.Array]] = [[] for _ in self.away]
        for g in sorted_distinct(groups).tolist():
            table = self.fetched.pop(g, None)
            if table is None:
                try:
                    table = self._fetching().read_row_group(g, columns=self.away, use_threads=False)
                except (OSError, pa.ArrowException) as err:
                    raise self._error(err) from None
                kept = table.nbytes
                for old in list(self.fetched):  # the least recently used first
                    if kept + sum(t.nbytes for t in self.fetched.values()) <= FETCH_BYTES:
                        break
                    del self.fetched[old]
            self.fetched[g] = table  # (the most recently used last)
            at = arrow((positions[groups == g] - self.starts[g]).astype(np.int64))
            for column, piece in zip(self.away, pieces, strict=True):
                taken = plain(table.column(column).take(at))
                piece.append(taken.dictionary_decode() if column in self.coded else taken)
        back = arrow(np.argsort(order, kind="stable").astype(np.int64))  # to the rows' order
        return [pa.concat_arrays(piece).take(back) for piece in pieces]

    def _fetching(self) -> pq.ParquetFile:
        """The file as ``fetch`` reads it: its text columns left away whose values the file
        holds in a dictionary read as that dictionary (``coded``): decoding a row group's
        million strings to take a few costs 4x more than reading the dictionary and its
        indices; the values taken are decoded."""
        if self.fetch_file is None:
            meta, types = self.file.metadata, self.file.schema_arrow
            chunks = (
                [meta.row_group(0).column(j) for j in range(meta.num_columns)] if meta.num_row_groups else []
            )
            paged = {chunk.path_in_schema for chunk in chunks if chunk.has_dictionary_page}
            self.coded = [
                c
                for c in self.away
                if (pa.types.is_string(types.field(c).type) or pa.types.is_large_string(types.field(c).type))
                and c in paged
            ]
            self.fetch_file = pq.ParquetFile(self.path, read_dictionary=(self.dictionary or []) + self.coded)
        return self.fetch_file

    def _error(self, err: Exception) -> InputError:
        return InputError(f"cannot read it as Parquet ({str(err).splitlines()[0]})", filename=self.name)

    def ready(self) -> bool:
        return False  # (not a stream)

    def progress(self) -> tuple[int, int | None]:
        """Bytes, estimated from the rows read (a progress bar's measure)."""
        if not self.total_rows:
            return 0, self.total_bytes
        return int(self.total_bytes * self.read / self.total_rows), self.total_bytes

    def close(self) -> None:
        self.file.close()
        if self.fetch_file is not None:
            self.fetch_file.close()


def _text_columns(file: pq.ParquetFile) -> list[str] | None:
    """The text columns read as dictionaries: their values are not made one by one (half
    the cost of reading flights' row groups), the prefilter looks up each distinct type
    once (a row's is its index), and a column only two variables' conditions read is
    decoded for the rows some variable can use (``Typing.coded``); the others as they are
    typed."""
    names = [
        f.name for f in file.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    return names or None


AHEAD = 2  # row groups read ahead of the run
FETCH_BYTES = 1 << 25  # the row groups ``fetch`` read, kept for its next calls, at most


def left_away(schema: pa.Schema, used: Collection[str]) -> list[str]:
    """The columns a projection to ``used`` leaves away (``ParquetReader.project``, and a
    Spark job's splits): those not used but for the fixed-width ones (``_cheap``)."""
    return [f.name for f in schema if f.name not in used and not _cheap(f.type)]


def _cheap(type_: pa.DataType) -> bool:
    """A column of fixed-width values (numbers, booleans, times), read with the others
    rather than left away: decoding it with its row group costs little (2 ms a million
    values), where fetching it for the matches reads its row groups again (on 30M flights,
    a SEQ3's 320 matches in 100 of 110 row groups: 0.8 s of the run's 1.7)."""
    return bool(
        pa.types.is_integer(type_)
        or pa.types.is_floating(type_)
        or pa.types.is_boolean(type_)
        or pa.types.is_temporal(type_)
        or pa.types.is_decimal(type_)
    )


def _read_ahead(reader: ParquetReader, groups: list[int]) -> Generator[pa.Table, None, None]:
    """The row groups ``groups`` of the reader's file, each with the columns the reader
    wants, read by a thread with a file handle of its own (``ahead.read_ahead``), at most
    ``AHEAD`` groups ahead."""

    def tables() -> Iterator[pa.Table]:
        with contextlib.closing(pq.ParquetFile(reader.path, read_dictionary=reader.dictionary)) as handle:
            for group in groups:
                yield handle.read_row_group(group, columns=reader.wanted, use_threads=False)

    try:
        yield from read_ahead(tables, AHEAD, "cepcli-parquet")
    except (OSError, pa.ArrowException) as err:
        raise reader._error(err) from None
