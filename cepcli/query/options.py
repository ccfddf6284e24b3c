"""The input options a query may carry in ``FROM 'path' WITH (name = value, ...)``, the
same as the input flags of ``cepcli run``: their names and the values each takes."""

from __future__ import annotations

from cepcli.clock import TIME_UNITS

FORMATS = ("csv", "parquet", "jsonl")
ON_BAD_ROW = ("fail", "skip")

# The value each option takes: text, a whole number >= 1, true/false, or one of a few words.
INPUT_OPTIONS: dict[str, type | tuple[str, ...]] = {
    "format": FORMATS,
    "type_col": str,
    "time_col": str,
    "time_unit": TIME_UNITS,
    "time_format": str,
    "null_values": str,
    "schema": str,
    "header": bool,
    "columns": str,
    "sort": bool,
    "chunk_rows": int,
    "on_bad_row": ON_BAD_ROW,
    "max_row_bytes": int,
    "max_delay": str,
    "follow": bool,
}
