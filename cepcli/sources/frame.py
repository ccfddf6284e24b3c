"""In-memory input (SPEC section 6): a pandas DataFrame or an Arrow table.

A DataFrame is turned into Arrow once (``pyarrow.Table.from_pandas``; an object column
of mixed values becomes text); the table's batches are the input. Row ids are the
positions of the rows (0-based, the index is ignored), or the values of ``row_col``
(the Spark workers pass the row ids of the whole input that way).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from cepcli.errors import InputError
from cepcli.sources.batches import RawBatch, plain
from cepcli.sources.options import InputOptions


def as_table(data: object) -> pa.Table:
    """A DataFrame, Table or RecordBatch as an Arrow table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        raise InputError(
            f"cannot read a {type(data).__name__}: give a path, a pandas DataFrame or an Arrow table"
        )
    try:
        return pa.Table.from_pandas(data, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        fixed = data.copy()
        for name in fixed.columns:
            try:
                pa.array(fixed[name], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                fixed[name] = fixed[name].map(lambda v: None if v is None or v != v else str(v))
        return pa.Table.from_pandas(fixed, preserve_index=False)


class FrameReader:
    text = False
    streaming = False

    def __init__(self, data: object, options: InputOptions) -> None:
        table = as_table(data)
        names = [str(n) for n in table.column_names]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise InputError(f"the data names a column twice ({', '.join(twice)})", filename="<data>")
        table = table.rename_columns(names)
        self.row_col = options.row_col
        self.name = "<data>"
        self.columns = tuple(n for n in names if n != self.row_col)
        self.table = table
        self.chunk = options.chunk_rows
        self.read = 0

    def batches(self) -> Iterator[RawBatch]:
        start = 0
        for batch in self.table.to_batches(max_chunksize=max(self.chunk, 1)):
            n = batch.num_rows
            if not n:
                continue
            if self.row_col is not None:
                rows = batch.column(self.row_col).to_numpy(zero_copy_only=False).astype(np.int64)
            else:
                rows = np.arange(start, start + n, dtype=np.int64)
            start += n
            self.read = start
            yield RawBatch([plain(batch.column(c)) for c in self.columns], rows)

    def progress(self) -> tuple[int, int | None]:
        return self.read, self.table.num_rows

    def close(self) -> None:
        pass
