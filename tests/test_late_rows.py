"""Late rows within a bound (``--max-delay``, docs/semantics.md section 8): rows may come up
to the delay later than the latest time read; they are evaluated in stream order (time,
then arrival); a row later than that is a bad row. Every engine, files and a real pipe."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import cepcli
from cepcli.cli import cli
from tests.harness import run_engine
from tests.oracle import oracle
from tests.test_cases import ENGINES
from tests.test_streaming import _finish, _line, _start, _write

QUERY = "PATTERN SEQ(A a, B b, NOT C n, A c) WHERE a.x < b.x AND b.x >= c.x WITHIN 6"


def _shuffled(times: list[int], delay: int, seed: int) -> str:
    """Rows at ``times`` (sorted), each given an arrival up to ``delay`` after its time, and
    written in arrival order: none comes more than ``delay`` after a later time was read."""
    draw = random.Random(seed)
    rows = [(t, draw.choice("ABC"), draw.randrange(5)) for t in sorted(times)]
    arrival = sorted(range(len(rows)), key=lambda i: (rows[i][0] + draw.randint(0, delay), i))
    return "ts,type,x\n" + "".join(f"{rows[i][0]},{rows[i][1]},{rows[i][2]}\n" for i in arrival)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=2, max_size=18), st.integers(0, 5), st.integers(0, 10**6))
def test_rows_late_within_the_delay_give_the_stream_in_time_order(
    times: list[int], delay: int, seed: int
) -> None:
    """The oracle reads the file in stream order (time, then row, which is arrival): every
    engine with --max-delay finds its matches, never an error."""
    data = _shuffled(times, delay, seed)
    want = oracle(QUERY, data)
    for engine in ENGINES:
        assert run_engine(QUERY, data, engine, max_delay=str(delay))[0] == want, engine


def test_a_row_later_than_the_delay_is_a_bad_row(tmp_path: Path) -> None:
    """Row 3 (time 1) comes after time 4 was read: 3 later, over a delay of 2. ``fail``
    names it after the matches before it; ``skip`` leaves it out and counts it; a delay of
    3 takes it (inclusive)."""
    data = tmp_path / "in.csv"
    data.write_text("ts,type,x\n1,A,1\n4,B,5\n2,B,3\n1,B,7\n6,B,9\n")
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    args = ["run", "-e", query, "-i", str(data), "--format", "csv", "-q"]
    failed = CliRunner().invoke(cli, [*args, "--max-delay", "2"])
    assert failed.exit_code == 1
    assert failed.stderr.strip() == (
        f"cepcli: error: {data}: row 3: timestamp '1' comes later than --max-delay 2 allows: it is more"
        " than that before row 1's '4', the latest time read"
    )
    assert [line.split(",")[4] for line in failed.stdout.splitlines()[1:]] == ["2", "1"]  # b rows, by time
    skipped = CliRunner().invoke(cli, [*args, "--max-delay", "2s", "--on-bad-row", "skip"])
    assert skipped.exit_code == 0 and "skipped 1 bad row (first: row 3" in skipped.stderr
    assert [line.split(",")[4] for line in skipped.stdout.splitlines()[1:]] == ["2", "1", "4"]
    taken = CliRunner().invoke(cli, [*args, "--max-delay", "3000 ms"])
    assert taken.exit_code == 0
    assert [line.split(",")[4] for line in taken.stdout.splitlines()[1:]] == ["3", "2", "1", "4"]


def test_the_query_and_the_python_api_take_it_too(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("ts,type,x\n1,A,1\n4,B,5\n2,B,3\n")
    query = f"FROM '{data}' WITH (max_delay = '5 s') PATTERN SEQ(A a, B b) WITHIN 10"
    result = CliRunner().invoke(cli, ["run", "-e", query, "--format", "jsonl", "-q"])
    assert result.exit_code == 0 and [json.loads(x)["b"]["_row"] for x in result.stdout.splitlines()] == [
        2,
        1,
    ]
    found = cepcli.find("PATTERN SEQ(A a, B b) WITHIN 10", data, max_delay="5")
    assert [m["b"]["_row"] for m in found] == [2, 1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-delay", "5 min", "--sort"], "--sort sorts the whole input; --max-delay reorders rows"),
        (["--max-delay", "soon"], "--max-delay: 'soon' is not a length of time"),
    ],
)
def test_what_it_cannot_be_given_with(tmp_path: Path, args: list[str], message: str) -> None:
    data = tmp_path / "in.csv"
    data.write_text("ts,type\n1,A\n2,B\n")
    result = CliRunner().invoke(cli, ["run", "-e", "PATTERN SEQ(A a, B b) WITHIN 10", "-i", str(data), *args])
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_on_a_pipe_a_match_waits_for_the_delay_only(tmp_path: Path) -> None:
    """A then B, then a row 3 later: the match (A, B) cannot be preceded by a row to come
    once the latest time is more than the delay (2) past B; it is written then, with the
    pipe still open."""
    proc = _start(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 10", "--max-delay", "2")
    _write(proc, b"type,ts\nA,1\nB,2\n")
    _write(proc, b"X,5\n")  # 5 - 2 > 2: A and B are released, and the match with them
    line = _line(proc, 60)  # the match, before the pipe closes
    assert line is not None, "no match while the pipe was open"
    assert json.loads(line)["b"]["_row"] == 1
    out, _ = _finish(proc)
    assert out == b""
