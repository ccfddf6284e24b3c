"""The same input reads the same way whatever path it takes (a file, a pipe fed at once or
slowly, a DataFrame, an Arrow table), and an input or option cepcli cannot take is one clear
line naming it, never an internal error.

* A JSON-lines pipe has the fields of its first read, not only those of its first line: a
  field absent from the first line is a column whose first value decides its kind (as a
  column missing there is), so the pipe gives what the same file gives.
* A CSV pipe whose stray word and first fraction arrive in one read: the word is the bad
  row, and the fraction widens the column, as when the rows come one by one.
* Compact-date numbers in the time column (``YYYYMMDD``, ``YYYYMMDDhh``, as ``YYYYMMDDhhmm``
  already) get the warning that they are read as seconds.
* Options and inputs that used to crash: a ``--max-delay`` past int64 nanoseconds, a time
  column of durations or times of day, an Arrow ``string_view`` or run-end-encoded column,
  a DataFrame naming a column twice, ``time_unit='h'`` and ``chunk_rows=0``.
"""

from __future__ import annotations

import fcntl
import json
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import cepcli
from cepcli.errors import CepError, InputError, UsageError
from tests.forms import cli, error_lines

SEQ = "PATTERN SEQ(A a, B b) WITHIN 10"


def _run(args: list[str], stdin: bytes | None = None) -> tuple[list[dict[str, Any]], str, int]:
    done = cli(["run", *args, "--format", "jsonl", "-q"], stdin)
    err = done.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    return [json.loads(x) for x in done.stdout.decode().splitlines()], err, done.returncode


def _drained(fd: int, timeout: float = 60) -> None:
    """Wait until the reader has taken every byte written to the pipe ``fd`` (so the next
    write is a read of its own), and a moment more for it to handle them."""
    deadline = time.monotonic() + timeout
    while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]:
        assert time.monotonic() < deadline, "the reader does not read"
        time.sleep(0.01)
    time.sleep(0.1)


