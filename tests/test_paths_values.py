"""Values exact on every path: conditions (the per-event reference and the vectorised
lowering) and outputs (jsonl, csv, ``cepcli.find`` dicts, ``to_arrow``, ``to_pandas``,
Parquet), whatever engine found the match and whatever path made the line.

* ``/`` and ``avg`` of exact numbers are exact (2^53+1 stays 2^53+1); ``sum`` of int64 too.
* A time compared with a literal reads the literal as written (``a.ts = 14.067``).
* A numeric time column keeps its form everywhere: whole numbers as ints, fractional ones as
  exact decimals (a nanosecond apart prints a nanosecond apart); a timestamp stays one.
* A float prints in one form whether or not ``WHERE`` reads its column.
* A decimal wider than Arrow's widest is a clear error naming its column, or written exactly.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import cepcli
from cepcli.cli import cli
from cepcli.engines import ENGINES

BIG = 2**53  # BIG + 1 is no double


def _run(tmp_path: Path, text: str, query: str, *args: str, name: str = "in.csv") -> tuple[str, str, int]:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(cli, ["run", "-e", query, "-i", str(path), "-q", *args])
    return result.stdout, result.stderr, result.exit_code


def _rows(tmp_path: Path, text: str, query: str, engine: str, *args: str) -> list[tuple[int, ...]]:
    out, err, code = _run(tmp_path, text, query, "--format", "jsonl", "--engine", engine, *args)
    assert code == 0, err
    found = []
    for line in out.splitlines():
        match = json.loads(line)
        found.append(tuple(e["_row"] for v in match.values() for e in (v if isinstance(v, list) else [v])))
    return sorted(found)


# 1. division and avg of exact numbers are exact ----------------------------------------------

PAIR = f"type,ts,x\nA,1,{BIG + 1}\nB,2,{BIG}\nA,3,{BIG}\nB,4,7\n"


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize(
    ("condition", "want"),
    [
        (f"a.x / 1 = {BIG + 1}", [(0, 1), (0, 3)]),
        (f"a.x / 1 > {BIG}", [(0, 1), (0, 3)]),
        ("a.x / 1 > b.x / 1", [(0, 1), (0, 3), (2, 3)]),
        (f"a.x / 2 = {BIG // 2}", [(2, 3)]),
        ("b.x / 7 * 7 = b.x", [(0, 1), (0, 3), (2, 3)]),
        ("b.x / 3 = 7 / 3", [(0, 3), (2, 3)]),
        ("b.x / 10 = 0.7", [(0, 3), (2, 3)]),
        ("a.x / 3 > b.x / 3", [(0, 1), (0, 3), (2, 3)]),
    ],
)
def test_division_of_integers_is_exact(
    tmp_path: Path, engine: str, condition: str, want: list[object]
) -> None:
    query = f"PATTERN SEQ(A a, B b) WHERE {condition} WITHIN 10"
    assert _rows(tmp_path, PAIR, query, engine) == want


@pytest.mark.parametrize("engine", list(ENGINES))
def test_avg_and_sum_of_integers_are_exact(tmp_path: Path, engine: str) -> None:
    text = f"type,ts,x\nA,1,{BIG + 1}\nA,2,{BIG + 1}\nB,3,{BIG}\n"
    avg = f"PATTERN SEQ(A+ a[], B b) WHERE avg(a[].x) = {BIG + 1} WITHIN 10"
    assert _rows(tmp_path, text, avg, engine) == [(0, 1, 2), (0, 2), (1, 2)]
    above = "PATTERN SEQ(A+ a[], B b) WHERE avg(a[].x) > b.x WITHIN 10"
    assert _rows(tmp_path, text, above, engine) == [(0, 1, 2), (0, 2), (1, 2)]
    total = f"PATTERN SEQ(A+ a[], B b) WHERE sum(a[].x) = {2 * BIG + 2} WITHIN 10"
    assert _rows(tmp_path, text, total, engine) == [(0, 1, 2)]
    third = "type,ts,x\nA,1,1\nA,2,0\nA,3,0\nB,4,0\n"
    mean = "PATTERN SEQ(A+ a[], B b) WHERE avg(a[].x) = 1 / 3 WITHIN 10"
    assert _rows(tmp_path, third, mean, engine) == [(0, 1, 2, 3)]


@pytest.mark.parametrize("engine", list(ENGINES))
def test_decimal_division_is_exact(tmp_path: Path, engine: str) -> None:
    text = "type,ts,p\nA,1,0.3\nB,2,0.1\n"
    query = "PATTERN SEQ(A a, B b) WHERE a.p / b.p = 3 WITHIN 10"
    assert _rows(tmp_path, text, query, engine, "--schema", "p:decimal") == [(0, 1)]


def test_a_float_column_divides_as_doubles(tmp_path: Path) -> None:
    text = "type,ts,y\nA,1,0.3\nB,2,0.1\n"
    query = "PATTERN SEQ(A a, B b) WHERE a.y / b.y = 2.9999999999999996 WITHIN 10"
    for engine in ENGINES:
        assert _rows(tmp_path, text, query, engine) == [(0, 1)], engine  # 0.3 / 0.1 in doubles


# 2. a time compared with a literal reads it as written --------------------------------------


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize(("unit", "ts", "literal"), [("s", "14.067", "14.067"), ("ms", "14067.3", "14067.3")])
def test_a_time_equals_the_literal_written_as_it(
    tmp_path: Path, engine: str, unit: str, ts: str, literal: str
) -> None:
    text = f"type,ts,x\nA,{ts},1\nB,20000,2\n"
    query = f"PATTERN SEQ(A a, B b) WHERE a.ts = {literal} WITHIN 100000"
    assert _rows(tmp_path, text, query, engine, "--time-unit", unit) == [(0, 1)]
    less = f"PATTERN SEQ(A a, B b) WHERE a.ts < {literal} WITHIN 100000"
    assert _rows(tmp_path, text, less, engine, "--time-unit", unit) == []
    gap = f"PATTERN SEQ(A a, B b) WHERE b.ts - a.ts = 20000 - {literal} WITHIN 100000"
    assert _rows(tmp_path, text, gap, engine, "--time-unit", unit) == [(0, 1)]


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_time_in_iso_text_compares_as_exact_seconds(tmp_path: Path, engine: str) -> None:
    text = "type,ts,x\nA,1970-01-01T00:00:14.067Z,1\nB,1970-01-01T00:00:15Z,2\n"
    query = "PATTERN SEQ(A a, B b) WHERE b.ts - a.ts = 0.933 WITHIN 10"
    assert _rows(tmp_path, text, query, engine) == [(0, 1)]


# 3-4. the time column keeps the input's form, exactly, in every output ---------------------

NANO = "type,ts,x\nA,1700000000.000000001,1\nB,1700000000.000000002,2\nB,1700000001,3\n"
QUERY = "PATTERN SEQ(A a, B b) WITHIN 10"


def _every_form(tmp_path: Path, data: object, engine: str = "adaptive") -> list[list[object]]:
    """The time of each match's a and b in every output: jsonl, csv, find() dicts,
    to_arrow, to_pandas and Parquet (each as a list of [a.ts, b.ts] in match order)."""
    import pyarrow.parquet as pq

    import cepcli

    forms: list[list[object]] = []
    path = data if isinstance(data, Path) else None
    if path is not None:
        for fmt in ("jsonl", "csv"):
            result = CliRunner().invoke(
                cli, ["run", "-e", QUERY, "-i", str(path), "-q", "--engine", engine, "--format", fmt]
            )
            assert result.exit_code == 0, result.stderr
            if fmt == "jsonl":
                lines = [json.loads(x, parse_float=Decimal) for x in result.stdout.splitlines()]
                forms.append([[m["a"]["ts"], m["b"]["ts"]] for m in lines])
            else:
                rows = [r.split(",") for r in result.stdout.splitlines()]
                at, bt = rows[0].index("a.ts"), rows[0].index("b.ts")
                forms.append([[Decimal(r[at]), Decimal(r[bt])] for r in rows[1:]])
        out = tmp_path / "out.parquet"
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "-e",
                QUERY,
                "-i",
                str(path),
                "-q",
                "--engine",
                engine,
                "--format",
                "parquet",
                "-o",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.stderr
        forms.append([[m["a"]["ts"], m["b"]["ts"]] for m in pq.read_table(out).to_pylist()])
    found = cepcli.find(QUERY, data, engine=engine)
    forms.append([[m["a"]["ts"], m["b"]["ts"]] for m in found])
    table = cepcli.find(QUERY, data, engine=engine).to_arrow()
    forms.append([[m["a"]["ts"], m["b"]["ts"]] for m in table.to_pylist()])
    frame = cepcli.find(QUERY, data, engine=engine).to_pandas()
    forms.append([[a, b] for a, b in zip(frame["a.ts"], frame["b.ts"], strict=True)])
    return forms


@pytest.mark.parametrize("engine", ["eager", "columnar"])
def test_a_fractional_time_prints_exactly_everywhere(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "in.csv"
    path.write_text(NANO)
    want = [
        [Decimal("1700000000.000000001"), Decimal("1700000000.000000002")],
        [Decimal("1700000000.000000001"), Decimal("1700000001")],
    ]
    for form in _every_form(tmp_path, path, engine):
        assert form == want
        assert all(isinstance(v, Decimal | int) and not isinstance(v, bool) for pair in form for v in pair)


@pytest.mark.parametrize("engine", ["eager", "columnar"])
def test_a_whole_number_time_stays_an_int_everywhere(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "in.csv"
    path.write_text("type,ts,x\nA,1700000000,1\nB,1700000002,2\n")
    for form in _every_form(tmp_path, path, engine):
        assert form == [[1700000000, 1700000002]]
        assert all(int(v) == v and not isinstance(v, float) for pair in form for v in pair)


def test_typed_time_columns_keep_their_type(tmp_path: Path) -> None:
    """An int64, a decimal and a float64 time column of a table stay that; a timestamp stays
    a timestamp (ISO-8601 text in jsonl)."""
    import pyarrow as pa

    import cepcli

    for values, type_ in [
        ([1, 2], pa.int64()),
        ([Decimal("1.000000001"), Decimal("1.000000002")], pa.decimal128(12, 9)),
        ([1.5, 2.25], pa.float64()),
    ]:
        table = pa.table({"type": ["A", "B"], "ts": pa.array(values, type_), "x": [1, 2]})
        for form in _every_form(tmp_path, table):
            assert form == [values], type_
        got = cepcli.find(QUERY, table).to_arrow().schema.field("a").type.field("ts").type
        assert got == type_ or (pa.types.is_decimal(type_) and pa.types.is_decimal(got))  # (its digits)
    stamps = pa.table(
        {"type": ["A", "B"], "ts": pa.array([1_000_000_001, 1_000_000_002], pa.timestamp("ns", tz="UTC"))}
    )
    arrow = cepcli.find(QUERY, stamps).to_arrow()
    assert arrow.schema.field("a").type.field("ts").type == pa.timestamp("ns", tz="UTC")
    assert list(cepcli.find(QUERY, stamps))[0]["a"]["ts"] == "1970-01-01T00:00:01.000000001Z"


def test_an_iso_time_column_stays_a_time(tmp_path: Path) -> None:
    import pyarrow as pa

    import cepcli

    path = tmp_path / "iso.csv"
    path.write_text("type,ts\nA,1970-01-01T00:00:01.000000001Z\nB,1970-01-01T00:00:01.000000002Z\n")
    arrow = cepcli.find(QUERY, path).to_arrow()
    assert arrow.schema.field("a").type.field("ts").type == pa.timestamp("ns", tz="UTC")
    ns = arrow.column("a").combine_chunks().field("ts").cast(pa.int64()).to_pylist()
    assert ns == [1_000_000_001]
    assert str(cepcli.find(QUERY, path).to_pandas()["b.ts"].dtype) == "datetime64[ns, UTC]"
    lines = tmp_path / "iso.jsonl"  # JSON strings: a text column, read as times
    lines.write_text(
        '{"type":"A","ts":"1970-01-01T00:00:01.000000001Z"}\n{"type":"B","ts":"1970-01-01T00:00:02Z"}\n'
    )
    arrow = cepcli.find(QUERY, lines).to_arrow()
    assert arrow.schema.field("a").type.field("ts").type == pa.timestamp("ns", tz="UTC")
    assert list(cepcli.find(QUERY, lines))[0]["a"]["ts"] == "1970-01-01T00:00:01.000000001Z"


# 5. a float prints in one form whether WHERE reads its column or not ------------------------


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("engine", ["eager", "columnar", "tree"])
def test_a_float_prints_alike_read_or_not(tmp_path: Path, fmt: str, engine: str) -> None:
    text = "type,ts,x,n\nA,1,114.00,007\nB,2,1e3,8\nB,3,,9\n"
    outputs = set()
    for where in ("", "WHERE a.x > 0 AND a.n > 0"):
        query = f"PATTERN SEQ(A a, B b) {where} WITHIN 10"
        out, err, code = _run(tmp_path, text, query, "--format", fmt, "--engine", engine)
        assert code == 0, err
        outputs.add(out)
    assert len(outputs) == 1
    out = outputs.pop()
    assert "114.0" in out and "114.00" not in out and "1000.0" in out and "1e3" not in out
    assert "007" not in out


# 6. a decimal wider than Arrow's widest ------------------------------------------------------


def test_a_decimal_wider_than_arrow_is_one_clear_error(tmp_path: Path) -> None:
    import cepcli
    from cepcli.errors import CepError

    wide = "1" * 79
    path = tmp_path / "wide.csv"
    path.write_text(f"type,ts,x\nA,1,{wide}\nB,2,1\n")
    with pytest.raises(CepError) as raised:
        cepcli.find(QUERY, path, schema={"x": "decimal"}).to_arrow()
    message = str(raised.value)
    assert "column 'x'" in message and "79 digits" in message and "\n" not in message
    assert list(cepcli.find(QUERY, path, schema={"x": "decimal"}))[0]["a"]["x"] == Decimal(
        wide
    )  # jsonl: exact
    out = tmp_path / "out.parquet"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-e",
            QUERY,
            "-i",
            str(path),
            "--schema",
            "x:decimal",
            "-q",
            "--format",
            "parquet",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 1
    assert (
        result.stderr.count("\n") == 1
        and "column 'x'" in result.stderr
        and "internal error" not in result.stderr
    )


def test_decimals_that_together_need_more_than_76_digits_are_one_clear_error(tmp_path: Path) -> None:
    import cepcli
    from cepcli.errors import CepError

    path = tmp_path / "wide.csv"
    path.write_text(f"type,ts,x\nA,1,{'9' * 70}\nB,2,0.{'0' * 9}1\n")
    with pytest.raises(CepError) as raised:
        cepcli.find(QUERY, path, schema={"x": "decimal"}, chunk_rows=1).to_arrow()
    assert "column 'x'" in str(raised.value)


# the vectorised lowering agrees with the reference on the new exact rules -------------------

EXACT_CORNERS = [
    "a.i / a.j = 0.1",
    "a.i / 3 = 0.3333333333333333",
    "a.i / a.j < 0.5",
    "a.i / 10 = 0.7",
    "a.i / 3 > a.j / 3",
    "a.i / 1 = 9007199254740993",
    "(a.i + 1) / 2 = a.j",
    "a.ts = 14.067",
    "a.ts < 0.1",
    "a.ts * 0.1 > 0.3",
    "a.t - 0.1 = a.ts",
    "a.ts / 3 = 0.5",
    "a.i * 0.1 > 0.3",
    "a.i + 0.1 = 3.1",
    "a.i > 0.1",
    "a.f * 0.1 > 0.3",
    "a.f + a.ts = 0.1",
    "a.f / a.i = 0.1",
    "a.ts + a.f > 1.1",
    "a.t / a.i = 0.001",
]


@pytest.mark.parametrize("unit", ["s", "ms", "ns"])
@pytest.mark.parametrize("condition", EXACT_CORNERS)
def test_the_vectorised_lowering_agrees(condition: str, unit: str) -> None:
    from tests.test_prefilter import CORNERS, check

    rows = [*CORNERS, (14_067_000_000, "A", 7, 70, 0.2, True, "", 100_000_000)]
    check(condition, rows, unit)


def test_a_frames_whole_decimals_stay_decimals() -> None:
    """A DataFrame column of ``Decimal`` objects is decimal, also when every value is whole
    (pyarrow gives such a column scale 0, which a typed file's int-like decimal has)."""
    import pandas as pd

    frame = pd.DataFrame(
        {"ts": [0, 1], "type": ["A", "B"], "d": pd.Series([Decimal("7"), None], dtype=object)}
    )
    found = cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", frame)
    (match,) = list(found)
    assert match["a"]["d"] == Decimal("7") and isinstance(match["a"]["d"], Decimal)
    table = cepcli.find("PATTERN SEQ(A a, B b) WITHIN 5", frame).to_arrow()
    assert pa.types.is_decimal(table.schema.field("a").type.field("d").type)


def test_a_kleene_variables_whole_numbers_stay_exact_in_pandas_beside_a_missing_one(tmp_path: Path) -> None:
    data = tmp_path / "k.csv"
    data.write_text("ts,type,n\n0,A,9223372036854775807\n1,A,\n2,A,2\n")
    frame = cepcli.find("PATTERN A+ a[] WITHIN 5", data).to_pandas()
    rows = {tuple(v) for v in frame["a.n"]}
    assert (9223372036854775807, None, 2) in rows
    assert all(type(x) is int or x is None for row in rows for x in row)
