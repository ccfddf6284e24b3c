"""One random table, every way cepcli can be given it (issue 25, item 7): the test's own model
of a table, a hypothesis strategy for it, writers of it in every input form, the oracle's
reading of it, and runners that collect cepcli's matches or its error. Used by
``tests/test_input_forms.py``, whose docstring says what is compared.

The model (``Table``): columns ``type,ts,x,y,g``, one row per event.

* ``type``: A-D; ``ts``: integer *ticks* that never decrease, written in one of the time
  forms of ``tests/strategies.py`` (``int`` seconds, ``decimal`` fractional seconds such as
  ``14.067``, ``iso`` ISO-8601 with milliseconds and ``Z``, ``epoch_ms`` with time unit ms).
* ``x``: whole numbers (small ones, and -2^63, 2^63-1, 2^53+1); ``y``: fractional numbers
  (quarters, 0.1, 1e300 and 2^63 as a float); ``g``: text (``p q r``, the empty string, and
  now and then ``NA`` as a word of text). Each attribute column holds at least one present
  value (a column of nothing but missing values has no kind in a text form and a declared
  one in a typed form, a difference ``tests/test_formats.py`` already pins down), ``y`` at
  least one fraction and ``g`` at least one of ``p q r``.
* A missing cell (``Cell.value is None``) carries how the text forms spell it (``marker``:
  an empty cell, or one of the null markers of ``tests/oracle.NULLS``) and a ``style`` that
  picks the typed forms' own spelling (see below). In ``g`` a missing cell is always an
  empty cell (a marker in a text column is text).
* Now and then one *stray word* (``abc``, ``oops``, ``12abc``) replaces a value of ``x`` or
  ``y``; its column then keeps at least two numbers, so that numbers are most of its
  present values and the word is a bad row wherever the query reads the column.

The same table in each form (what a user holding that table would have):

============  ===========================================================================
form          how it is written
============  ===========================================================================
csv, gz,      the text: numbers as Python writes them (``repr``), a missing cell as its
pipe          marker (``""``: an empty cell), a stray word as itself. **A present empty
              string in g is an empty cell: text cannot say it, so in these forms it is
              missing** (the one place where the forms hold different tables; the
              expected matches are computed from each form's own reading).
jsonl         numbers as JSON numbers (``ts`` in the decimal form as its decimal text),
              ISO times as strings; a missing value by ``style``: 0 ``null``, 1-2 the
              marker as a JSON string (``"n/a"``, ``"NaN"``, ``""``), 3 the key left out
              (in ``g``: ``null`` or left out); a stray word as a JSON string.
parquet,      typed columns: ``x`` int64, ``y`` float64 (missing: null, or NaN when
arrow         ``style`` is odd) or, when every present y is a quarter and the table says so,
              decimal128(10, 2) (a decimal a user of Parquet would have); ``g`` string
              (``""`` present, null missing); ``ts`` int64, decimal128(18, 3) or float64
              (decimal form), timestamp (Parquet: ms, UTC; Arrow: ns without a zone, i.e.
              UTC) for ISO times. **A column holding a stray word is a string column**
              (an int64 or float64 column cannot hold a word; a user converting the CSV
              gets a string column): the CSV's text of each cell, an empty cell as null.
              In these two forms the declared type fixes the kind, so that column *is*
              text (no bad row, ``'2' < '10'`` is false): the same table as the CSV read
              with ``schema={column: "str"}``, and that is what they are held to (the
              oracle on rows whose column holds that text; a query error, such as text
              compared with a number, the same as the CSV's with that schema).
frame         pandas: ``x`` nullable ``Int64`` (``pd.NA``) or ``object`` (Python ints, a
              missing value by ``style``: 0 None, 1 NaN, 2 the marker text, 3 ``pd.NA``);
              a marker text or a stray word makes the column ``object``; ``y`` float64
              (NaN) or ``object`` likewise; ``g`` ``object`` (None / NaN / pd.NA) or
              ``string`` (pd.NA); ``ts`` int64, float64 (decimal form) or
              ``datetime64[ns, UTC]``.
arrow table   as Parquet (in memory).
============  ===========================================================================

The oracle (``tests/oracle.py``) reads CSV text itself (``read_rows``) and types a column
with a stray word as text, so it cannot say what a bad row is; and it cannot hold a present
empty string. ``oracle_on_rows`` therefore runs the oracle's own branch enumeration
(``oracle._branch_matches``, the same code ``oracle.oracle`` runs) on rows built from the
model (``Table.rows``) for each reading (``text`` or ``typed``); ``test_input_forms`` checks
that the ``text`` rows equal ``oracle.read_rows`` of the CSV wherever the oracle can read it
(no stray word), so the two readings differ from the oracle's only where it cannot express
the case.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import assume
from hypothesis import strategies as st

import cepcli
from cepcli.engines import compile_pattern
from cepcli.errors import CepError
from tests import oracle as o
from tests.oracle import MatchKey
from tests.strategies import (
    MAX_COST,
    TIME_FORMS,
    WINDOWS,
    Leaf,
    Node,
    Pattern,
    leaves,
    oracle_cost,
    patterns,
    time_text,
    time_unit,
)

COLUMNS = ("type", "ts", "x", "y", "g")
TYPES = "ABCD"
SMALL_INTS = (0, 1, 2, 3, 4, -1)
EXTREME_INTS = (-(2**63), 2**63 - 1, 2**53 + 1)
QUARTERS = (0.5, 1.5, 2.5, 3.25, -0.75, 4.75)
ODD_FLOATS = (1e300, 9.223372036854775808e18, 0.1)  # 2^63 as a float: next to 2^63 - 1
TEXTS = ("p", "q", "r")
STRAY_WORDS = ("abc", "oops", "12abc")
MARKERS = tuple(sorted(o.NULLS))  # "" (an empty cell) and the null markers
TEXT_FORMS = ("csv", "gz", "pipe")
TYPED_FORMS = ("jsonl", "parquet", "arrow", "frame")
DECLARED_FORMS = ("parquet", "arrow")  # a column's declared type fixes its kind


# --- the model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One attribute value: present (``value``), missing (``value is None``; ``marker`` is how
    a text form writes it, ``style`` picks a typed form's spelling), or a stray word."""

    value: int | float | str | None
    marker: str = ""
    style: int = 0
    stray: bool = False

    def __repr__(self) -> str:
        if self.stray:
            return f"stray({self.value!r})"
        if self.value is None:
            return f"missing({self.marker!r}, {self.style})"
        return repr(self.value)