def _slowly(args: list[str], lines: list[bytes]) -> tuple[list[dict[str, Any]], str, int]:
    """``cepcli run ARGS -i -`` fed through a real pipe a line at a time, each line written
    once the reader has read the one before (each line a read of its own)."""
    cmd = [sys.executable, "-m", "cepcli", "run", *args, "-i", "-", "--format", "jsonl", "-q"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    for line in lines:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        _drained(proc.stdin.fileno())
    proc.stdin.close()
    out, err = proc.stdout.read(), proc.stderr.read()
    code = proc.wait(timeout=60)
    text = err.decode()
    assert "Traceback" not in text and "internal error" not in text, text
    return [json.loads(x) for x in out.decode().splitlines()], text, code


def _pairs(found: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [tuple(m[v]["_row"] for v in m) for m in found]  # type: ignore[index]


# --- 1. a JSON-lines pipe has the fields of its first read ----------------------------------------

JSONL = b"".join(
    json.dumps(r).encode() + b"\n"
    for r in (
        {"type": "A", "ts": 1},
        {"type": "B", "ts": 2, "x": 5},
        {"type": "B", "ts": 3, "x": 7, "note": "late"},
        {"type": "B", "ts": 4},
    )
)


@pytest.mark.parametrize(
    "query",
    [
        SEQ,
        "PATTERN SEQ(A a, B b) WHERE b.x > 6 WITHIN 10",
        "PATTERN SEQ(A a, B b) WHERE b.note = 'late' WITHIN 10",
    ],
)
def test_a_jsonl_pipe_has_the_fields_the_file_has(tmp_path: Path, query: str) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(JSONL)
    from_file, err, code = _run(["-e", query, "-i", str(path)])
    assert code == 0 and err == ""
    piped, err, code = _run(["-e", query, "-i", "-", "--input-format", "jsonl"], JSONL)
    assert code == 0, err
    assert piped == from_file
    if query == SEQ:
        assert [m["b"].get("x") for m in piped] == [5, 7, None]
        assert piped[1]["b"]["note"] == "late"
    else:
        assert _pairs(piped) == [(0, 2)]


def test_a_jsonl_field_absent_from_the_first_line_takes_its_first_values_kind() -> None:
    """A number compares as a number (``10 > 9``), not as text, and prints as one."""
    data = b'{"type":"C","ts":0}\n{"type":"A","ts":1,"y":10}\n{"type":"B","ts":2,"y":9}\n'
    query = "PATTERN SEQ(A a, B b) WHERE a.y > b.y WITHIN 10"
    found, err, code = _run(["-e", query, "-i", "-", "--input-format", "jsonl"], data)
    assert code == 0, err
    assert _pairs(found) == [(1, 2)]
    assert found[0]["a"]["y"] == 10


# --- 2. a CSV pipe: a stray word and the first fraction in one read ----------------------------------

CSV_ROWS = [b"type,ts,y", b"A,0,1", b"C,1,abc", b"B,2,2.5", b"B,3,3"]
CSV_QUERY = "PATTERN SEQ(A a, B b) WHERE b.y > a.y WITHIN 10"


def _csv_checks(found: list[dict[str, object]], err: str, code: int) -> None:
    assert code == 0, err
    assert _pairs(found) == [(0, 2), (0, 3)]
    assert found[0]["b"]["y"] == 2.5  # type: ignore[index]
    assert "skipped 1 bad row (first: row 1: column 'y' holds 'abc'" in err
    assert "column 'y' holds fractions from row 2 on: read as float from there" in err


def test_a_stray_word_and_a_fraction_in_one_read() -> None:
    found, err, code = _run(
        ["-e", CSV_QUERY, "-i", "-", "--on-bad-row", "skip"], b"\n".join(CSV_ROWS) + b"\n"
    )
    _csv_checks(found, err, code)


def test_a_stray_word_and_a_fraction_fed_slowly() -> None:
    found, err, code = _slowly(["-e", CSV_QUERY, "--on-bad-row", "skip"], CSV_ROWS)
    _csv_checks(found, err, code)


def test_a_stray_word_with_a_fraction_fails_at_the_word() -> None:
    """Under ``fail`` the word is the row named (not the fraction after it)."""
    found, err, code = _run(["-e", CSV_QUERY, "-i", "-"], b"\n".join(CSV_ROWS) + b"\n")
    assert code == 1 and found == []
    assert error_lines(err)[0].startswith("<stdin>: row 1: column 'y' holds 'abc', which is not")


# --- 3. compact dates in the time column --------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "shape", "time_format"),
    [
        ("20240304", "20240305", "YYYYMMDD", "%Y%m%d"),
        ("2024030410", "2024030411", "YYYYMMDDhh", "%Y%m%d%H"),
        ("202403041000", "202403041001", "YYYYMMDDhhmm", "%Y%m%d%H%M"),
        ("20240304100000", "20240304100001", "YYYYMMDDhhmmss", "%Y%m%d%H%M%S"),
    ],
)
def test_compact_dates_read_as_seconds_get_a_warning(
    tmp_path: Path, first: str, second: str, shape: str, time_format: str
) -> None:
    path = tmp_path / "in.csv"
    path.write_text(f"type,ts\nA,{first}\nB,{second}\n")
    # (read as seconds, 12 and 14 digits are past 2262: bad rows)
    _, err, code = _run(["-e", SEQ, "-i", str(path), "--on-bad-row", "skip"])
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("warning: the time column")]
    assert len(warnings) == 1, err
    assert warnings[0].startswith(f"warning: the time column 'ts' holds numbers like {first} that look")
    assert f"({shape})" in warnings[0] and f"--time-format {time_format} " in warnings[0]
    by_date, err, code = _run(
        ["-e", "PATTERN SEQ(A a, B b) WITHIN 1 day", "-i", str(path), "--time-format", time_format]
    )
    assert code == 0 and "look like dates" not in err
    assert len(by_date) == 1
    _, err, code = _run(["-e", SEQ, "-i", str(path), "--time-unit", "s", "--on-bad-row", "skip"])
    assert code == 0 and "look like dates" not in err


