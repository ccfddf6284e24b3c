"""Every Arrow type a Parquet file, an Arrow table or a DataFrame can hold is read, exactly,
or passed through (issue 25): decimals compare exactly, uint64 beyond int64 stays exact,
timestamps at any unit keep their nanoseconds, durations are lengths of time in the query's
time unit, bytes and times of day are text, and nested columns (struct, list, map) are
printed as JSON and refused, with one line naming the column, by a condition.

Each case runs on Parquet (through the CLI: a real process, so without pandas) and on the
Arrow table (``cepcli.find``), with every engine, and both must give the expected rows.
"""

from __future__ import annotations

import csv as csv_module
import io
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cepcli
from cepcli.engines import ENGINES
from cepcli.errors import QueryError

D = Decimal
BIG = 2**63


def _table(values: pa.Array, ts: pa.Array | None = None) -> pa.Table:
    """Four events A B A B at times 1..4, with ``values`` as column ``v``."""
    return pa.table(
        {
            "type": ["A", "B", "A", "B"],
            "ts": ts if ts is not None else pa.array([1, 2, 3, 4], pa.int64()),
            "v": values,
        }
    )


def _rows(table: pa.Table, query: str, engine: str, **options: object) -> set[tuple[int, int]]:
    return {(m["a"]["_row"], m["b"]["_row"]) for m in cepcli.find(query, table, engine=engine, **options)}


