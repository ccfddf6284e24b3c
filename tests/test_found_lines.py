"""The columnar engine's jsonl and csv lines made from columns (``cepcli.lines``:
``found_lines``, ``found_csv``): the text of each match is, byte for byte and in the same
order, the line its writer makes from the match's events (``match_line``; ``flat_row``'s
cells quoted by Python's ``csv``), for every kind of value an input can hold, with ``--show``, and
for several queries (each line saying its query); the CLI writes them so (``--max-matches``
cut inside a slice's matches included).

The property runs the model's generated streams (every time form, null markers, stray
words, int64 extremes) through the batch path and the match-by-match path of the same job;
the hand-written inputs hold what the generated ones do not: floats with infinities, exact
decimals, text that JSON escapes, booleans, durations, nested values, nanosecond times."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import cepcli
from cepcli.api import ManyMatches, Matches
from cepcli.output import CsvLines, ManyFlat, match_line, variables
from cepcli.results import Results
from cepcli.runtime.columnar import Found
from cepcli.writers import CsvWriter, JsonlWriter
from tests.forms import cases, cli, write


def _lines(fmt: str = "jsonl", **arguments: Any) -> tuple[list[str], list[str], int]:
    """One query's lines in ``fmt`` (jsonl or csv) twice, from two runs of
    ``cepcli.find(**arguments)``: each match written by the writer (``write``: from its
    events, match by match, ``Run.matches``), and through ``Run.found`` (``add_found``:
    from columns where the columnar engine ran, cut where it says each line ends); and how
    many ``Found`` batches the second had."""
    result = _find(**arguments)
    job, keep = result.run, result._keep
    single: list[str] = []
    writer, stream = _writer(fmt, job, keep)
    for _, match in job.matches():
        size = writer.write(("q", match))
        single.append(stream.getvalue())
        stream.seek(0)
        stream.truncate()
        assert size == len(single[-1].encode("utf-8"))
    job = _find(**arguments).run
    writer, stream = _writer(fmt, job, keep)
    batched: list[str] = []
    batches = 0
    for _, item in job.found():
        if isinstance(item, Found):
            batches += 1
            body, ends = writer.add_found(("q", item))  # type: ignore[union-attr]
            text = body.to_pybytes()
            assert int(ends[-1]) == len(text)
            batched += [text[a:b].decode("utf-8") for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        else:
            writer.write(("q", item))
            batched.append(stream.getvalue())
            stream.seek(0)
            stream.truncate()
    return single, batched, batches


def _writer(fmt: str, job: Any, keep: Any) -> tuple[JsonlWriter | CsvWriter, io.StringIO]:
    """The writer of ``fmt`` for the job's one query, named ``q``, to a fresh stream (its
    csv header left out)."""
    stream = io.StringIO()
    kind = JsonlWriter if fmt == "jsonl" else CsvWriter
    writer = kind(stream, job.schema, {"q": job.pattern}, keep)
    assert writer.takes_found
    stream.seek(0)
    stream.truncate()
    return writer, stream


def _tables(**arguments: Any) -> tuple[pa.Table, pa.Table, int]:
    """One query's ``--format parquet`` table twice, from two runs of
    ``cepcli.find(**arguments)``: each match added by ``Results.add`` (from its events), and
    through ``Run.found`` (``Results.add_found`` where the columnar engine ran); and how
    many ``Found`` batches the second had."""
    result = _find(**arguments)
    job = result.run
    single = Results(job.schema, {None: job.pattern}, result.show)
    for _, match in job.matches():
        single.add(match)
    job = _find(**arguments).run
    batched = Results(job.schema, {None: job.pattern}, result.show)
    batches = 0
    for _, item in job.found():
        if isinstance(item, Found):
            batches += 1
            batched.add_found(item)
        else:
            batched.add(item)
    return single.table(), batched.table(), batches


def _find(**arguments: Any) -> Matches:
    result = cepcli.find(**arguments)
    assert isinstance(result, Matches)
    return result


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("form", ["csv", "jsonl", "parquet", "frame"])
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_lines_made_from_columns_are_the_lines_of_the_events(
    fmt: str, form: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    case = data.draw(cases(stray=form in ("csv", "jsonl")))  # (a typed input has no stray words)
    note(str(case))
    path = write(case.table, form, tmp_path_factory.mktemp(form))
    arguments = dict(
        query=case.query,
        data=path,
        engine="columnar",
        time_unit=case.table.unit,
        chunk_rows=case.chunk_rows,
        on_bad_row="skip",
    )
    single, batched, _ = _lines(fmt, **arguments)
    assert batched == single
    if fmt == "jsonl":  # (and once: parquet's typed data)
        whole, found, _ = _tables(**arguments)
        assert found.equals(whole)


KINDS_CSV = (
    "ts,type,i,f,d,s,b,t\n"
    "2024-01-01T00:00:00Z,A,-9223372036854775808,1e20,0.10,"
    '"say ""hi"" \\ there",true,2024-01-01T00:00:00.5Z\n'
    "2024-01-01T00:00:00.000000001Z,B,9223372036854775807,inf,-12345678901234567890.000000001,é ✓,false,\n"
    "2024-01-01T00:00:01.123456789Z,B,0,-0.0,NA,NA,NA,NA\n"
    '2024-01-01T00:00:02Z,A,12,NaN,7,"tab\there",TRUE,1999-12-31T23:59:59.999999999Z\n'
    "2024-01-01T00:00:03Z,B,,-inf,,,,\n"
)
QUERY = "PATTERN SEQ(A a, B b) WITHIN 5 s"


@pytest.fixture
def kinds_csv(tmp_path: Path) -> Path:
    path = tmp_path / "kinds.csv"
    path.write_text(KINDS_CSV, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "schema", [None, {"d": "decimal", "f": "float", "b": "bool", "t": "time"}, {"i": "str", "d": "float"}]
)
@pytest.mark.parametrize("show", [None, ["s", "d"], []])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_every_kind_of_text_value_gives_the_events_line(
    kinds_csv: Path, schema: dict[str, str] | None, show: list[str] | None, fmt: str
) -> None:
    single, batched, batches = _lines(fmt, query=QUERY, data=kinds_csv, schema=schema, show=show)
    assert batches >= 1 and len(single) == 4
    assert batched == single
    whole, found, _ = _tables(query=QUERY, data=kinds_csv, schema=schema, show=show)
    assert found.equals(whole) and found.num_rows == 4
    if show is None and fmt == "jsonl":
        first = json.loads(single[0], parse_float=Decimal)
        assert first["a"]["s"] == 'say "hi" \\ there' and first["b"]["s"] == "é ✓"
    if show is None and fmt == "csv":  # a.s quoted (its quotes doubled), b.s as it is
        assert '"say ""hi"" \\ there"' in single[0] and ",é ✓," in single[0]


def test_every_arrow_type_gives_the_events_line(tmp_path: Path) -> None:
    """Parquet's own types: durations, decimals, nested lists and structs, timestamps,
    unsigned and small integers, each with a missing value."""
    n = 6
    table = pa.table(
        {
            "ts": pa.array([0, 1, 1, 2, 10**9 + 1, 3 * 10**9], pa.timestamp("ns", tz="UTC")),
            "type": ["A", "B", "A", "B", "B", "B"],
            "dur": pa.array([1, -1_500_000_000, None, 0, 10**9, 2], pa.duration("ns")),
            "dec": pa.array([Decimal("1.50"), None, Decimal("-0.01"), Decimal("3"), Decimal("0"), None]),
            "lst": pa.array([[1, 2], None, [], [3], [None], [4]]),
            "st": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": '"'}, {"x": 2, "y": ""}] + [None] * 2),
            "u8": pa.array([0, 255, None, 1, 2, 3], pa.uint8()),
            "stamp": pa.array([0, None, 10**18, -1, 5, 6], pa.timestamp("us")),
            "f32": pa.array([0.1, None, float("inf"), 2.5, float("nan"), -1.0], pa.float32()),
            "big": pa.array(["x" * 100, "y", None, "\x00\x1f\x7f", "", "ok"], pa.large_string()),
        }
    )
    assert table.num_rows == n
    path = tmp_path / "kinds.parquet"
    pq.write_table(table, path)
    for fmt in ("jsonl", "csv"):
        for show in (None, ["dur", "lst", "big"]):
            single, batched, batches = _lines(fmt, query=QUERY, data=path, show=show)
            assert batches >= 1 and len(single) >= 5
            assert batched == single
            whole, found, _ = _tables(query=QUERY, data=path, show=show)
            assert found.equals(whole)


def test_times_at_the_edges_of_int64_give_the_events_line(tmp_path: Path) -> None:
    """Times a nanosecond from int64's edges, before 1970 and after, whole seconds and
    fractions (each digit cut where its zeros trail), missing, and days a few apart or
    centuries apart, in the time column and another one."""
    low, high = -(2**63) + 1, 2**63 - 1
    ts = [low, low + 1, -1_000_000_001, -1, 0, 10**9, 1_500_000_000_000_000_000, high - 1, high]
    at = [high, None, low, -(10**9), 1, 10**12 + 10**8, 86_399_999_999_999, 951_782_400 * 10**9, 10**17 + 5]
    table = pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("ns", tz="UTC")),
            "type": ["A", "B", "A", "B", "A", "B", "A", "A", "B"],
            "at": pa.array(at, pa.timestamp("ns")),
        }
    )
    path = tmp_path / "edges.parquet"
    pq.write_table(table, path)
    for fmt in ("jsonl", "csv"):
        for query in ("PATTERN SEQ(A a, B b) WITHIN 5 s", "PATTERN SEQ(A a, B b) WITHIN 40000 days"):
            single, batched, batches = _lines(fmt, query=query, data=path)
            assert batches >= 1 and single
            assert batched == single
        if fmt == "jsonl":
            assert json.loads(single[-1])["b"]["ts"] == "2262-04-11T23:47:16.854775807Z"
        else:
            assert single[-1].split(",")[-3] == "2262-04-11T23:47:16.854775807Z"  # b.ts, b.type, b.at


def test_several_queries_lines_say_their_query_as_the_events_lines_do(
    kinds_csv: Path, tmp_path: Path
) -> None:
    queries = {"first": QUERY, "second": "PATTERN OR(SEQ(A a, B b), SEQ(B c, A d)) WITHIN 2 s"}
    out = _named_run(tmp_path, queries, kinds_csv, "jsonl")
    result = cepcli.find(queries, kinds_csv)
    assert isinstance(result, ManyMatches)
    want = []
    for name, match in result.raw():
        line = match_line(match, result.schema, variables(result.patterns[name]))
        want.append('{"query":' + json.dumps(name) + "," + line[1:] + "\n")
    assert out.read_text(encoding="utf-8").splitlines(keepends=True) == want
    assert {json.loads(line)["query"] for line in want} == set(queries)


@pytest.mark.parametrize("show", [None, ["s", "d"]])
def test_matches_whose_events_were_made_before_give_the_events_lines(
    kinds_csv: Path, show: list[str] | None
) -> None:
    """Rows held as events made before (``Columns.values`` None, as a Spark shard's): the
    jsonl and csv lines and the typed table are still the events' own."""
    result = _find(query=QUERY, data=kinds_csv, show=show)
    job, keep = result.run, result._keep
    founds = [item for _, item in job.found() if isinstance(item, Found)]
    assert founds
    made = [replace(f, data=replace(f.data, values=None)) for f in founds]
    matches = [m for f in founds for m in f.matches()]
    for fmt in ("jsonl", "csv"):
        writer, stream = _writer(fmt, job, keep)
        single = []
        for match in matches:
            writer.write(("q", match))
            single.append(stream.getvalue())
            stream.seek(0)
            stream.truncate()
        texts = [writer.add_found(("q", f))[0].to_pybytes().decode("utf-8") for f in made]
        assert "".join(texts) == "".join(single) and len(single) == 4
    each = Results(job.schema, {None: job.pattern}, result.show)
    for match in matches:
        each.add(match)
    batched = Results(job.schema, {None: job.pattern}, result.show)
    for f in made:
        batched.add_found(f)
    assert batched.table().equals(each.table())


def test_several_queries_parquet_is_the_table_of_the_events(kinds_csv: Path, tmp_path: Path) -> None:
    """A named run's ``--format parquet`` file, and the API's ``to_arrow`` (their matches
    added from columns), are the table made match by match: the ``query`` column, each
    query's variables, those of the other queries (and of an OR branch that does not bind
    them) null; a Kleene variable's list."""
    queries = {
        "first": QUERY,
        "second": "PATTERN OR(SEQ(A a, B b), SEQ(B c, A d)) WITHIN 2 s",
        "third": "PATTERN SEQ(A e, B+ f[]) WHERE skip_till_next_match WITHIN 5 s",
    }
    out = _named_run(tmp_path, queries, kinds_csv, "parquet")
    result = cepcli.find(queries, kinds_csv)
    assert isinstance(result, ManyMatches)
    each = Results(result.schema, dict(result.patterns))  # (match by match)
    for name, match in result.raw():
        each.add(match, name)
    want = each.table()
    got = pq.read_table(out)
    assert got.equals(pq.read_table(_written(want, tmp_path / "want.parquet")))
    assert set(got.column("query").to_pylist()) == set(queries) and got.num_rows == want.num_rows
    assert cepcli.find(queries, kinds_csv).to_arrow().equals(want)  # (the API's, from columns too)


def _named_run(where: Path, queries: dict[str, str], data: Path, fmt: str, *extra: str) -> Path:
    """``cepcli run`` of a directory of the queries (a ``.sase`` file each, named by its
    query) over ``data`` in format ``fmt``: the file it wrote."""
    rules = where / "rules"
    rules.mkdir()
    for name, query in queries.items():
        (rules / f"{name}.sase").write_text(query + "\n")
    out = where / f"out.{fmt}"
    done = cli(["run", str(rules), "-i", str(data), *extra, "--format", fmt, "-q", "-o", str(out)])
    assert done.returncode == 0, done.stderr
    return out


def _written(table: pa.Table, path: Path) -> Path:
    pq.write_table(table, path)
    return path


def test_several_queries_csv_rows_say_their_query_as_the_events_rows_do(tmp_path: Path) -> None:
    """A named run's csv: the ``query`` column (a name with a comma quoted), then every
    query's variables' cells, those of the other queries' variables (and of a variable an
    OR branch does not bind) empty; the cells that hold a comma, a quote or a newline quoted
    as Python's ``csv`` quotes them, also where a Kleene run's values are joined."""
    text = (
        "ts,type,s,n\n"
        '1,A,"x,y",1\n'
        '2,B,"say ""hi""",2.0\n'
        '3,B,"two\nlines",-0.0\n'
        '4,A,"back\rslash\\",\n'
        '5,B,"plain,semi;",inf\n'
    )
    data = tmp_path / "quoted.csv"
    data.write_text(text, encoding="utf-8")
    queries = {
        "first,one": QUERY,
        "second": "PATTERN OR(SEQ(A a, B b), SEQ(B c, A d)) WITHIN 2 s",
        "third": "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match WITHIN 5 s",
    }
    out = _named_run(tmp_path, queries, data, "csv", "--time-unit", "s")
    result = cepcli.find(queries, data, time_unit="s")
    assert isinstance(result, ManyMatches)
    flat = ManyFlat(result.schema, dict(result.patterns))
    cells = [flat.columns] + [flat.row(name, match) for name, match in result.raw()]
    got = out.read_bytes().decode("utf-8")  # (not read_text: a cell's \r stays a \r)
    lines = CsvLines()
    assert got == "".join(lines.line(row) for row in cells)
    rows = list(csv.reader(io.StringIO(got, newline="")))  # (read back: the cells, \r and \n in them)
    assert rows == [[str(cell) for cell in row] for row in cells]
    assert {row[0] for row in rows[1:]} == set(queries)
    assert '"two\nlines"' in got and '"back\rslash\\"' in got and '"x,y"' in got and '"say ""hi"""' in got
    assert any(";" in cell and "," in cell for row in rows for cell in row)  # a run's joined cell


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize(
    "values",
    [
        [12.0, -0.0, float("inf"), float("nan"), None, float("-inf"), 2.0**53 + 2, -(1e15) + 1, 0.0],
        [12.0, 0.5, -0.0, None, 1e16, float("nan")],  # a fraction, 1e16: value by value
        [None, None, None, None],
    ],
)
def test_floats_give_the_events_line(tmp_path: Path, values: list[float | None], fmt: str) -> None:
    """Floats that are whole numbers are written as Python writes them (``12.0``, ``-0.0``,
    infinities, NaN and null missing), by Arrow's kernels; a column with a fraction or a
    larger number, value by value: the lines are the events' lines either way."""
    n = len(values)
    table = pa.table(
        {
            "ts": pa.array(range(n), pa.int64()),
            "type": ["AB"[i % 2] for i in range(n)],
            "x": pa.array(values, pa.float64()),
            "y": pa.array(values, pa.float32()),
        }
    )
    path = tmp_path / "floats.parquet"
    pq.write_table(table, path)
    single, batched, batches = _lines(fmt, query="PATTERN SEQ(A a, B b) WITHIN 5 s", data=path, time_unit="s")
    assert batches >= 1 and single
    assert batched == single
    whole, found, _ = _tables(query="PATTERN SEQ(A a, B b) WITHIN 5 s", data=path, time_unit="s")
    assert found.equals(whole)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_max_matches_cuts_inside_a_slice_and_the_file_ends_with_a_whole_line(
    kinds_csv: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / f"out.{fmt}"
    everything = cli(["run", "-e", QUERY, "-i", str(kinds_csv), "--format", fmt, "-q"])
    assert everything.returncode == 0
    done = cli(
        [
            "run",
            "-e",
            QUERY,
            "-i",
            str(kinds_csv),
            "--format",
            fmt,
            "-q",
            "--max-matches",
            "3",
            "-o",
            str(out),
        ]
    )
    assert done.returncode == 0, done.stderr
    header = 1 if fmt == "csv" else 0  # (no cell of these rows holds a newline)
    assert out.read_bytes() == b"".join(everything.stdout.splitlines(keepends=True)[: header + 3])


@pytest.mark.parametrize("show", [None, ["s", "d"]])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_kleene_run_s_line_is_the_events_line(kinds_csv: Path, show: list[str] | None, fmt: str) -> None:
    """A Kleene variable's run (skip-till-next-match: the columnar engine's one run per
    start) is written as the JSON array of its events (csv: each cell its events' values
    joined with ``;``), as the events' line has it."""
    query = "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match WITHIN 5 s"
    single, batched, batches = _lines(fmt, query=query, data=kinds_csv, show=show)
    assert batches >= 1 and single
    assert batched == single
    whole, found, _ = _tables(query=query, data=kinds_csv, show=show)
    assert found.equals(whole) and found.num_rows == len(single)
    if fmt == "jsonl":
        assert any(len(json.loads(line)["b"]) > 1 for line in single)
    else:
        width = 1 + (8 if show is None else 2)  # (a's cells: its row, then its columns)
        assert any(";" in next(csv.reader([line]))[width] for line in single)  # b._row: its rows


@pytest.mark.parametrize(
    "cells",
    [
        ["+5", " 7 ", "007", "-0", "NA", "", "-9223372036854775808", "9223372036854775807"],
        ["1", "99999999999999999999", "2", "NA", "3", "4", "5", "6"],  # past int64: value by value
        ["1", "\u0663", "2", "3", "NA", "4", "5", "6"],  # an Arabic-Indic 3: Python's digit, not Arrow's
    ],
)
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_text_a_query_does_not_read_gives_the_events_line(tmp_path: Path, cells: list[str], fmt: str) -> None:
    """Columns no condition reads stay text until written, typed then by their kind: an
    integer's text (signs, blanks, zeros, int64's ends, a null marker), a time's text. The
    lines made from columns are the events' lines, byte for byte."""
    rows = ["ts,type,n,when"]
    for i, cell in enumerate(cells):
        when = "NA" if i == 3 else f"2024-01-01 00:00:0{i}"
        rows.append(f'{i},{"AB"[i % 2]},"{cell}",{when}')
    path = tmp_path / "text.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    single, batched, batches = _lines(fmt, query=QUERY, data=path, null_values=["NA"])
    assert batches >= 1 and single
    assert batched == single