@pytest.mark.parametrize(
    "times",
    [
        ("1712010100", "1712010160"),  # epoch seconds (2024-04-01), shaped like a date of 1712
        ("10000000", "10000001"),  # a counter
        ("20240131", "20240132"),  # not every one a date
    ],
)
def test_numbers_that_are_no_compact_dates_get_no_warning(tmp_path: Path, times: tuple[str, str]) -> None:
    path = tmp_path / "in.csv"
    path.write_text(f"type,ts\nA,{times[0]}\nB,{times[1]}\n")
    found, err, code = _run(["-e", "PATTERN SEQ(A a, B b) WITHIN 100", "-i", str(path)])
    assert code == 0 and len(found) == 1 and err == ""


# --- 4. inputs and options that used to be internal errors ------------------------------------------

TABLE = pa.table({"type": ["A", "B"], "ts": [1, 2]})


def _find(data: object, query: str = SEQ, **options: Any) -> list[dict[str, Any]]:
    return list(cepcli.find(query, data, **options))


@pytest.mark.parametrize("delay", ["106752d", "1000000 days", "9223372037 s"])
def test_a_delay_past_int64_nanoseconds_is_a_usage_error(tmp_path: Path, delay: str) -> None:
    path = tmp_path / "in.csv"
    path.write_text("type,ts\nA,1\nB,2\n")
    for source, stdin in ((str(path), None), ("-", path.read_bytes())):
        _, err, code = _run(["-e", SEQ, "-i", source, "--max-delay", delay], stdin)
        assert code == 2, err
        assert error_lines(err) == [
            f"--max-delay: {delay!r} is longer than the longest delay, 106751 days (int64 nanoseconds)"
        ]
    with pytest.raises(UsageError, match=r"^max_delay=: .* is longer than the longest delay"):
        _find(TABLE, max_delay=delay)


def test_the_longest_delay_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("type,ts\nA,-9000000000\nB,2\nA,1\n")
    found, err, code = _run(["-e", SEQ, "-i", str(path), "--max-delay", "106751d"])
    assert code == 0, err
    assert _pairs(found) == [(2, 1)]


TIME_TYPES = [
    (pa.duration("s"), "duration[s]"),
    (pa.duration("ns"), "duration[ns]"),
    (pa.time64("us"), "time64[us]"),
    (pa.time32("s"), "time32[s]"),
]


@pytest.mark.parametrize(("type_", "shown"), TIME_TYPES)
def test_a_time_column_of_durations_or_times_of_day_is_refused(
    tmp_path: Path, type_: pa.DataType, shown: str
) -> None:
    table = pa.table({"type": ["A", "B"], "ts": pa.array([1, 2], type_)})
    want = f"the time column 'ts' holds {shown}"
    with pytest.raises(InputError, match=r"^<data>: " + want.replace("[", r"\[")):
        _find(table)
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    _, err, code = _run(["-e", SEQ, "-i", str(path)])
    assert code == 1
    lines = error_lines(err)
    stored = pq.read_schema(path).field("ts").type  # (Parquet keeps time32[s] as time32[ms])
    assert len(lines) == 1 and lines[0].startswith(f"{path}: the time column 'ts' holds {stored}"), err
    assert "--time-col" in lines[0]


def test_other_time_columns_of_an_arrow_table() -> None:
    """Text in a dictionary is read as text; a column of nulls only is missing times (bad
    rows); booleans are no times."""
    iso = pa.array(["2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z"]).dictionary_encode()
    assert len(_find(pa.table({"type": ["A", "B"], "ts": iso}))) == 1
    with pytest.raises(InputError, match=r"^<data>: row 0: missing timestamp in column 'ts'$"):
        _find(pa.table({"type": ["A", "B"], "ts": pa.nulls(2)}))
    with pytest.raises(InputError, match=r"^<data>: the time column 'ts' holds bool \(values that are not"):
        _find(pa.table({"type": ["A", "B"], "ts": [True, False]}))


