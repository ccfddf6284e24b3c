"""The row factory: typed Arrow columns become ``Event`` objects here, and only here.

The local source makes the events of the rows some variable can use from each typed piece
(``Source.events``); under ``--spark`` each shard makes them from the table its split
readers shipped (``cepcli.spark.shards``), which holds the same columns in Arrow types
Spark carries. Both call ``make_events``, so an event holds the same Python values
wherever it is made: an int, float, bool or text as Arrow gives it, a time or duration as
int nanoseconds, a decimal as a ``Decimal`` (from a decimal type, or from decimal text:
the columns in ``decimal_text``), a nested value as its compact JSON text, missing as None.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

from cepcli.arrays import whole
from cepcli.events import Event, Kind
from cepcli.sources.kinds import python_values, type_native
from cepcli.sources.typed import decimals

Values: TypeAlias = "np.ndarray | pa.Array | pa.ChunkedArray"  # one value per row


def column_values(column: pa.Array | pa.ChunkedArray, decimal_text: bool = False) -> list[object]:
    """A column's values as an event holds them (``decimal_text``: text of exact decimals)."""
    return decimals(column) if decimal_text else python_values(column)


def make_events(
    rows: Values,
    times: Values,
    types: Values,
    columns: Sequence[pa.Array | pa.ChunkedArray],
    decimal_text: Collection[int] = (),
    masks: Values | None = None,
    pending: Sequence[tuple[int, Kind]] = (),
) -> list[Event]:
    """One event per row: its row id, its time in int64 nanoseconds, its type, the values of
    every column (``columns``, in the schema's order; those at the positions in
    ``decimal_text`` hold decimal text; those in ``pending`` are as a typed format read
    them, and are typed here, by their kind) and its variable mask (0 without ``masks``)."""
    ids = _list(rows)
    values = [column_values(c, i in decimal_text) for i, c in enumerate(typed_columns(columns, pending))]
    tuples = list(zip(*values, strict=True)) if values else [()] * len(ids)
    bits = _list(masks) if masks is not None else [0] * len(ids)
    return list(map(Event, ids, _list(times), _list(types), tuples, bits))


def typed_columns(
    columns: Sequence[pa.Array | pa.ChunkedArray], pending: Sequence[tuple[int, Kind]]
) -> list[pa.Array | pa.ChunkedArray]:
    """``columns`` with those in ``pending`` (a typed format's columns the query does not
    read, left as read) typed by their kind, as an event holds them."""
    out = list(columns)
    for i, kind in pending:
        out[i] = type_native(whole(out[i]), kind)[0]  # (a value that does not fit: missing)
    return out


def _list(values: Values) -> list[Any]:
    out: list[Any] = values.tolist() if isinstance(values, np.ndarray) else values.to_pylist()
    return out
