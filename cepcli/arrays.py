"""numpy arrays handed to Arrow as they are: ``pa.array`` on a numpy array first asks
whether it is a masked array, which imports ``numpy.ma`` (a noticeable part of a short
run's start-up). Here the buffer is wrapped (no copy for numbers; booleans are packed to
bits, as Arrow holds them), with the same values and no nulls. Also ``whole``: a column
in one piece."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def arrow(values: np.ndarray) -> pa.Array:
    """A one-dimensional numpy array of booleans or numbers as an Arrow array (others
    through ``pa.array``)."""
    if not isinstance(values, np.ndarray):
        return pa.array(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    if values.dtype.kind in "iuf" and values.ndim == 1:
        values = np.ascontiguousarray(values)
        return pa.Array.from_buffers(
            pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
        )
    return pa.array(values)


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (``np.unique``, which imports ``numpy.ma``: a cost at
    every start)."""
    values = np.sort(values, kind="stable")
    if len(values) < 2:
        return values
    first = np.empty(len(values), dtype=np.bool_)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]


def whole(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one Arrow array: an array as it is, a chunked one's single chunk (not
    copied), or its chunks joined."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
