"""Exact values and missing values (docs/semantics.md sections 2 and 3): null markers, kinds from a fixed
sample (not ``--chunk-rows``), ``--schema``, int64 kept exact end to end, NaN and
infinity in the output, NUL bytes, and a value that contradicts its column's kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli
from tests.harness import run_engine
from tests.oracle import oracle
from tests.test_cases import ENGINES

MAX = 9223372036854775807  # int64 max


def _run(tmp_path: Path, query: str, text: str, *args: str) -> Result:
    q, data = tmp_path / "q.sase", tmp_path / "in.csv"
    q.write_text(query)
    data.write_bytes(text.encode())
    result = CliRunner().invoke(cli, ["run", str(q), "-i", str(data), "--format", "jsonl", "-q", *args])
    assert "Traceback" not in result.output and "internal error" not in result.stderr, result.stderr
    return result


def _objects(result: Result) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("marker", ["NA", "N/A", "NaN", "nan", "null", "NULL", "None", "<NA>", "#N/A", ""])
def test_null_markers_are_missing_in_numeric_columns(marker: str) -> None:
    """A marker is missing (comparisons false, SQL style), also the first value of a column,
    and the column stays numeric: ``10 < 9`` is no match (text order would make it one)."""
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    text = f"type,ts,x\nA,1,{marker}\nA,2,10\nB,3,9\nB,4,{marker}\nB,5,11\n"
    want = {frozenset({("a", (1,)), ("b", (4,))})}
    assert oracle(query, text) == want
    for engine in ENGINES:
        got, _ = run_engine(query, text, engine)
        assert got == want, engine


def test_a_marker_in_a_text_column_is_text() -> None:
    """In a column of text (its present values are words), ``NA`` is the text NA."""
    query = "PATTERN SEQ(A a, B b) WHERE a.g = b.g WITHIN 10"
    text = "type,ts,g\nA,1,NA\nB,2,NA\nA,3,\nB,4,\nC,5,gate\n"
    for engine in ENGINES:
        got, _ = run_engine(query, text, engine)
        assert got == {frozenset({("a", (0,)), ("b", (1,))})}, engine  # empty cells are missing


def test_a_column_of_markers_only_has_no_kind_and_no_value_equals_another() -> None:
    """A missing value never decides a kind: a column whose values are all markers or empty
    has none, and its markers are missing, so ``NA = NA`` is no match (SQL's NULL)."""
    query = "PATTERN SEQ(A a, B b) WHERE a.g = b.g WITHIN 10"
    text = "type,ts,g\nA,1,NA\nB,2,NA\nA,3,NaN\nB,4,NaN\nA,5,\nB,6,\n"
    assert oracle(query, text) == set()
    for engine in ENGINES:
        got, _ = run_engine(query, text, engine)
        assert got == set(), engine


def test_null_values_option_replaces_the_markers(tmp_path: Path) -> None:
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    text = "type,ts,x\nA,1,-999\nB,2,5\nA,3,NA\nB,4,6\n"
    default = _run(tmp_path, query, text, "--on-bad-row", "skip")
    assert [o["a"]["_row"] for o in _objects(default)] == [0, 0]  # NA is missing: no a at row 2
    marked = _run(tmp_path, query, text, "--null-values", "-999", "--on-bad-row", "skip")
    assert "holds 'NA'" in marked.stderr  # NA is no marker now: a bad value in an int column
    assert _objects(marked) == []  # -999 is missing: no a left


@pytest.mark.parametrize("column", ["x", "ts"])
def test_a_null_marker_that_reads_as_a_number_is_missing_all_the_same(tmp_path: Path, column: str) -> None:
    """``--null-values -999``: every value of the batch reads as a number, the marker too;
    it is missing nonetheless (in an attribute and in the time column)."""
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    text = "type,ts,x\nA,1,1\nB,2,5\nB,-999,7\n" if column == "ts" else "type,ts,x\nA,1,-999\nB,2,5\n"
    result = _run(tmp_path, query, text, "--null-values", "-999")
    if column == "ts":
        assert result.exit_code == 1 and "row 2: missing timestamp in column 'ts'" in result.stderr
    else:
        assert result.exit_code == 0 and _objects(result) == []
        assert _objects(_run(tmp_path, query, text)) != []  # without the option, -999 < 5


def test_kinds_come_from_a_fixed_sample_not_the_chunk_size(tmp_path: Path) -> None:
    """One word among numbers, in the first rows or after 65,536: the column is numeric
    either way, the word is a bad row naming the value and the fix, whatever --chunk-rows."""
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 2"
    for at in (3, 70_000):
        rows = [f"{'A' if i % 2 == 0 else 'B'},{i},{i % 10}" for i in range(at + 10)]
        rows[at] = f"B,{at},oops"
        text = "type,ts,x\n" + "\n".join(rows) + "\n"
        outputs = set()
        for chunk in ("1000", "65536", "100000"):
            result = _run(tmp_path, query, text, "--chunk-rows", chunk)
            assert result.exit_code == 1
            assert f"row {at}: column 'x' holds 'oops', which is not an integer (int64)" in result.stderr
            assert "give --schema x:str" in result.stderr
            outputs.add(result.stdout)
        assert len(outputs) == 1


def test_schema_overrides_the_kinds(tmp_path: Path) -> None:
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    text = "type,ts,x\nA,1,10\nB,2,9\n"
    as_text = _run(tmp_path, query, text, "--schema", "x:str")
    assert [o["b"]["x"] for o in _objects(as_text)] == ["9"]  # '10' < '9' as text: what was asked
    as_float = _run(tmp_path, query, text, "--schema", "x:float")
    assert _objects(as_float) == []
    as_decimal = _run(tmp_path, query, text, "--schema", "x:decimal")
    assert as_decimal.exit_code == 0 and _objects(as_decimal) == []  # 10 < 9 as numbers: no match
    bad = _run(tmp_path, query, text, "--schema", "x:money")
    assert bad.exit_code == 2 and "--schema takes column:kind pairs" in bad.stderr
    unknown = _run(tmp_path, query, text, "--schema", "y:int")
    assert unknown.exit_code == 2 and "--schema names no column 'y'" in unknown.stderr


def test_int64_extremes_stay_exact(tmp_path: Path) -> None:
    """Ids beyond 2^53 compare (and are written) exactly: ...807 and ...806 differ."""
    query = "PATTERN SEQ(A a, A b) WHERE a.id = b.id AND a.id > 9223372036854775806 WITHIN 10"
    text = f"type,ts,id\nA,1,{MAX}\nA,2,{MAX - 1}\nA,3,{MAX}\nA,4,{-MAX - 1}\n"
    want = {frozenset({("a", (0,)), ("b", (2,))})}
    assert oracle(query, text) == want
    for engine in ENGINES:
        got, _ = run_engine(query, text, engine)
        assert got == want, engine
    result = _run(tmp_path, query, text)
    assert [(o["a"]["id"], o["b"]["id"]) for o in _objects(result)] == [(MAX, MAX)]


def test_arithmetic_is_exact_past_int64(tmp_path: Path) -> None:
    """``a.x * 930000000`` does not wrap around in int64, in the prefilter or in a join."""
    text = f"type,ts,x\nA,1,{10**13}\nB,2,1\n"
    single = "PATTERN SEQ(A a, B b) WHERE a.x * 930000000 > 0 WITHIN 10"
    joined = "PATTERN SEQ(A a, B b) WHERE a.x * 930000000 > b.x WITHIN 10"
    for query in (single, joined):
        want = oracle(query, text)
        assert len(want) == 1
        for engine in ENGINES:
            assert run_engine(query, text, engine)[0] == want, (engine, query)


def test_infinity_and_nan_are_valid_json(tmp_path: Path) -> None:
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    text = "type,ts,x,y\nA,1,1.5,nan\nB,2,inf,-inf\nB,3,1e309,2\n"
    result = _run(tmp_path, query, text)
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout
    values = [(o["a"]["y"], o["b"]["x"], o["b"]["y"]) for o in _objects(result)]
    assert values == [(None, "inf", "-inf"), (None, "inf", 2.0)]  # 1e309 is an infinite float


def test_a_nul_byte_is_part_of_the_value(tmp_path: Path) -> None:
    result = _run(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 10", "type,ts\nA,1\nB\x00X,2\nB,3\n")
    assert result.exit_code == 0
    assert [o["b"]["_row"] for o in _objects(result)] == [2]


def test_booleans_are_a_kind(tmp_path: Path) -> None:
    query = "PATTERN SEQ(A a, B b) WHERE a.ok = true AND b.ok = false WITHIN 10"
    text = "type,ts,ok\nA,1,true\nA,2,False\nB,3,FALSE\nB,4,true\n"
    want = {frozenset({("a", (0,)), ("b", (2,))})}
    assert oracle(query, text) == want
    for engine in ENGINES:
        assert run_engine(query, text, engine)[0] == want, engine
    result = _run(tmp_path, query, text)
    assert _objects(result)[0]["b"]["ok"] is False


def test_a_column_empty_in_the_sample_must_be_given_a_kind_to_compare(tmp_path: Path) -> None:
    """No value in the first rows: its kind is unknown, and using it as a number is a query
    error that says how to give one (read as text, it would silently match nothing)."""
    query = "PATTERN SEQ(A a, B b) WHERE b.x > 5 WITHIN 10"
    rows = [f"A,{i}," for i in range(70_000)] + ["B,70000,6"]
    text = "type,ts,x\n" + "\n".join(rows) + "\n"
    unknown = _run(tmp_path, query, text)
    assert unknown.exit_code == 2
    assert "column 'x' has no value in its first rows, so its kind is unknown" in unknown.stderr
    assert "give --schema x:int" in unknown.stderr
    given = _run(tmp_path, query, text, "--schema", "x:int")
    assert {o["b"]["_row"] for o in _objects(given)} == {70_000}
    as_text = _run(tmp_path, "PATTERN SEQ(A a, B b) WHERE b.x = 'y' WITHIN 10", text)
    assert as_text.exit_code == 0  # compared with text, it is text
