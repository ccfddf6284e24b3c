"""Where the query and its input options come from (README "Queries kept with their
input"): a QUERY file or ``-e TEXT``; ``FROM 'path' WITH (name = value, ...)`` keeping the
input options with the query; the command line overriding them one by one; a UTF-8 BOM
at the start of a query file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cepcli
from cepcli.cli import cli
from cepcli.errors import QueryError
from cepcli.query.parser import parse_query
from cepcli.query.printer import print_query

# Flights-like rows, time in milliseconds, not sorted: the options say how to read them.
ROWS = """\
carrier,when,delay
UA,1000,5
B6,1400,7
UA,1300,NA
OO,1500,2
B6,2100,1
OO,2200,3
"""
QUERY = "PATTERN SEQ(UA a, B6 b, OO c) WITHIN 500"


def _cli(*args: str, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    return result


def _rows(result: Result) -> list[tuple[int, ...]]:
    """(a, b, c) row ids of each jsonl match, sorted."""
    out = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return sorted(tuple(m[v]["_row"] for v in ("a", "b", "c")) for m in out)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "flights.csv"
    path.write_text(ROWS)
    return path


def _with(tmp_path: Path, options: str, query: str = QUERY, source: str = "flights.csv") -> Path:
    path = tmp_path / "q.sase"
    path.write_text(f"FROM '{source}' WITH ({options})\n{query}\n")
    return path


# In ms, sorted: UA 1000 (row 0), UA 1300 (2), B6 1400 (1), OO 1500 (3), B6 2100 (4), OO 2200 (5).
# Within 500 ms: (0, 1, 3) spans 500 (inclusive), (2, 1, 3) spans 200; B6 2100 has no UA before it.
EXPECTED = [(0, 1, 3), (2, 1, 3)]
OPTIONS = "type_col = carrier, 'time-col' = 'when', time_unit = ms, sort = true"


def test_options_kept_with_the_query_need_no_flags(tmp_path: Path, data: Path) -> None:
    result = _cli("run", str(_with(tmp_path, OPTIONS)), "--format", "jsonl", "-q")
    assert result.exit_code == 0, result.output
    assert _rows(result) == EXPECTED


def test_time_unit_in_the_query_reads_a_bare_window_in_that_unit(tmp_path: Path, data: Path) -> None:
    # WITHIN 499 (ms) leaves out (0, 1, 3), which spans exactly 500 ms.
    query = _with(tmp_path, OPTIONS, "PATTERN SEQ(UA a, B6 b, OO c) WITHIN 499")
    assert _rows(_cli("run", str(query), "--format", "jsonl", "-q")) == [(2, 1, 3)]


def test_a_flag_overrides_the_query_option_of_the_same_name(tmp_path: Path, data: Path) -> None:
    query = _with(tmp_path, "type_col = delay, time_col = when, time_unit = ms, sort = true")
    # The query's type column is wrong for this pattern: no match; the flag fixes it.
    assert _rows(_cli("run", str(query), "--format", "jsonl", "-q")) == []
    fixed = _cli("run", str(query), "--type-col", "carrier", "--format", "jsonl", "-q")
    assert _rows(fixed) == EXPECTED
    # WITHIN 1 s: 1,000 of the query's ms; read as seconds (--time-unit s), no two rows are that close.
    second = _with(tmp_path, OPTIONS, "PATTERN SEQ(UA a, B6 b, OO c) WITHIN 1 s")
    assert _rows(_cli("run", str(second), "--format", "jsonl", "-q")) == [
        (0, 1, 3),
        (2, 1, 3),
        (2, 1, 5),
        (2, 4, 5),
    ]
    assert _rows(_cli("run", str(second), "--time-unit", "s", "--format", "jsonl", "-q")) == []


def test_input_flag_keeps_the_query_options(tmp_path: Path, data: Path) -> None:
    other = tmp_path / "other.csv"
    other.write_text(ROWS)
    query = _with(tmp_path, OPTIONS, source="missing.csv")
    result = _cli("run", str(query), "-i", str(other), "--format", "jsonl", "-q")
    assert result.exit_code == 0, result.output
    assert _rows(result) == EXPECTED


def test_from_standard_input_with_options(tmp_path: Path) -> None:
    query = _with(tmp_path, OPTIONS, source="-")
    assert _rows(_cli("run", str(query), "--format", "jsonl", "-q", stdin=ROWS)) == EXPECTED


def test_null_values_schema_and_headerless_input_in_the_query(tmp_path: Path) -> None:
    (tmp_path / "raw.csv").write_text("UA,1,-\nB6,2,4\nOO,3,1\n")
    options = "header = false, columns = 'carrier,ts,delay', type_col = carrier, null_values = '-'"
    query = _with(
        tmp_path, options, "PATTERN SEQ(UA a, B6 b, OO c) WHERE b.delay > c.delay WITHIN 5", "raw.csv"
    )
    result = _cli("run", str(query), "--format", "jsonl", "-q")
    assert result.exit_code == 0, result.output
    assert _rows(result) == [(0, 1, 2)]
    matched = json.loads(result.stdout)
    assert matched["a"]["delay"] is None  # '-' is a null marker here: missing, not text
    typed = _with(tmp_path, options + ", schema = 'delay:str'", "PATTERN SEQ(UA a, B6 b) WITHIN 5", "raw.csv")
    assert json.loads(_cli("run", str(typed), "--format", "jsonl", "-q").stdout)["b"]["delay"] == "4"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("typecol = carrier", "unknown input option 'typecol' (known: format, type_col,"),
        ("sort = 1", "the input option sort takes true or false"),
        ("time_unit = hours", "the input option time_unit takes one of s, ms, us, ns"),
        ("chunk_rows = 0", "the input option chunk_rows takes a whole number >= 1"),
        ("type_col = true", "the input option type_col takes text"),
        ("sort = true, sort = false", "the input option sort is given twice"),
        ("schema = 'delay:number'", "the input option schema takes column:kind pairs"),
    ],
)
def test_a_bad_input_option_is_a_query_error_at_its_place(tmp_path: Path, options: str, message: str) -> None:
    query = _with(tmp_path, options)
    result = _cli("check", str(query))
    assert result.exit_code == 2
    first = result.output.splitlines()[0]
    assert first.startswith(f"{query}:1:") and message in first, result.output
    assert "^" in result.output  # the caret snippet points at the option


def test_options_print_back_to_the_same_query() -> None:
    text = f"FROM 'f.csv' WITH ({OPTIONS}, chunk_rows = 10, format = csv)\n{QUERY}"
    query = parse_query(text)
    assert parse_query(print_query(query)) == query
    assert [o.name for o in query.options] == [
        "type_col",
        "time_col",
        "time_unit",
        "sort",
        "chunk_rows",
        "format",
    ]


def test_with_is_not_reserved_elsewhere() -> None:
    query = parse_query("PATTERN SEQ(with with, B b) WHERE with.with > 1 WITHIN 5")
    assert query.options == ()


def test_the_python_api_reads_the_query_options_unless_given(data: Path) -> None:
    text = f"FROM 'ignored.csv' WITH ({OPTIONS})\n{QUERY}"
    found = [(m["a"]["_row"], m["b"]["_row"], m["c"]["_row"]) for m in cepcli.find(text, data)]
    assert sorted(found) == EXPECTED
    assert list(cepcli.find(text, data, type_col="delay")) == []
    with pytest.raises(QueryError, match="unknown input option"):
        cepcli.find("FROM 'x' WITH (colour = red) PATTERN SEQ(A a) WITHIN 1", data)


# --- -e TEXT -----------------------------------------------------------------------------


def test_inline_query_for_every_command(tmp_path: Path, data: Path) -> None:
    flags = ["-i", str(data), "--type-col", "carrier", "--time-col", "when", "--time-unit", "ms", "--sort"]
    run = _cli("run", "-e", QUERY, *flags, "--format", "jsonl", "-q")
    assert run.exit_code == 0, run.output
    assert _rows(run) == EXPECTED
    check = _cli("check", "-e", QUERY, *flags)
    assert check.exit_code == 0 and check.output.startswith("<-e>: ok (1 branch; variables a, b, c"), (
        check.output
    )
    explain = _cli("explain", "-e", QUERY, "--engine", "chain")
    assert explain.exit_code == 0 and "SEQ" in explain.output, explain.output
    bench = _cli("bench", "-e", QUERY, *flags, "--engines", "eager,tree", "--repeat", "1")
    assert bench.exit_code == 0, bench.output


def test_inline_query_errors_point_into_the_text() -> None:
    result = _cli("check", "-e", "PATTERN SEQ(A a) WITHIN 5 xx")
    assert result.exit_code == 2
    assert result.output.startswith("<-e>:1:27: unknown time unit 'xx'"), result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run"], "missing QUERY: a .sase file, or the query's text with -e"),
        (["check", "q.sase", "-e", QUERY], "give a QUERY file or -e TEXT, not both"),
    ],
)
def test_query_file_or_inline_text_exactly_one(args: list[str], message: str) -> None:
    result = _cli(*args)
    assert result.exit_code == 2 and message in result.output, result.output


# --- small ones ---------------------------------------------------------------------------


def test_a_byte_order_mark_before_the_query_is_ignored(tmp_path: Path, data: Path) -> None:
    query = tmp_path / "bom.sase"
    query.write_bytes(b"\xef\xbb\xbf" + f"FROM 'flights.csv' WITH ({OPTIONS})\n{QUERY}\n".encode())
    result = _cli("run", str(query), "--format", "jsonl", "-q")
    assert result.exit_code == 0, result.output
    assert _rows(result) == EXPECTED


@pytest.mark.parametrize(
    ("window", "why"), [("0s", "the window must be positive"), ("5 x", "unknown time unit")]
)
def test_bench_bad_window_names_the_option_not_an_invented_query(data: Path, window: str, why: str) -> None:
    flags = ["-i", str(data), "--type-col", "carrier", "--time-col", "when"]
    result = _cli("bench", "-e", QUERY, *flags, "--windows", window)
    assert result.exit_code == 2
    assert f"--windows: {window!r} is not a window: {why}" in result.output, result.output
    assert "PATTERN A a" not in result.output
