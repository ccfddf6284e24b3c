"""How to read one input (docs/input.md), whatever its format."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral
from typing import Any

from cepcli.clock import TIME_UNITS, UNITS
from cepcli.errors import InputError, UsageError, flag
from cepcli.events import Kind
from cepcli.query import ast as a
from cepcli.query.options import FORMATS, ON_BAD_ROW

CHUNK_ROWS = 65_536
MAX_ROW_BYTES = 16 << 20  # a longer row is a bad row, read past without being held
MAX_COLUMNS = 10_000  # a wider input is refused: each column costs its sample, kind and values
LONGEST_DELAY = 2**63 - 1  # nanoseconds: a --max-delay beyond it is refused
# The compressions a file's name says, each suffix to its codec (the one home of the rule:
# the readers, the format a name gives, and Spark's splits all look here)
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".zstd": "zstd", ".lz4": "lz4", ".br": "brotli"}
COMPRESSED = tuple(COMPRESSIONS)


@dataclass(frozen=True, slots=True)
class InputOptions:
    """``path`` is a file, ``-`` for standard input, or None before the command line has
    resolved it (the query's ``FROM``). ``time_unit`` None means seconds, not given (then
    numbers that look like compact dates get a warning). ``null_values`` None means the
    default markers (``text.DEFAULT_NULLS``). ``row_col`` takes the row ids from a column.
    ``split`` reads one part of a file, as a Spark worker does: bytes ``start:stop`` of a CSV
    or JSON-lines file (whole records, without the header) or row groups ``start:stop`` of a
    Parquet file, whose first data row has the given row id (``start`` < 0: the whole file,
    its rows numbered from that id)."""

    path: str | None = "-"
    format: str | None = None
    type_col: str = "type"
    time_col: str = "ts"
    time_format: str | None = None
    time_unit: str | None = None
    header: bool = True
    columns: tuple[str, ...] | None = None
    sort: bool = False
    chunk_rows: int = CHUNK_ROWS
    on_bad_row: str = "fail"
    max_row_bytes: int | None = None
    null_values: tuple[str, ...] | None = None
    schema: tuple[tuple[str, Kind], ...] = ()
    row_col: str | None = None
    split: tuple[int, int, int] | None = None  # (start, stop, first row id): a part of a file
    max_delay: str | None = None  # rows may come this much later than the latest (``5 min``)
    follow: bool = False  # a file another process appends to, read as it grows (``tail -f``)
    # Parquet: read only these columns from the first row group on (a Spark split's), the
    # others nulls until ``fetch`` reads them (``ParquetReader.project``)
    only: tuple[str, ...] | None = None

    @property
    def unit(self) -> int:
        """Nanoseconds per time unit."""
        if self.time_unit is not None and self.time_unit not in UNITS:
            raise UsageError(
                f"{flag('time-unit')} is one of {', '.join(TIME_UNITS)} (got {self.time_unit!r})"
            )
        return UNITS[self.time_unit or "s"]

    @property
    def delay(self) -> int | None:
        """``max_delay`` in nanoseconds (a bare number is in time units), at most what int64
        nanoseconds hold (a longer one is a usage error)."""
        if self.max_delay is None:
            return None
        ns = duration_ns(self.max_delay, self.unit, flag("max-delay"))
        if ns > LONGEST_DELAY:
            raise UsageError(
                f"{flag('max-delay')}: {self.max_delay!r} is longer than the longest delay,"
                f" {LONGEST_DELAY // (86_400 * 10**9)} days (int64 nanoseconds)"
            )
        return ns

    @property
    def row_limit(self) -> int:
        return self.max_row_bytes or MAX_ROW_BYTES

    def check(self) -> None:
        """Option combinations that cannot work, as usage errors."""
        if not self.header and not self.columns:
            raise UsageError(f"{flag('no-header')} needs {flag('columns')} c1,c2,... to name the columns")
        if self.header and self.columns:
            raise UsageError(
                f"{flag('columns')} names the columns of a headerless file: add {flag('no-header')}"
            )
        if self.columns and len(set(self.columns)) != len(self.columns):
            twice = sorted({c for c in self.columns if self.columns.count(c) > 1})
            raise UsageError(f"{flag('columns')} names a column twice ({', '.join(twice)})")
        if self.on_bad_row not in ON_BAD_ROW:
            raise UsageError(f"{flag('on-bad-row')} is one of {', '.join(ON_BAD_ROW)}")
        _ = self.unit  # (a --time-unit that is none of the units says so)
        rows = self.chunk_rows
        if isinstance(rows, bool) or not isinstance(rows, Integral) or rows < 1:
            raise UsageError(f"{flag('chunk-rows')} is a number of rows, 1 or more (got {self.chunk_rows!r})")
        if self.format is not None and self.format not in FORMATS:
            raise UsageError(f"{flag('input-format')} is one of {', '.join(FORMATS)}")
        if self.time_format is not None and self.time_unit is not None:
            raise UsageError(
                f"{flag('time-format')} reads text dates; {flag('time-unit')} reads numbers: give one of them"
            )
        if self.follow:
            if self.path == "-" or self.sort:
                said = flag("sort") if self.sort else "standard input (a pipe is read as it comes)"
                raise UsageError(f"{flag('follow')} reads a file as it grows, not with {said}")
            plain = self.path is None or not self.path.lower().endswith(COMPRESSED)
            if not plain or (self.path is not None and format_of(self.path, self.format) == "parquet"):
                raise UsageError(f"{flag('follow')} reads a plain CSV or JSON-lines file as it grows")
        if self.max_delay is not None:
            _ = self.delay
            if self.sort:
                raise UsageError(
                    f"{flag('sort')} sorts the whole input; {flag('max-delay')} reorders rows up to a"
                    " bound: give one of them"
                )


def from_text(field: str, text: str) -> Any:
    """An input option written as text (a flag, or the query's ``WITH``) as ``InputOptions``
    holds it: ``columns`` and ``null_values`` are comma lists, ``schema`` col:kind pairs."""
    if field == "columns":
        return tuple(c.strip() for c in text.split(","))
    if field == "null_values":
        return tuple(text.split(","))
    if field == "schema":
        from cepcli.sources.kinds import parse_schema

        return parse_schema(text)
    return text


_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([A-Za-z]*)\s*")


def duration_ns(text: str, unit: int, what: str) -> int:
    """A length of time written as a window is (``5 min``, ``30s``, ``1.5 h``; a bare number
    in time units) in nanoseconds, exactly; zero allowed."""
    found = _DURATION.fullmatch(str(text))
    name = found.group(2).lower() if found else ""
    if found is None or (name and name not in a.UNIT_ALIASES):
        raise UsageError(f"{what}: {text!r} is not a length of time (such as 5 min, 30 s, 1.5 h)")
    per_unit = a.UNIT_NANOSECONDS[a.UNIT_ALIASES[name]] if name else unit
    return math.floor(Fraction(found.group(1)) * per_unit)


def input_name(path: str | None) -> str:
    """How messages name an input: its path, or ``<stdin>`` for standard input."""
    return "<stdin>" if path in ("-", None) else str(path)


def format_of(path: str, given: str | None) -> str:
    """The input format: ``--input-format``, else from the file name (``.parquet``,
    ``.jsonl``/``.ndjson``, a compression suffix looked through), else CSV."""
    if given is not None:
        return given
    name = path.lower()
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix)
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    return "csv"


def check_width(columns: int, name: str, what: str = "the input has") -> None:
    """Refuse an input of more than ``MAX_COLUMNS`` columns, naming the file and the count."""
    if columns > MAX_COLUMNS:
        raise InputError(
            f"{what} {columns:,} columns, more than the limit of {MAX_COLUMNS:,}:"
            " keep only the columns the query needs",
            filename=name,
        )
