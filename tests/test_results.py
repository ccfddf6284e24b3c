"""Matches as typed data (issue 29, item 1): one result schema for ``Matches.to_arrow()``,
``to_pandas()``, ``--format parquet`` and, in tests/test_spark.py, ``--spark --output DIR
--format parquet``; ``--show`` (``show=``) choosing each event's columns in every format.

The property holds the Arrow result to the oracle twice over: its ``_row`` sets are the
oracle's matches, and each bound event's fields are the model's values of that row
(``tests/forms.py``: whole numbers with the int64 extremes, fractions, text with empty
strings, missing values in every spelling), typed, in every input form and every engine.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import cepcli
from cepcli.engines import ENGINES
from tests.forms import Case, cases, cli, oracle_on_rows, reading, write
from tests.oracle import UNITS, MatchKey

ROOT = Path(__file__).parent.parent
FORMS = ["csv", "jsonl", "parquet", "frame"]
KINDS = {"_row": pa.int64(), "type": pa.string(), "g": pa.string()}


def time_type_is_the_inputs(ts: pa.DataType, time_form: str) -> bool:
    """The time column keeps the input's form: date-times a timestamp, whole numbers int64,
    fractions exact decimals (or float64 where the input held floats)."""
    if time_form == "iso":
        return bool(ts == pa.timestamp("ns", tz="UTC"))
    if time_form in ("int", "epoch_ms"):
        return bool(ts == pa.int64())
    return bool(pa.types.is_decimal(ts) or ts == pa.float64())


def keys_of(table: pa.Table) -> set[MatchKey]:
    """The matches of a result table as (variable, rows) sets."""
    out: set[MatchKey] = set()
    for row in table.to_pylist():
        pairs = []
        for name, value in row.items():
            if name == "query" or value is None:
                continue
            rows = tuple(e["_row"] for e in value) if isinstance(value, list) else (value["_row"],)
            pairs.append((name, rows))
        out.add(frozenset(pairs))
    return out


def events_of(table: pa.Table, unit: str = "s") -> list[tuple[str, dict[str, Any], int]]:
    """Every bound event of every match: its variable, its fields, its time in nanoseconds
    (a timestamp read from the Arrow array, not through Python's datetime; a number exactly,
    in ``unit``)."""
    out = []
    for name in table.column_names:
        column = table.column(name).combine_chunks()
        structs = column.flatten() if pa.types.is_list(column.type) else column.filter(column.is_valid())
        ts = structs.field("ts")
        if pa.types.is_timestamp(ts.type):
            times = ts.cast(pa.int64()).to_pylist()
        else:
            times = [int(Fraction(str(v)) * UNITS[unit]) for v in ts.to_pylist()]
        for fields, ns in zip(structs.to_pylist(), times, strict=True):
            out.append((name, fields, ns))
    return out


@pytest.mark.parametrize("form", FORMS)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(stray=False), engine=st.sampled_from(list(ENGINES)))
def test_arrow_result_is_the_oracles_matches_with_their_typed_values(
    form: str, case: Case, engine: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    note(str(case))
    table = case.table
    data = write(table, form, tmp_path_factory.mktemp(form))
    result = cepcli.find(case.query, data, engine=engine, time_unit=table.unit, chunk_rows=case.chunk_rows)
    arrow = result.to_arrow()
    rows = table.rows(reading(form))
    assert keys_of(arrow) == oracle_on_rows(case.query, rows, table.unit)
    assert result.stats.matches == arrow.num_rows
    for field in (f for c in arrow.schema for f in _struct(c.type)):
        if field.name in KINDS:
            assert field.type == KINDS[field.name], field
        if field.name == "ts":
            assert time_type_is_the_inputs(field.type, table.time_form), field
    for name, fields, ns in events_of(arrow, table.unit):
        want = rows[fields["_row"]]
        assert ns == want["_ts"], (name, fields)
        assert fields["type"] == want["type"]
        for column in ("x", "y", "g"):
            assert fields[column] == want[column], (name, column, fields, want)
            assert type(fields[column]) is type(want[column]) or isinstance(fields[column], Decimal)


def _struct(t: pa.DataType) -> list[pa.Field]:
    t = t.value_type if pa.types.is_list(t) else t
    return list(t) if pa.types.is_struct(t) else []


SEQ = "PATTERN SEQ(A a, B+ b[]) WHERE a.x < b[i].x WITHIN 10 s"
OR = "PATTERN OR(SEQ(A a, C c), SEQ(B d, C e)) WITHIN 10 s"
ROWS = (
    "ts,type,x,p,when,note\n"
    "0,A,1,0.1,2024-01-01T00:00:00Z,n1\n"
    "1,B,2,123456789012345678.123456789,,n2\n"
    "2,B,3,NA,2024-01-02T00:00:00.000000001Z,\n"
    "3,C,4,2,2024-01-03T00:00:00Z,n4\n"
)


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.csv"
    path.write_text(ROWS)
    return path


def test_kleene_is_a_list_in_row_order_and_pandas_has_real_dtypes(events: Path) -> None:
    arrow = cepcli.find(SEQ, events, schema={"p": "decimal"}).to_arrow()
    assert arrow.column_names == ["a", "b"]
    assert pa.types.is_list(arrow.schema.field("b").type)
    assert sorted(keys_of(arrow), key=sorted) == sorted(
        [frozenset({("a", (0,)), ("b", rows)}) for rows in [(1,), (2,), (1, 2)]], key=sorted
    )
    longest = max(arrow.column("b").to_pylist(), key=len)
    assert [e["_row"] for e in longest] == [1, 2]
    # an unread decimal column is exact: the scale its values need, a missing marker null
    assert arrow.schema.field("a").type.field("p").type == pa.decimal128(27, 9)
    assert [e["p"] for e in longest] == [Decimal("123456789012345678.123456789"), None]
    # an unread ISO column is a time, to the nanosecond; an empty text cell is missing
    when = pa.array([longest[1]["when"]], pa.timestamp("ns", tz="UTC")).cast(pa.int64())[0].as_py()
    assert when == 1704153600 * 10**9 + 1
    assert longest[0]["when"] is None
    assert longest[1]["note"] is None

    frame = cepcli.find(SEQ, events, schema={"p": "decimal"}).to_pandas()
    assert str(frame["a._row"].dtype) == "Int64"
    assert str(frame["a.ts"].dtype) == "Int64"  # whole seconds stay the input's numbers
    assert str(frame["a.x"].dtype) == "Int64"
    assert frame["a.p"].iloc[0] == Decimal("0.1")
    assert sorted(tuple(v) for v in frame["b._row"]) == [(1,), (1, 2), (2,)]


def test_a_variable_the_branch_does_not_bind_is_null(events: Path) -> None:
    arrow = cepcli.find(OR, events).to_arrow()
    by_key = {frozenset(k): k for k in keys_of(arrow)}
    assert set(by_key) == {
        frozenset({("a", (0,)), ("c", (3,))}),
        frozenset({("d", (1,)), ("e", (3,))}),
        frozenset({("d", (2,)), ("e", (3,))}),
    }
    for row in arrow.to_pylist():
        assert (row["a"] is None) == (row["c"] is None) != (row["d"] is None) == (row["e"] is None)
    frame = cepcli.find(OR, events).to_pandas()
    assert str(frame["a._row"].dtype) == "Int64"
    assert frame["a._row"].isna().sum() == 2 and frame["d.x"].isna().sum() == 1  # missing, not 0


def test_show_chooses_the_columns_of_every_format(events: Path, tmp_path: Path) -> None:
    found = list(cepcli.find(SEQ, events, show=["x", "note"]))
    assert found and all(set(m["a"]) == {"x", "note", "_row"} for m in found)
    arrow = cepcli.find(SEQ, events, show=["x"]).to_arrow()
    assert [f.name for f in arrow.schema.field("a").type] == ["_row", "x"]
    assert list(cepcli.find(SEQ, events, show=["x"]).to_pandas().columns) == [
        "a._row",
        "a.x",
        "b._row",
        "b.x",
    ]

    def run(*args: str) -> str:
        done = cli(["run", "-e", SEQ, "-i", str(events), "-q", "--show", "x", *args])
        assert done.returncode == 0, done.stderr
        return done.stdout.decode()

    lines = [json.loads(line) for line in run("--format", "jsonl").splitlines()]
    assert len(lines) == 3 and all(set(m["a"]) == {"x", "_row"} for m in lines)
    assert run("--format", "csv").splitlines()[0] == "a._row,a.x,b._row,b.x"
    run("--format", "parquet", "-o", str(tmp_path / "m.parquet"))
    written = pq.read_table(tmp_path / "m.parquet")
    assert [f.name for f in written.schema.field("a").type] == ["_row", "x"]
    assert keys_of(written) == keys_of(arrow)


def test_show_names_an_unknown_column_in_one_line(events: Path) -> None:
    with pytest.raises(cepcli.errors.UsageError, match=r"show= names no column 'nope' \(columns: ts, type"):
        cepcli.find(SEQ, events, show=["nope"])


def test_parquet_output_is_the_result_schema_of_to_arrow(events: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.parquet"
    done = cli(["run", "-e", SEQ, "-i", str(events), "--format", "parquet", "-o", str(out)])
    assert done.returncode == 0, done.stderr
    assert b"3 matches" in done.stderr or "│ matches".encode() in done.stderr
    written = pq.read_table(out)
    assert written.equals(cepcli.find(SEQ, events).to_arrow())
    # to a redirected standard output, the same table
    redirected = cli(["run", "-e", SEQ, "-i", str(events), "--format", "parquet", "-q"])
    assert redirected.returncode == 0, redirected.stderr
    assert pq.read_table(pa.BufferReader(redirected.stdout)).equals(written)


def test_several_queries_share_one_parquet_file_with_a_query_column(events: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.parquet"
    done = cli(["run", "-e", SEQ, "-e", OR, "-i", str(events), "--format", "parquet", "-q", "-o", str(out)])
    assert done.returncode == 0, done.stderr
    written = pq.read_table(out)
    assert written.column_names == ["query", "a", "b", "c", "d", "e"]
    both = cepcli.find({"e1": SEQ, "e2": OR}, events).to_arrow()
    assert written.equals(both)
    for query, text in (("e1", SEQ), ("e2", OR)):
        mine = written.filter(pa.compute.equal(written.column("query"), query)).drop_columns(["query"])
        assert keys_of(mine) == keys_of(cepcli.find(text, events).to_arrow())


def test_many_matches_make_several_batches_with_one_decimal_type(tmp_path: Path) -> None:
    """More matches than a batch holds (65,536), decimals of growing scale: one table, exact."""
    path = tmp_path / "many.csv"
    lines = (
        ["ts,type,p"] + [f"{i},A,{i}" for i in range(400)] + [f"{400 + i},B,0.{i:04d}" for i in range(200)]
    )
    path.write_text("\n".join(lines) + "\n")
    query = "PATTERN SEQ(A a, B b) WITHIN 1000 s"
    arrow = cepcli.find(query, path, schema={"p": "decimal"}).to_arrow()
    assert arrow.num_rows == 400 * 200
    # a column has one type: the integer digits of 399 and the scale of 0.0199
    assert arrow.schema.field("b").type.field("p").type == pa.decimal128(7, 4)
    assert arrow.schema.field("a").type.field("p").type == pa.decimal128(7, 4)
    last = arrow.slice(arrow.num_rows - 1).to_pylist()[0]
    assert last["b"]["p"] == Decimal("0.0199") and last["a"]["p"] == Decimal("399")


def test_a_name_kleene_in_one_query_and_not_in_another_is_refused_in_one_line(events: Path) -> None:
    with pytest.raises(cepcli.errors.UsageError, match="query q2's b is a Kleene variable, q1's is not"):
        cepcli.find(["PATTERN SEQ(A a, B b) WITHIN 5 s", SEQ], events).to_arrow()