def test_a_duration_column_that_is_not_the_time_still_works() -> None:
    table = TABLE.append_column("wait", pa.array([3, 4], pa.duration("s")))
    found = _find(table, "PATTERN SEQ(A a, B b) WHERE b.wait > 3 WITHIN 10")
    assert [m["b"]["_row"] for m in found] == [1]


@pytest.mark.parametrize(
    "column",
    [
        pa.array(["x", "y"], pa.string_view()),
        pa.array([b"x", b"y"], pa.binary_view()),
        pc.run_end_encode(pa.array(["x", "y"])),
        pc.run_end_encode(pa.array([7, 7])),
    ],
    ids=["string_view", "binary_view", "ree_text", "ree_int"],
)
def test_an_unread_view_or_run_end_encoded_column_just_works(column: pa.Array) -> None:
    table = TABLE.append_column("s", column)
    found = _find(table)
    assert len(found) == 1
    value = found[0]["b"]["s"]
    assert value == column.to_pylist()[1] or value == "y"
    read = _find(table, "PATTERN SEQ(A a, B b) WHERE a.s = b.s WITHIN 10")
    assert len(read) == (1 if column.to_pylist()[0] == column.to_pylist()[1] else 0)


def test_view_and_run_end_encoded_type_and_time_columns() -> None:
    table = pa.table(
        {
            "type": pa.array(["A", "B"], pa.string_view()),
            "ts": pc.run_end_encode(pa.array([1, 2])),
        }
    )
    assert len(_find(table)) == 1


@pytest.mark.parametrize("twice", ["x", "ts", "type"])
def test_a_data_frame_naming_a_column_twice(twice: str) -> None:
    frame = pd.DataFrame([["A", 1, 3, 5], ["B", 2, 4, 6]], columns=["type", "ts", "x", "y"])
    frame.columns = ["type", "ts", "x", twice]
    with pytest.raises(InputError) as caught:
        _find(frame)
    assert str(caught.value) == f"<data>: the data names a column twice ({twice})"


def test_a_data_frame_with_mixed_columns_naming_a_column_twice() -> None:
    frame = pd.DataFrame([["A", 1, "a", 5], ["B", 2, 4, 6]], columns=["type", "ts", "x", "x"])
    with pytest.raises(InputError, match=r"names a column twice \(x\)"):
        _find(frame)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time_unit": "h"}, "time_unit= is one of s, ms, us, ns (got 'h')"),
        ({"time_unit": "S"}, "time_unit= is one of s, ms, us, ns (got 'S')"),
        ({"chunk_rows": 0}, "chunk_rows= is a number of rows, 1 or more (got 0)"),
        ({"chunk_rows": -1}, "chunk_rows= is a number of rows, 1 or more (got -1)"),
        ({"chunk_rows": "10"}, "chunk_rows= is a number of rows, 1 or more (got '10')"),
    ],
)
def test_bad_option_values_of_find_name_the_valid_ones(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        _find(TABLE, **options)
    assert str(caught.value) == message


def test_bad_option_values_in_the_query(tmp_path: Path) -> None:
    """The query's ``WITH`` says the same as a query error (pointing at the option)."""
    path = tmp_path / "in.csv"
    path.write_text("type,ts\nA,1\nB,2\n")
    for option, says in (
        ("time_unit='h'", "the input option time_unit takes one of s, ms, us, ns"),
        ("chunk_rows=0", "the input option chunk_rows takes a whole number >= 1"),
    ):
        _, err, code = _run(["-e", f"FROM '{path}' WITH ({option}) {SEQ}"])
        assert code == 2 and says in err.splitlines()[0], err
        with pytest.raises(CepError, match=says):
            _find(path, f"FROM '{path}' WITH ({option}) {SEQ}")