def _cli(tmp_path: Path, table: pa.Table, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    return subprocess.run(
        [sys.executable, "-c", "from cepcli.cli import main; main()", "run", *args, "-i", str(path), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )


CASES = [
    # (name, column, query condition, expected (a row, b row) pairs)
    (
        "decimals that a float cannot tell apart",
        pa.array([D("12345678901234567890.1"), D("12345678901234567890.2")] * 2, pa.decimal128(22, 1)),
        "a.v < b.v",
        {(0, 1), (0, 3), (2, 3)},
    ),
    (
        "a decimal against a literal, exactly",
        pa.array([D("0.1"), D("0.3"), D("0.2"), D("0.30")], pa.decimal128(5, 2)),
        "a.v + 0.2 = b.v",
        {(0, 1), (0, 3)},
    ),
    (
        "decimal256",
        pa.array([D("1" * 40 + ".5"), D("1" * 40 + ".6"), D("1"), D("1" * 40 + ".5")], pa.decimal256(45, 1)),
        "b.v - a.v = 0.1",
        {(0, 1)},
    ),
    (
        "uint64 beyond int64",
        pa.array([BIG + 5, BIG + 1, BIG + 1, BIG + 2], pa.uint64()),
        "a.v > b.v AND a.v - b.v < 4",
        {(0, 3)},
    ),
    (
        "float32 widened exactly",
        pa.array([0.5, 0.25, 1.5, 2.5], pa.float32()),
        "a.v > b.v",
        {(0, 1)},
    ),
    (
        "durations in the time unit",
        pa.array([1_500, 3_000, 500, 2_000], pa.duration("ms")),
        "b.v - a.v = 1.5",
        {(0, 1), (2, 3)},
    ),
    (
        "durations against the events' own times",
        pa.array([10**9, 10**9, 2 * 10**9, 0], pa.duration("ns")),
        "b.ts - a.ts = a.v",
        {(0, 1)},
    ),
    (
        "bytes read as UTF-8 text",
        pa.array([b"gate", b"gate", b"\xff", b"\xff"], pa.binary()),
        "a.v = b.v",
        {(0, 1), (2, 3)},
    ),
    (
        "times of day as text",
        pa.array([3600 * 10**9 + 5, 3600 * 10**9 + 5, 1, 2], pa.time64("ns")),
        "a.v = b.v",
        {(0, 1)},
    ),
    (
        "a dictionary of text",
        pa.array(["x", "x", "y", "x"]).dictionary_encode(),
        "a.v = b.v",
        {(0, 1), (0, 3)},
    ),
]


@pytest.mark.parametrize("name,column,condition,expected", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("engine", list(ENGINES))
def test_each_type_compares_exactly(
    name: str, column: pa.Array, condition: str, expected: set[tuple[int, int]], engine: str
) -> None:
    query = f"PATTERN SEQ(A a, B b) WHERE {condition} WITHIN 5"
    assert _rows(_table(column), query, engine) == expected


@pytest.mark.parametrize("name,column,condition,expected", CASES, ids=[c[0] for c in CASES])
def test_each_type_through_parquet_and_the_cli(
    tmp_path: Path, name: str, column: pa.Array, condition: str, expected: set[tuple[int, int]]
) -> None:
    query = f"PATTERN SEQ(A a, B b) WHERE {condition} WITHIN 5"
    done = _cli(tmp_path, _table(column), "-e", query, "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    got = {(o["a"]["_row"], o["b"]["_row"]) for o in map(json.loads, done.stdout.splitlines())}
    assert got == expected


def test_values_print_as_they_are(tmp_path: Path) -> None:
    """jsonl prints each value exactly: a decimal as a JSON number with its digits, uint64
    beyond int64 whole, a duration as ISO-8601, a nanosecond timestamp to the nanosecond,
    an empty string as "" (a null as null), bytes as UTF-8 text, nested values as JSON."""
    table = pa.table(
        {
            "type": ["A", "B"],
            "ts": pa.array([1_000_000_001, 1_000_000_002], pa.timestamp("ns")),
            "dec": pa.array([D("12345678901234567890.10"), None], pa.decimal128(22, 2)),
            "big": pa.array([BIG + 5, 1], pa.uint64()),
            "wait": pa.array([1_500, -1], pa.duration("ms")),
            "text": ["", None],
            "raw": pa.array([b"ok", None]),
            "nest": pa.array([{"x": [1, 2]}, None]),
            "when": pa.array([1, 2], pa.timestamp("ns", tz="UTC")),
        }
    )
    done = _cli(tmp_path, table, "-e", "PATTERN SEQ(A a, B b) WITHIN 1 s", "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert '"dec":12345678901234567890.10' in line  # a number with every digit, not a float
    match = json.loads(line, parse_float=Decimal)
    a, b = match["a"], match["b"]
    assert a["ts"] == "1970-01-01T00:00:01.000000001Z"
    assert a["dec"] == D("12345678901234567890.10") and b["dec"] is None
    assert a["big"] == BIG + 5
    assert a["wait"] == "PT1.5S" and b["wait"] == "-PT0.001S"
    assert a["text"] == "" and b["text"] is None
    assert a["raw"] == "ok" and b["raw"] is None
    assert a["nest"] == {"x": [1, 2]} and b["nest"] is None
    assert a["when"] == "1970-01-01T00:00:00.000000001Z"
    done_csv = _cli(tmp_path, table, "-e", "PATTERN SEQ(A a, B b) WITHIN 1 s", "--format", "csv")
    header, row = csv_module.reader(io.StringIO(done_csv.stdout))
    cells = dict(zip(header, row, strict=True))
    assert cells["a.dec"] == "12345678901234567890.10" and cells["a.wait"] == "PT1.5S"
    assert cells["a.big"] == str(BIG + 5) and cells["a.nest"] == '{"x":[1,2]}'
    assert cells["a.text"] == "" and cells["b.text"] == ""  # csv cannot tell "" from a missing value


def test_a_condition_on_a_nested_column_is_one_line_naming_it() -> None:
    table = _table(pa.array([[1], [2], [], None]))
    with pytest.raises(QueryError, match="column 'v' holds nested values"):
        cepcli.find("PATTERN SEQ(A a, B b) WHERE a.v = b.v WITHIN 5", table)
    got = [m["a"]["v"] for m in cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", table)]
    assert got == [[1], [1], []]  # printed as JSON, and never a reason to fail


def test_an_out_of_range_timestamp_is_a_bad_value_naming_it(tmp_path: Path) -> None:
    """A timestamp[s] beyond 2262 does not fit int64 nanoseconds: a bad row, not a wrap."""
    late = 300 * 365 * 86400  # about 2270
    table = _table(pa.array([1, 2, 3, 4], pa.int64()), pa.array([1, 2, late, late + 1], pa.timestamp("s")))
    done = _cli(tmp_path, table, "-e", "PATTERN SEQ(A a, B b) WITHIN 5", "--format", "jsonl")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and ": row 2: " in done.stderr and "out of range" in done.stderr
    assert [json.loads(x)["b"]["_row"] for x in done.stdout.splitlines()] == [1]  # the rows before it


def test_a_parquet_column_named_row_is_refused_in_one_line(tmp_path: Path) -> None:
    """``_row`` is the name every output gives the row id: a column of that name would be
    overwritten (jsonl) or appear twice (the csv header)."""
    table = _table(pa.array([1, 2, 3, 4])).rename_columns(["type", "ts", "_row"])
    done = _cli(tmp_path, table, "-e", "PATTERN SEQ(A a, B b) WITHIN 5")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().endswith(
        "the input has a column named '_row', the name cepcli's output gives each event's row id: rename it"
    )
    assert done.stderr.count("\n") == 1
