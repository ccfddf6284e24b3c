"""Parquet input: ``pyarrow.parquet.ParquetFile.iter_batches``, typed by its schema
(integers, floats, booleans, text, timestamps; a timestamp column is already an instant).
Row ids are the rows' positions in the file."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cepcli.errors import InputError
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
        split = options.split  # row groups start:stop, the first of whose rows has this id
        self.groups = range(split[0], split[1]) if split and split[0] >= 0 else None
        self.first = split[2] if split else 0
        self.read = 0

    def batches(self) -> Iterator[RawBatch]:
        try:
            batches = self.file.iter_batches(
                batch_size=max(self.chunk, 1), row_groups=self.groups, use_threads=False
            )
            for batch in batches:
                n = batch.num_rows
                rows = np.arange(self.first + self.read, self.first + self.read + n, dtype=np.int64)
                self.read += n
                yield RawBatch([plain(c) for c in batch.columns], rows)
        except (OSError, pa.ArrowException) as err:
            raise InputError(
                f"cannot read it as Parquet ({str(err).splitlines()[0]})", filename=self.name
            ) from None

    def progress(self) -> tuple[int, int | None]:
        """Bytes, estimated from the rows read (a progress bar's measure)."""
        if not self.total_rows:
            return 0, self.total_bytes
        return int(self.total_bytes * self.read / self.total_rows), self.total_bytes

    def close(self) -> None:
        self.file.close()
