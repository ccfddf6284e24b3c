"""A pipe is typed as it goes (issue 25): a column's kind comes from its first *present*
value, never from a missing one. A column that is empty, a null marker or NaN in the pipe's
first rows stays undecided until a value arrives; the time column likewise decides how
times are read from its first present time. Real processes and real pipes, each row written
and flushed on its own; the rule does not depend on how the rows fall into reads. Where the
first present value agrees with the file's sample, the same bytes from a file give the same
matches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

QUERY = "PATTERN SEQ(A a, B b) WHERE a.y > b.y WITHIN 5"


def _pipe(rows: list[str], *args: str, query: str = QUERY) -> tuple[list[dict[str, object]], str, int]:
    """Write ``rows`` one at a time, then close; the jsonl matches, standard error and the
    exit code."""
    cmd = [sys.executable, "-m", "cepcli", "run", "-e", query, "-i", "-", "--format", "jsonl", "-q", *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    for row in rows:
        proc.stdin.write(row.encode() + b"\n")
        proc.stdin.flush()
    proc.stdin.close()
    out, err = proc.stdout.read(), proc.stderr.read()
    code = proc.wait(timeout=60)
    return [json.loads(x) for x in out.decode().splitlines()], err.decode(), code


def _file(tmp_path: Path, rows: list[str], *args: str, query: str = QUERY) -> list[dict[str, object]]:
    path = tmp_path / "in.csv"
    path.write_text("\n".join(rows) + "\n")
    cmd = [
        sys.executable,
        "-m",
        "cepcli",
        "run",
        "-e",
        query,
        "-i",
        str(path),
        "--format",
        "jsonl",
        "-q",
        *args,
    ]
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(x) for x in done.stdout.splitlines()]


@pytest.mark.parametrize("first", ["", "NA", "NaN", "null"])
def test_a_missing_first_value_does_not_make_the_column_text(tmp_path: Path, first: str) -> None:
    """The issue's example: ``y`` empty (or a marker) in the first row. Read as text, '10' >
    '9' would be false and give no match."""
    rows = ["type,ts,y", f"C,0,{first}", "A,1,10", "B,2,9"]
    found, err, code = _pipe(rows)
    assert code == 0 and err == ""
    assert [(m["a"]["_row"], m["b"]["_row"]) for m in found] == [(1, 2)]  # type: ignore[index]
    assert found[0]["a"]["y"] == 10  # type: ignore[index]  # printed as the number it is
    assert found == _file(tmp_path, rows)


def test_a_null_marker_never_equals_itself_on_a_pipe() -> None:
    found, _, code = _pipe(
        ["type,ts,y", "A,1,NaN", "B,2,NaN", "A,3,NA", "B,4,NA"], query=QUERY.replace(">", "=")
    )
    assert code == 0 and found == []


def test_the_first_present_value_decides_and_a_later_stray_word_is_a_bad_row() -> None:
    rows = ["type,ts,y", "C,0,", "C,1,NA", "A,2,10", "B,3,9", "B,4,abc"]
    found, err, code = _pipe(rows)
    assert [m["b"]["_row"] for m in found] == [3]  # type: ignore[index]  # written before the bad row
    assert code == 1
    assert err.strip() == (
        "cepcli: error: <stdin>: row 4: column 'y' holds 'abc', which is not an integer (int64) (the"
        " column's kind, read from its first value, row 2 (on a pipe, a column's first value); to read"
        " it as text, give --schema y:str)"
    )


def test_a_first_word_makes_the_column_text_on_a_pipe() -> None:
    """The rule is the first present value's (a pipe cannot look ahead): here a word, so the
    column is text and '10' > '9' is false, as ``--schema y:str`` would make it."""
    found, _, code = _pipe(["type,ts,y", "C,0,", "C,1,word", "A,2,10", "B,3,9"])
    assert code == 0 and found == []


def test_a_whole_number_column_meeting_a_fraction_widens_and_prints_as_float() -> None:
    rows = ["type,ts,y,z", "C,0,,", "A,1,10,1", "B,2,9.5,2.5", "B,3,9,3"]
    found, err, code = _pipe(rows)
    assert code == 0
    assert [m["b"]["_row"] for m in found] == [2, 3]  # type: ignore[index]
    assert "column 'y' holds fractions from row 2 on: read as float from there" in err
    assert found[1]["b"]["z"] == 3.0  # type: ignore[index]  # a column the query does not read, widened too


def test_a_pipes_first_time_missing_decides_nothing() -> None:
    """The time column's first row has no time (a bad row, skipped); the ISO times after it
    are read as times, not as numbers."""
    rows = ["type,ts,y", "C,,1", "A,2024-01-01T00:00:01Z,10", "B,2024-01-01T00:00:02Z,9"]
    found, err, code = _pipe(rows, "--on-bad-row", "skip")
    assert code == 0, err
    assert [(m["a"]["_row"], m["b"]["_row"]) for m in found] == [(1, 2)]  # type: ignore[index]
    assert "skipped 1 bad row (first: row 0: missing timestamp" in err


def test_a_date_time_after_missing_values_is_text_with_a_warning() -> None:
    """Conditions are compiled before the value arrives, so a date-time column that starts
    empty on a pipe is read as text, and the warning says how to read it as a time."""
    query = "PATTERN SEQ(A a, B b) WHERE a.d < b.d WITHIN 5"
    rows = ["type,ts,d", "C,0,", "A,1,2024-01-01T00:00:00Z", "B,2,2024-01-02T00:00:00Z"]
    found, err, code = _pipe(rows, query=query)
    assert code == 0 and len(found) == 1
    assert "column 'd' had no value in the pipe's first row" in err and "--schema d:time" in err