@dataclass(frozen=True)
class Styles:
    """How the typed forms write the columns (drawn per table)."""

    frame_x: str = "Int64"  # or "object"
    frame_y: str = "float64"  # or "object"
    frame_g: str = "object"  # or "string"
    decimal_y: bool = False  # Parquet/Arrow y as decimal128(10, 2) when every present y is a quarter
    decimal_ts: str = "decimal"  # the decimal time form in Parquet/Arrow: "decimal" or "float"


@dataclass(frozen=True)
class Table:
    ticks: tuple[int, ...]
    types: tuple[str, ...]
    x: tuple[Cell, ...]
    y: tuple[Cell, ...]
    g: tuple[Cell, ...]
    time_form: str = "int"
    start: int = 0
    styles: Styles = field(default_factory=Styles)

    def __len__(self) -> int:
        return len(self.ticks)

    def column(self, name: str) -> tuple[Cell, ...]:
        return {"x": self.x, "y": self.y, "g": self.g}[name]

    @property
    def unit(self) -> str:
        return time_unit(self.time_form)

    def times(self) -> list[str]:
        return [time_text(t, self.time_form, self.start) for t in self.ticks]

    def stray(self) -> tuple[int, str, str] | None:
        """(row, column, word) of the stray word, if there is one."""
        for name in ("x", "y"):
            for i, cell in enumerate(self.column(name)):
                if cell.stray:
                    return i, name, str(cell.value)
        return None

    def first_present(self, name: str, reading: str = "text") -> Cell | None:
        for cell in self.column(name):
            if cell.value is not None and not (reading == "text" and cell.value == ""):
                return cell
        return None

    def rows(self, reading: str, text_column: str | None = None) -> list[o.Row]:
        """The rows as the oracle holds them (``_row``, ``_ts`` and typed values), for the
        ``text`` reading (CSV: a present empty string is an empty cell, i.e. missing) or the
        ``typed`` one (JSON, Parquet, Arrow, DataFrame: it is the empty string).
        ``text_column``: a column read as text (its CSV text; an empty cell missing)."""
        unit = o.UNITS[self.unit]
        out = []
        for i, stamp in enumerate(self.times()):
            row: o.Row = {"_row": i, "type": self.types[i], "ts": stamp, "_ts": o.nanoseconds(stamp, unit)}
            for name in ("x", "y", "g"):
                cell = self.column(name)[i]
                if name == text_column:
                    row[name] = cell_text(cell) or None
                else:
                    row[name] = None if (cell.value == "" and reading == "text") else cell.value
            out.append(row)
        return out

    def __str__(self) -> str:
        lines = [f"time form {self.time_form} (start {self.start}), {self.styles}"]
        for i, stamp in enumerate(self.times()):
            lines.append(f"  {i}: {self.types[i]} {stamp} x={self.x[i]!r} y={self.y[i]!r} g={self.g[i]!r}")
        return "\n".join(lines)


