"""The columnar engine's jsonl lines made from columns (``cepcli.output.found_lines``): the
text of each match is, byte for byte and in the same order, the line ``match_line`` makes
from the match's events, for every kind of value an input can hold, with ``--show``, and
for several queries (each line saying its query); the CLI writes them so (``--max-matches``
cut inside a slice's matches included).

The property runs the model's generated streams (every time form, null markers, stray
words, int64 extremes) through the batch path and the match-by-match path of the same job;
the hand-written inputs hold what the generated ones do not: floats with infinities, exact
decimals, text that JSON escapes, booleans, durations, nested values, nanosecond times."""

from __future__ import annotations

import json
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
from cepcli.lines import found_lines
from cepcli.output import match_line, variables
from cepcli.runtime.columnar import Found
from tests.forms import cases, cli, write


def _lines(**arguments: Any) -> tuple[list[str], list[str], int]:
    """One query's lines twice, from two runs of ``cepcli.find(**arguments)``: match by
    match (``Run.matches``), and through ``Run.found`` (``found_lines`` where the columnar
    engine ran); and how many ``Found`` batches the second had."""
    result = _find(**arguments)
    job, keep = result.run, result._keep
    names = variables(job.pattern)
    single = [match_line(m, job.schema, names, keep) + "\n" for _, m in job.matches()]
    job = _find(**arguments).run
    batched: list[str] = []
    batches = 0
    for _, item in job.found():
        if isinstance(item, Found):
            batches += 1
            body, ends = found_lines(item, job.schema, names, keep)
            lines = body.to_pybytes().decode("ascii").splitlines(keepends=True)
            assert [len(line) for line in lines] == (ends - [0, *ends[:-1]]).tolist()
            batched += lines
        else:
            batched.append(match_line(item, job.schema, names, keep) + "\n")
    return single, batched, batches


def _find(**arguments: Any) -> Matches:
    result = cepcli.find(**arguments)
    assert isinstance(result, Matches)
    return result


@pytest.mark.parametrize("form", ["csv", "jsonl", "parquet", "frame"])
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_lines_made_from_columns_are_the_lines_of_the_events(
    form: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
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
    single, batched, _ = _lines(**arguments)
    assert batched == single


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
def test_every_kind_of_text_value_gives_the_events_line(
    kinds_csv: Path, schema: dict[str, str] | None, show: list[str] | None
) -> None:
    single, batched, batches = _lines(query=QUERY, data=kinds_csv, schema=schema, show=show)
    assert batches >= 1 and len(single) == 4
    assert batched == single
    first = json.loads(single[0], parse_float=Decimal)
    if show is None:
        assert first["a"]["s"] == 'say "hi" \\ there' and first["b"]["s"] == "é ✓"


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
    for show in (None, ["dur", "lst", "big"]):
        single, batched, batches = _lines(query=QUERY, data=path, show=show)
        assert batches >= 1 and len(single) >= 5
        assert batched == single


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
    for query in ("PATTERN SEQ(A a, B b) WITHIN 5 s", "PATTERN SEQ(A a, B b) WITHIN 40000 days"):
        single, batched, batches = _lines(query=query, data=path)
        assert batches >= 1 and single
        assert batched == single
    assert json.loads(single[-1])["b"]["ts"] == "2262-04-11T23:47:16.854775807Z"


def test_several_queries_lines_say_their_query_as_the_events_lines_do(
    kinds_csv: Path, tmp_path: Path
) -> None:
    queries = {"first": QUERY, "second": "PATTERN OR(SEQ(A a, B b), SEQ(B c, A d)) WITHIN 2 s"}
    out = tmp_path / "out.jsonl"
    rules = tmp_path / "rules"
    rules.mkdir()
    for name, text in queries.items():
        (rules / f"{name}.sase").write_text(text + "\n")
    done = cli(["run", str(rules), "-i", str(kinds_csv), "--format", "jsonl", "-q", "-o", str(out)])
    assert done.returncode == 0, done.stderr
    result = cepcli.find(queries, kinds_csv)
    assert isinstance(result, ManyMatches)
    want = []
    for name, match in result.raw():
        line = match_line(match, result.schema, variables(result.patterns[name]))
        want.append('{"query":' + json.dumps(name) + "," + line[1:] + "\n")
    assert out.read_text(encoding="utf-8").splitlines(keepends=True) == want
    assert {json.loads(line)["query"] for line in want} == set(queries)


def test_max_matches_cuts_inside_a_slice_and_the_file_ends_with_a_whole_line(
    kinds_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    everything = cli(["run", "-e", QUERY, "-i", str(kinds_csv), "--format", "jsonl", "-q"])
    assert everything.returncode == 0
    done = cli(
        [
            "run",
            "-e",
            QUERY,
            "-i",
            str(kinds_csv),
            "--format",
            "jsonl",
            "-q",
            "--max-matches",
            "3",
            "-o",
            str(out),
        ]
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == b"".join(everything.stdout.splitlines(keepends=True)[:3])


@pytest.mark.parametrize("show", [None, ["s", "d"]])
def test_a_kleene_run_s_line_is_the_events_line(kinds_csv: Path, show: list[str] | None) -> None:
    """A Kleene variable's run (skip-till-next-match: the columnar engine's one run per
    start) is written as the JSON array of its events, as the events' line has it."""
    query = "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match WITHIN 5 s"
    single, batched, batches = _lines(query=query, data=kinds_csv, show=show)
    assert batches >= 1 and single
    assert batched == single
    assert any(len(json.loads(line)["b"]) > 1 for line in single)


@pytest.mark.parametrize(
    "cells",
    [
        ["+5", " 7 ", "007", "-0", "NA", "", "-9223372036854775808", "9223372036854775807"],
        ["1", "99999999999999999999", "2", "NA", "3", "4", "5", "6"],  # past int64: value by value
        ["1", "\u0663", "2", "3", "NA", "4", "5", "6"],  # an Arabic-Indic 3: Python's digit, not Arrow's
    ],
)
def test_text_a_query_does_not_read_gives_the_events_line(tmp_path: Path, cells: list[str]) -> None:
    """Columns no condition reads stay text until written, typed then by their kind: an
    integer's text (signs, blanks, zeros, int64's ends, a null marker), a time's text. The
    lines made from columns are the events' lines, byte for byte."""
    rows = ["ts,type,n,when"]
    for i, cell in enumerate(cells):
        when = "NA" if i == 3 else f"2024-01-01 00:00:0{i}"
        rows.append(f'{i},{"AB"[i % 2]},"{cell}",{when}')
    path = tmp_path / "text.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    single, batched, batches = _lines(query=QUERY, data=path, null_values=["NA"])
    assert batches >= 1 and single
    assert batched == single
