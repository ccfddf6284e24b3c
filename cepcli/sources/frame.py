"""In-memory input (docs/python-api.md): a pandas DataFrame or an Arrow table.

A DataFrame is turned into Arrow once (``pyarrow.Table.from_pandas``); the table's batches
are the input, typed by their Arrow types. An object column of mixed values (``[2, 10, 3,
'abc']``), which Arrow has no type for, is read as the text of each value (numbers as
their exact shortest text) and given the kind most of its present values have, as a CSV
column is: a stray word is a bad row, a null marker missing. Row ids are the
positions of the rows (0-based, the index is ignored), or the values of ``row_col``
(the Spark workers pass the row ids of the whole input that way).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from numbers import Integral

import numpy as np
import pyarrow as pa

from cepcli.errors import InputError
from cepcli.sources.batches import RawBatch, plain
from cepcli.sources.options import InputOptions


def as_table(data: object) -> tuple[pa.Table, frozenset[str]]:
    """A DataFrame, Table or RecordBatch as an Arrow table, and the columns made text
    because their values are of mixed types (see the module)."""
    if isinstance(data, pa.Table):
        return data, frozenset()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]), frozenset()
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        raise InputError(
            f"cannot read a {type(data).__name__}: give a path, a pandas DataFrame or an Arrow table"
        )
    twice(data.columns)  # (pyarrow's own refusal would be an internal error)
    try:
        return pa.Table.from_pandas(data, preserve_index=False), frozenset()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        pass
    fixed = data.copy()
    mixed = []
    for name in fixed.columns:
        try:
            pa.array(fixed[name], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            fixed[name] = pd.Series([_text(v) for v in fixed[name]], dtype=object, index=fixed.index)
            mixed.append(str(name))
    return pa.Table.from_pandas(fixed, preserve_index=False), frozenset(mixed)


def twice(columns: Iterable[object]) -> None:
    """Refuse data that names a column twice, naming the column(s)."""
    names = [str(n) for n in columns]
    if len(set(names)) != len(names):
        doubled = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"the data names a column twice ({', '.join(doubled)})", filename="<data>")


def _text(value: object) -> str | None:
    """A value of a mixed column as the text the CSV typing reads: exact."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        return repr(float(value))  # type: ignore[arg-type]
    if isinstance(value, Integral):
        return str(int(value))
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else str(value)


class FrameReader:
    text = False
    streaming = False

    def __init__(self, data: object, options: InputOptions) -> None:
        table, self.text_columns = as_table(data)
        # a DataFrame's column of Decimal objects is decimal, whatever scale pyarrow gave it
        # from its values (whole numbers only: scale 0, which a typed file's int-like decimal is)
        objects = {str(n) for n, dtype in getattr(data, "dtypes", {}).items() if str(dtype) == "object"}
        self.decimal_columns = frozenset(
            n for n, t in zip(table.column_names, table.schema.types, strict=True)
            if n in objects and pa.types.is_decimal(t)
        )  # fmt: skip
        index = getattr(data, "index", None)  # a DataFrame's index (left out: see ``hint``)
        self.index_names = tuple(str(n) for n in getattr(index, "names", ()) if n is not None)
        names = [str(n) for n in table.column_names]
        twice(names)
        table = table.rename_columns(names)
        if options.format == "csv":  # a CSV's text (Spark's CSV reader): kinds by values, as locally
            texts = {n for n, t in zip(names, table.schema.types, strict=True) if pa.types.is_string(t)}
            self.text_columns = self.text_columns | texts
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

    def ready(self) -> bool:
        return False  # (not a stream)

    def progress(self) -> tuple[int, int | None]:
        return self.read, self.table.num_rows

    def close(self) -> None:
        pass


def index_hint(reader: object, column: str) -> str:
    """Where a DataFrame holds ``column`` as its index (cepcli reads columns only): how to
    make it a column."""
    if column in getattr(reader, "index_names", ()):
        return f"; {column!r} is the DataFrame's index: pass frame.reset_index()"
    return ""