# --- the strategy -----------------------------------------------------------------------------------


def _missing(draw: st.DrawFn, text_column: bool) -> Cell:
    if text_column:
        return Cell(None, "", draw(st.integers(0, 3)))
    marker = draw(st.sampled_from(("", "", "", *[m for m in MARKERS if m])))
    return Cell(None, marker, draw(st.integers(0, 3)))


@st.composite
def _cell(draw: st.DrawFn, values: tuple[Any, ...], missing: int, text_column: bool = False) -> Cell:
    """A present value (shrinks to it) or, ``missing`` times in 100, a missing one."""
    if draw(st.integers(0, 99)) >= 100 - missing:
        return _missing(draw, text_column)
    return Cell(draw(st.sampled_from(values)))


def _set(cells: list[Cell], at: int, cell: Cell) -> None:
    cells[at] = cell


@st.composite
def tables(
    draw: st.DrawFn,
    types: str = TYPES,
    time_form: str | None = None,
    stray: bool = True,
    min_size: int = 3,
    max_size: int = 10,
) -> Table:
    """A random table (see the module). ``types``: the pool of event types (repeat a letter
    to make it more frequent); ``stray``: whether a stray word may occur."""
    form = time_form or draw(st.sampled_from(TIME_FORMS))
    n = draw(st.integers(min_size, max_size))
    missing = draw(st.sampled_from([25, 25, 0, 50]))
    ticks, tick = [], 0
    for _ in range(n):
        tick += draw(st.sampled_from([0, 0, 1, 1, 1, 2, 3]))
        ticks.append(tick)
    kinds = tuple(draw(st.sampled_from(types)) for _ in range(n))
    ints = SMALL_INTS * 3 + EXTREME_INTS
    floats = QUARTERS * 2 + ODD_FLOATS
    texts = TEXTS * 3 + ("", "", "NA")
    x = [draw(_cell(ints, missing)) for _ in range(n)]
    y = [draw(_cell(floats, missing)) for _ in range(n)]
    g = [draw(_cell(texts, missing, text_column=True)) for _ in range(n)]
    # every column holds a value (y a fraction, g a word of p q r)
    _set(x, draw(st.integers(0, n - 1)), Cell(draw(st.sampled_from(ints))))
    _set(y, draw(st.integers(0, n - 1)), Cell(draw(st.sampled_from(QUARTERS))))
    _set(g, draw(st.integers(0, n - 1)), Cell(draw(st.sampled_from(TEXTS))))
    if stray and draw(st.integers(0, 3)) == 0:
        column = draw(st.sampled_from(["x", "y"]))
        cells, values = (x, ints) if column == "x" else (y, QUARTERS)
        at = draw(st.integers(0, n - 1))
        others = [i for i in range(n) if i != at]
        for i in draw(st.permutations(others))[:2]:  # two numbers: most present values are numbers
            if cells[i].value is None:
                cells[i] = Cell(draw(st.sampled_from(values)))
        cells[at] = Cell(draw(st.sampled_from(STRAY_WORDS)), stray=True)
    styles = Styles(
        frame_x=draw(st.sampled_from(["Int64", "object"])),
        frame_y=draw(st.sampled_from(["float64", "object"])),
        frame_g=draw(st.sampled_from(["object", "string"])),
        decimal_y=draw(st.booleans()),
        decimal_ts=draw(st.sampled_from(["decimal", "float"])),
    )
    return Table(tuple(ticks), kinds, tuple(x), tuple(y), tuple(g), form, draw(st.integers(0, 2)), styles)


# Queries that read the attribute columns, besides the random ones of tests/strategies.py:
# comparisons between variables and with constants, ``=`` on the text column (empty strings
# and missing values), the int64 extremes, an int against a float, arithmetic past int64.
# (text, has a negation); ``{w}``: the window.
FIXED_QUERIES = (
    ("PATTERN SEQ(A a, B b) WHERE a.g = b.g WITHIN {w}", False),
    ("PATTERN SEQ(A a, B b) WHERE a.g = '' WITHIN {w}", False),
    ("PATTERN AND(A a, B b) WHERE a.x = b.x AND a.g != b.g WITHIN {w}", False),
    ("PATTERN SEQ(A a, B b) WHERE a.x < b.x AND a.y >= b.y WITHIN {w}", False),
    ("PATTERN SEQ(A a, B b) WHERE a.x - b.x > 0 OR a.y = b.x WITHIN {w}", False),
    ("PATTERN A a WHERE a.x >= 9223372036854775807 OR a.x <= -9223372036854775808 WITHIN {w}", False),
    ("PATTERN SEQ(A a, B b) WHERE a.y != b.x AND a.y > 1 WITHIN {w}", False),
    ("PATTERN SEQ(A a, NOT C c, B b) WHERE c.x > a.x WITHIN {w}", True),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].y < a.y AND [g] WITHIN {w}", False),
    ("PATTERN SEQ(A a, B b) WHERE a.g <> b.g OR a.y * 2 = b.y WITHIN {w}", False),
)


@dataclass(frozen=True)
class Case:
    """A query, a table, and how to run it."""

    query: str
    negation: bool  # the pattern has a negation (a match may wait for its window)
    table: Table
    chunk_rows: int = 65_536

    def reads(self, column: str) -> bool:
        return re.search(rf"\.{column}\b|\[{column}\]", self.query) is not None

    def bad_row(self) -> tuple[int, str, str] | None:
        """The stray word, when the query reads its column (then its row is a bad row)."""
        stray = self.table.stray()
        return stray if stray is not None and self.reads(stray[1]) else None

    def __str__(self) -> str:
        size = f"{len(self.table)} rows, chunk_rows {self.chunk_rows}"
        return f"query:\n{self.query}\ntable ({size}):\n{self.table}"


@st.composite
def cases(draw: st.DrawFn, stray: bool = True) -> Case:
    form = draw(st.sampled_from(TIME_FORMS))
    if draw(st.integers(0, 2)) == 0:
        text, negation = draw(st.sampled_from(FIXED_QUERIES))
        query = text.format(w=draw(st.sampled_from(WINDOWS[form])))
        used = "AB"
    else:
        pattern: Pattern = draw(patterns(time_form=form))
        query, negation = pattern.text, any(v.kind == "neg" for v in leaves(pattern.tree))
        used = "".join(sorted({v.type for v in leaves(pattern.tree)}))
    table = draw(tables(types=used * 3 + TYPES, time_form=form, stray=stray))
    assume(oracle_cost(_cost_pattern(query), csv_text(table)) <= MAX_COST)
    return Case(query, negation, table, draw(st.sampled_from([1, 2, 65_536])))


@dataclass(frozen=True)
class _Parsed:
    """Enough of a strategies.Pattern for ``oracle_cost``: the leaves of each DNF branch."""

    tree: Any


def _cost_pattern(query: str) -> Any:
    """``strategies.oracle_cost`` wants a ``Pattern``; build the tree of leaves from cepcli's
    DNF branches instead (any query)."""
    _, pattern = compile_pattern(query)
    branches = []
    for branch in pattern.branches:
        items = [Leaf("kleene" if v.kleene else "prim", v.type, v.name, v.lo, v.hi) for v in branch.positives]
        branches.append(Node("SEQ", tuple(items)) if len(items) > 1 else items[0])
    tree = Node("OR", tuple(branches)) if len(branches) > 1 else branches[0]
    return _Parsed(tree)


# --- the oracle on the model ------------------------------------------------------------------------


def oracle_on_rows(query: str, rows: list[o.Row], unit: str = "s") -> set[MatchKey]:
    """``oracle.oracle`` on rows given as the oracle holds them (not read from CSV text)."""
    units = o.UNITS[unit]
    _, pattern = compile_pattern(query, time_unit=units)
    found: set[MatchKey] = set()
    for branch in pattern.branches:
        found |= o._branch_matches(branch, rows, pattern.window, "type", "ts", units)
    return found


# --- writers ------------------------------------------------------------------------------------------


def cell_text(cell: Cell) -> str:
    if cell.value is None:
        return cell.marker
    if isinstance(cell.value, float):
        return repr(cell.value)
    return str(cell.value)


def csv_text(table: Table) -> str:
    lines = [",".join(COLUMNS)]
    for i, stamp in enumerate(table.times()):
        lines.append(",".join([table.types[i], stamp, *(cell_text(table.column(c)[i]) for c in "xyg")]))
    return "\n".join(lines) + "\n"


def jsonl_text(table: Table) -> str:
    lines = []
    for i, stamp in enumerate(table.times()):
        ts = json.dumps(stamp) if table.time_form == "iso" else stamp  # else a number, as the CSV has it
        parts = [f'"type": {json.dumps(table.types[i])}', f'"ts": {ts}']
        for name in "xyg":
            cell = table.column(name)[i]
            if cell.value is not None:
                parts.append(f'"{name}": {json.dumps(cell.value)}')
            elif cell.style == 3:
                continue  # the key left out
            elif cell.style == 0 or name == "g":
                parts.append(f'"{name}": null')
            else:
                parts.append(f'"{name}": {json.dumps(cell.marker)}')
        lines.append("{" + ", ".join(parts) + "}")
    return "\n".join(lines) + "\n"


def _ns(table: Table) -> list[int]:
    unit = o.UNITS[table.unit]
    return [o.nanoseconds(t, unit) for t in table.times()]


def arrow_table(table: Table, flavour: str = "parquet") -> pa.Table:
    """The table as typed Arrow columns (``flavour``: ``parquet`` or ``arrow``, which differ in
    how an ISO time is stored)."""
    stray = table.stray()
    stray_column = stray[1] if stray else None
    form = table.time_form
    if form in ("int", "epoch_ms"):
        ts = pa.array([int(t) for t in table.times()], pa.int64())
    elif form == "decimal":
        if table.styles.decimal_ts == "decimal":
            ts = pa.array([Decimal(t) for t in table.times()], pa.decimal128(18, 3))
        else:
            ts = pa.array([float(t) for t in table.times()], pa.float64())
    else:
        nanos = pa.array(_ns(table), pa.int64())
        if flavour == "parquet":
            ts = pc.divide(nanos, 10**6).cast(pa.timestamp("ms", tz="UTC"))
        else:
            ts = nanos.cast(pa.timestamp("ns"))
    columns: dict[str, pa.Array] = {"type": pa.array(table.types, pa.string()), "ts": ts}
    for name in "xy":
        cells = table.column(name)
        if name == stray_column:  # the CSV's text, an empty cell null
            columns[name] = pa.array([cell_text(c) or None for c in cells], pa.string())
        elif name == "x":
            columns[name] = pa.array([c.value for c in cells], pa.int64())
        elif table.styles.decimal_y and all(c.value in QUARTERS for c in cells if c.value is not None):
            columns[name] = pa.array(
                [None if c.value is None else Decimal(repr(c.value)) for c in cells], pa.decimal128(10, 2)
            )
        else:
            values = [
                c.value if c.value is not None else (float("nan") if c.style % 2 else None) for c in cells
            ]
            columns[name] = pa.array(values, pa.float64(), from_pandas=False)
    columns["g"] = pa.array([c.value for c in table.g], pa.string())
    return pa.table(columns)


_FRAME_MISSING = (lambda c: None, lambda c: float("nan"), lambda c: c.marker, lambda c: pd.NA)


def data_frame(table: Table) -> pd.DataFrame:
    form = table.time_form
    frame: dict[str, Any] = {"type": pd.Series(table.types, dtype=object)}
    if form in ("int", "epoch_ms"):
        frame["ts"] = pd.Series([int(t) for t in table.times()], dtype="int64")
    elif form == "decimal":
        frame["ts"] = pd.Series([float(t) for t in table.times()], dtype="float64")
    else:
        frame["ts"] = pd.Series(pd.to_datetime(_ns(table), unit="ns", utc=True))
    for name, how in (("x", table.styles.frame_x), ("y", table.styles.frame_y)):
        cells = table.column(name)
        as_object = how == "object" or any(c.stray or (c.value is None and c.style == 2) for c in cells)
        if as_object:
            values = [c.value if c.value is not None else _FRAME_MISSING[c.style](c) for c in cells]
            frame[name] = pd.Series(values, dtype=object)
        elif name == "x":
            frame[name] = pd.Series(pd.array([c.value for c in cells], dtype="Int64"))
        else:
            frame[name] = pd.Series(
                [float("nan") if c.value is None else c.value for c in cells], dtype="float64"
            )
    if table.styles.frame_g == "string":
        frame["g"] = pd.Series(pd.array([c.value for c in table.g], dtype="string"))
    else:
        missing_g = (lambda c: None, lambda c: float("nan"), lambda c: None, lambda c: pd.NA)
        frame["g"] = pd.Series(
            [c.value if c.value is not None else missing_g[c.style](c) for c in table.g], dtype=object
        )
    return pd.DataFrame(frame)


def write(table: Table, form: str, where: Path) -> object:
    """The table in ``form``: a path, or a DataFrame or Arrow table (``pipe``: the CSV bytes)."""
    where.mkdir(parents=True, exist_ok=True)
    if form == "csv":
        path = where / "events.csv"
        path.write_text(csv_text(table))
        return str(path)
    if form == "gz":
        path = where / "events.csv.gz"
        path.write_bytes(gzip.compress(csv_text(table).encode()))
        return str(path)
    if form == "pipe":
        return csv_text(table).encode()
    if form == "jsonl":
        path = where / "events.jsonl"
        path.write_text(jsonl_text(table))
        return str(path)
    if form == "parquet":
        path = where / "events.parquet"
        pq.write_table(arrow_table(table, "parquet"), path)
        return str(path)
    if form == "arrow":
        return arrow_table(table, "arrow")
    if form == "frame":
        return data_frame(table)
    raise ValueError(form)


def reading(form: str) -> str:
    return "text" if form in TEXT_FORMS else "typed"


# --- running cepcli ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a run gave: its matches (before the error, if any), the error after its file-name
    prefix, and the bad rows counted."""

    keys: frozenset[MatchKey]
    error: str | None = None
    bad_rows: int | None = None
    raw_error: str | None = None

    def show(self) -> str:
        keys = sorted(str(dict(sorted(k))) for k in self.keys)
        text = f"{len(keys)} matches {keys[:6]}{' ...' if len(keys) > 6 else ''}"
        if self.error is not None:
            text += f", then error {self.error!r}"
        if self.bad_rows is not None:
            text += f", bad_rows {self.bad_rows}"
        return text


def after_name(message: str) -> str:
    """An error without its file-name prefix (``events.csv: row 3: ...`` -> ``row 3: ...``;
    ``<data>``, ``<stdin>`` and paths alike)."""
    found = re.search(r"(?:^|: )(row \d+: .*)", message, re.S)
    if found:
        return found.group(1)
    return re.sub(r"^(<data>|<stdin>|<input>|\S+\.(csv|gz|jsonl|parquet)): ", "", message)


def run_find(
    query: str,
    data: object,
    engine: str,
    unit: str = "s",
    on_bad_row: str = "fail",
    chunk_rows: int = 65_536,
    schema: dict[str, str] | None = None,
) -> Outcome:
    keys: set[MatchKey] = set()
    found = None
    try:
        found = cepcli.find(
            query,
            data,
            engine=engine,
            type_col="type",
            time_col="ts",
            time_unit=unit,
            on_bad_row=on_bad_row,
            chunk_rows=chunk_rows,
            schema=schema,
        )
        for match in found.raw():
            key = frozenset(match.key)
            assert key not in keys, f"{engine} reported {sorted(key)} twice"
            keys.add(key)
    except CepError as err:
        text = str(err)
        return Outcome(frozenset(keys), after_name(text), None, text)
    except Exception as err:  # noqa: BLE001 - a crash is an outcome too (never the right one)
        text = f"internal error: {type(err).__name__}: {err}"
        return Outcome(frozenset(keys), text, None, text)
    return Outcome(frozenset(keys), None, found.stats.bad_rows)


def keys_of_jsonl(text: str) -> set[MatchKey]:
    out: set[MatchKey] = set()
    for line in text.splitlines():
        if not line.strip():
            continue
        match = json.loads(line)
        out.add(
            frozenset(
                (name, tuple(e["_row"] for e in value) if isinstance(value, list) else (value["_row"],))
                for name, value in match.items()
            )
        )
    return out


def cli(
    args: list[str], stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """``cepcli ARGS`` as a process of its own; ``stdin`` goes through a real pipe."""
    return subprocess.run(
        [sys.executable, "-m", "cepcli", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=timeout,
    )


def error_lines(stderr: str) -> list[str]:
    return [
        line.removeprefix("cepcli: error: ")
        for line in stderr.splitlines()
        if line.startswith("cepcli: error:")
    ]


def run_pipe(
    query: str, data: bytes, engine: str, unit: str = "s", on_bad_row: str = "fail", where: Path | None = None
) -> Outcome:
    """The CSV bytes through a pipe into ``cepcli run -i -``."""
    stats_args: list[str] = []
    stats_path = None
    if where is not None:
        stats_path = where / f"stats-{engine}-{on_bad_row}.json"
        stats_args = ["--stats-json", str(stats_path)]
    done = cli(
        [
            "run",
            "-e",
            query,
            "-i",
            "-",
            "--format",
            "jsonl",
            "--engine",
            engine,
            "--type-col",
            "type",
            "--time-col",
            "ts",
            "--time-unit",
            unit,
            "--on-bad-row",
            on_bad_row,
            "--quiet",
            *stats_args,
        ],
        data,
    )
    stderr = done.stderr.decode(errors="replace")
    assert "Traceback" not in stderr, stderr
    complete = done.stdout.decode().rsplit("\n", 1)[0] if b"\n" in done.stdout else ""
    keys = keys_of_jsonl(complete)
    errors = error_lines(stderr)
    if done.returncode != 0:
        text = errors[0] if errors else f"exit {done.returncode}: {stderr.strip()[-300:]}"
        return Outcome(frozenset(keys), after_name(text), None, text)
    bad = None
    if stats_path is not None and stats_path.exists():
        bad = json.loads(stats_path.read_text()).get("bad_rows")
    return Outcome(frozenset(keys), None, bad)


def run_pipes(
    query: str,
    data: bytes,
    engines: list[str],
    unit: str = "s",
    on_bad_row: str = "fail",
    where: Path | None = None,
    parallel: int = 2,
) -> dict[str, Outcome]:
    """``run_pipe`` for each engine, ``parallel`` processes at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {e: pool.submit(run_pipe, query, data, e, unit, on_bad_row, where) for e in engines}
        return {e: f.result() for e, f in futures.items()}


def short(error: str | None) -> str | None:
    """An error up to where it says where the column's kind came from (which differs between a
    pipe, typed by its first values, and a file, typed by a sample)."""
    return None if error is None else error.split(" (the column's kind")[0]
