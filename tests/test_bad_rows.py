"""``--on-bad-row fail|skip``: every kind of bad row, with both modes and every engine.

``fail`` (the default) stops at the first bad row with one error line naming it (the
0-based data row, as in matches) and exit code 1, after the matches found in the rows
before it were written. ``skip`` leaves bad rows out: the matches are those of the same
file with the bad rows removed by hand (row ids mapped back to the file's), the stats
count them as ``bad_rows``, and one warning line names the first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli
from cepcli.engines import ENGINE_NAMES

QUERY = "PATTERN SEQ(A a, B b, C c)\nWHERE a.price < c.price\nWITHIN 10\n"
HEADER = "ts,type,price"
# Row 4 is replaced by a bad row; with --chunk-rows 4 it opens the second chunk, after
# the column kinds were decided (price is numeric). Rows 0-2 match before it.
GOOD = ["0,A,1", "1,B,2", "2,C,3", "3,X,0", "4,X,0", "5,A,2", "6,B,3", "7,C,9", "8,C,1"]
BAD_AT = 4

# kind -> (the bad row, what the error says about it). Each would change the matches if
# it were read (as a C at row 4 with price 9 it would complete a=0, b=1).
BAD_ROWS = {
    "too-many-fields": ("4,C,9,7", "4 fields where 3 are expected"),
    "too-few-fields": ("4,C", "2 fields where 3 are expected"),
    # a byte that is not UTF-8 (written as the surrogate that stands for it) in a row of the
    # wrong width: pyarrow cannot hand such a row to its handler
    "too-many-fields-not-utf8": ("4,C,\udcff9,7", "4 fields where 3 are expected"),
    "unparsable-time": ("x,C,9", "cannot read timestamp 'x' as a number of seconds"),
    "missing-time": (",C,9", "missing timestamp in column 'ts'"),
    "text-in-numeric-column": (
        "4,C,abc",
        "column 'price' holds 'abc', which is not an integer (int64) (the column's kind, read from"
        " the first 9 rows; to read it as text, give --schema price:str)",
    ),
    "time-goes-back": (
        "1,C,9",
        "timestamp '1' is earlier than the previous row's '3'"
        " (the input must be in time order; pass --sort to sort it, or --max-delay 5min to take"
        " rows up to 5 minutes late)",
    ),
}


def _csv(lines: list[str]) -> str:
    return "\n".join([HEADER, *lines]) + "\n"


def _invoke(args: list[str]) -> Result:
    result = CliRunner().invoke(cli, args)
    assert "Traceback" not in result.output and "internal error" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _matches(stdout: str, ids: list[int] | None = None) -> set[tuple[int, ...]]:
    """Each jsonl match as its row ids (a, b, c); ``ids`` maps rows of a cleaned file back."""
    out = set()
    for line in stdout.splitlines():
        obj = json.loads(line)
        rows = tuple(int(obj[v]["_row"]) for v in ("a", "b", "c"))
        out.add(tuple(ids[r] for r in rows) if ids is not None else rows)
    return out


def _run(tmp_path: Path, lines: list[str], *extra: str, name: str = "in.csv") -> Result:
    query, data = tmp_path / "q.sase", tmp_path / name
    query.write_text(QUERY)
    data.write_text(_csv(lines), errors="surrogateescape")
    return _invoke(["run", str(query), "-i", str(data), "--format", "jsonl", "--chunk-rows", "4", *extra])


def _with_bad(kind: str) -> list[str]:
    lines = list(GOOD)
    lines[BAD_AT] = BAD_ROWS[kind][0]
    return lines


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
def test_fail_names_the_row_after_writing_earlier_matches(tmp_path: Path, kind: str) -> None:
    for mode in ([], ["--on-bad-row", "fail"]):
        result = _run(tmp_path, _with_bad(kind), "-q", *mode)
        assert result.exit_code == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines == [f"cepcli: error: {tmp_path / 'in.csv'}: row {BAD_AT}: {BAD_ROWS[kind][1]}"], lines
        assert _matches(result.stdout) == {(0, 1, 2)}


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
def test_skip_gives_the_matches_of_the_file_without_the_bad_row(tmp_path: Path, kind: str) -> None:
    stats = tmp_path / "stats.json"
    result = _run(tmp_path, _with_bad(kind), "-q", "--on-bad-row", "skip", "--stats-json", str(stats))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"warning: skipped 1 bad row (first: row {BAD_AT}: {BAD_ROWS[kind][1]})"
    ]
    kept = [i for i in range(len(GOOD)) if i != BAD_AT]
    clean = _run(tmp_path, [GOOD[i] for i in kept], "-q", name="clean.csv")
    assert clean.exit_code == 0, clean.stderr
    expected = _matches(clean.stdout, kept)
    assert expected == {(0, 1, 2), (0, 1, 7), (0, 6, 7), (5, 6, 7)}
    assert _matches(result.stdout) == expected
    numbers = json.loads(stats.read_text())
    assert numbers["bad_rows"] == 1
    assert numbers["events"] == len(GOOD) - 1
    assert numbers["warnings"] == [f"skipped 1 bad row (first: row {BAD_AT}: {BAD_ROWS[kind][1]})"]


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_every_engine_fails_and_skips_alike(tmp_path: Path, engine: str) -> None:
    """Several bad rows of different kinds, in both chunks; lazy engines measure their
    order over the same rows the run reads."""
    lines = list(GOOD)
    lines[1:1] = ["1,B,2,2"]  # row 1: too many fields
    lines[6:6] = ["4,C"]  # row 6: too few
    lines.append("2,C,99")  # row 11: back in time
    bad = [1, 6, 11]
    fail = _run(tmp_path, lines, "-q", "--engine", engine)
    assert fail.exit_code == 1
    assert "row 1: 4 fields where 3 are expected" in fail.stderr
    assert len(fail.stderr.strip().splitlines()) == 1
    assert fail.stdout == ""  # nothing before row 1 completes a match
    stats = tmp_path / "stats.json"
    skip = _run(tmp_path, lines, "--engine", engine, "--on-bad-row", "skip", "--stats-json", str(stats))
    assert skip.exit_code == 0, skip.stderr
    kept = [i for i in range(len(lines)) if i not in bad]
    clean = _run(tmp_path, [lines[i] for i in kept], "-q", "--engine", engine, name="clean.csv")
    assert _matches(skip.stdout) == _matches(clean.stdout, kept) != set()
    assert json.loads(stats.read_text())["bad_rows"] == 3
    warnings = [line for line in skip.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: skipped 3 bad rows (first: row 1: 4 fields where 3 are expected)"]
    assert "bad rows skipped" in skip.stderr  # the stats panel


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_fail_writes_the_matches_before_the_bad_row_in_its_chunk(tmp_path: Path, engine: str) -> None:
    """The bad row is in the first chunk: the rows before it are still evaluated."""
    result = _run(tmp_path, _with_bad("too-many-fields"), "-q", "--engine", engine, "--chunk-rows", "100")
    assert result.exit_code == 1
    assert f"row {BAD_AT}: 4 fields" in result.stderr
    assert _matches(result.stdout) == {(0, 1, 2)}


def test_time_going_back_under_skip_is_judged_against_the_latest_row_kept(tmp_path: Path) -> None:
    """A row earlier than the latest kept timestamp is skipped, also after a skipped row."""
    lines = ["0,A,1", "5,B,2", "3,C,3", "4,C,4", "6,C,5"]
    stats = tmp_path / "stats.json"
    result = _run(tmp_path, lines, "-q", "--on-bad-row", "skip", "--stats-json", str(stats))
    assert result.exit_code == 0, result.stderr
    assert _matches(result.stdout) == {(0, 1, 4)}
    assert json.loads(stats.read_text())["bad_rows"] == 2
    assert "first: row 2: timestamp '3' is earlier than the previous row's '5'" in result.stderr
    assert "row 1's" not in result.stderr
    # With --sort nothing is out of order, so nothing is bad.
    result = _run(tmp_path, lines, "-q", "--on-bad-row", "skip", "--sort", "--stats-json", str(stats))
    assert json.loads(stats.read_text())["bad_rows"] == 0
    assert "warning" not in result.stderr


def test_skipped_row_holds_no_time_for_the_order_check(tmp_path: Path) -> None:
    """The row after a skipped one is compared with the latest row kept, named."""
    lines = ["0,A,1", "5,B,2", "x,C,3", "4,C,4", "6,C,5"]
    stats = tmp_path / "stats.json"
    result = _run(tmp_path, lines, "--on-bad-row", "skip", "--stats-json", str(stats))
    assert json.loads(stats.read_text())["bad_rows"] == 2
    assert "first: row 2: cannot read timestamp 'x' as a number of seconds" in result.stderr
    assert _matches(result.stdout) == {(0, 1, 4)}


def test_quoted_fields_may_hold_delimiters_and_line_breaks(tmp_path: Path) -> None:
    """Field counting follows the quotes: one row spans two lines; a stray quote inside an
    unquoted field is text."""
    lines = ['0,"A",1', '1,B,"2"', '2,C,"3,0"', '3,X,"a\nb"', '4,X,5" screen', "5,C,9"]
    stats = tmp_path / "stats.json"
    result = _run(tmp_path, lines, "-q", "--on-bad-row", "skip", "--stats-json", str(stats))
    assert result.exit_code == 0, result.stderr
    numbers = json.loads(stats.read_text())
    assert numbers["bad_rows"] == 0 and numbers["events"] == 6
    assert _matches(result.stdout) == {(0, 1, 2), (0, 1, 5)}  # price holds text: compared as strings


def test_file_level_errors_still_fail_under_skip(tmp_path: Path) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "latin.csv"
    query.write_text(QUERY)
    data.write_bytes(b"ts,type,price\n0,A,1\n1,B,2\n2,C,3\n3,X,caf\xe9\n")
    result = _invoke(["run", str(query), "-i", str(data), "-q", "--on-bad-row", "skip"])
    assert result.exit_code == 1
    assert "not valid UTF-8" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    data.write_text("ts,kind,price\n0,A,1\n")
    result = _invoke(["run", str(query), "-i", str(data), "-q", "--on-bad-row", "skip"])
    assert result.exit_code == 1 and "no type column 'type'" in result.stderr


def test_bench_skips_and_warns(tmp_path: Path) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(QUERY)
    data.write_text(_csv(_with_bad("too-few-fields")))
    out = tmp_path / "bench.json"
    args = ["bench", str(query), "-i", str(data), "--engines", "eager,chain,tree", "--repeat", "1"]
    result = _invoke([*args, "--on-bad-row", "skip", "--json", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "warning: skipped 1 bad row (first: row 4: 2 fields where 3 are expected" in result.stderr
    numbers = json.loads(out.read_text())
    assert numbers["bad_rows"] == 1 and {c["matches"] for c in numbers["cells"]} == {4}
    result = _invoke(args)
    assert result.exit_code == 1 and "row 4: 2 fields where 3 are expected" in result.stderr


def test_records_are_cut_at_unquoted_line_breaks_and_blank_lines_are_not_rows() -> None:
    import io

    from cepcli.sources.csv import CsvReader
    from cepcli.sources.options import InputOptions

    data = b'a,b\n  \n x,y\n\n1,2\r\n\t\r\n"q,\n",3\n5\n'
    reader = CsvReader(InputOptions("-"), stdin=io.BytesIO(data))
    batches = list(reader.batches())
    rows = [int(r) for b in batches for r in b.rows]
    values = [v for b in batches for v in zip(*(c.to_pylist() for c in b.columns), strict=True)]
    assert rows == [0, 1, 2]  # blank lines (only blanks) are no rows
    assert values == [(" x", "y"), ("1", "2"), ("q,\n", "3")]  # the quoted comma and line break are text
    assert [u for b in batches for u in b.unreadable] == [(3, "1 fields where 2 are expected")]


@pytest.mark.parametrize("compressed", [False, True])
def test_a_byte_not_utf8_far_into_a_file_is_named_by_its_row(tmp_path: Path, compressed: bool) -> None:
    """A byte that is not UTF-8 after megabytes of valid rows (many reads, many batches
    taken as valid before it): the error still names its row and column, in a plain file
    and in a gzip file alike."""
    import gzip

    rows = [f"{i},{'ABC'[i % 3]},{i}" for i in range(200_000)]
    bad = 170_000
    text = ("\n".join([HEADER, *rows[:bad]]) + "\n").encode() + b"170000,A,caf\xe9\n"
    text += ("\n".join(rows[bad + 1 :]) + "\n").encode()
    query, data = tmp_path / "q.sase", tmp_path / ("far.csv.gz" if compressed else "far.csv")
    query.write_text(QUERY)
    data.write_bytes(gzip.compress(text) if compressed else text)
    result = _invoke(["run", str(query), "-i", str(data), "-q"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {data}: row {bad}: the input is not valid UTF-8 (column 'price': byte b'\\xe9')"
    ]


def test_bad_rows_in_blocks_parsed_ahead_keep_their_row_ids(tmp_path: Path) -> None:
    """A file parsed a few blocks ahead of its rows (small blocks: ``--max-row-bytes``):
    rows of the wrong width and blank lines in many blocks are set apart with the ids they
    have in the file, and the matches are those of the file without them, as row by row."""
    import random

    rnd = random.Random(5)
    lines: list[str] = []
    kept: list[int] = []  # the file's row id of each row of the cleaned file
    bad: list[int] = []
    row = 0
    for t in range(3000):
        if rnd.random() < 0.02:
            lines.append(f"{t},A,1,extra")  # a bad row (4 fields): it has a row id
            bad.append(row)
            row += 1
        elif rnd.random() < 0.02:
            lines.append("")  # a blank line: no row at all
        else:
            lines.append(f"{t},{rnd.choice('ABCX')},{rnd.randrange(9)}")
            kept.append(row)
            row += 1
    stats = tmp_path / "stats.json"
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(QUERY)
    data.write_text(_csv(lines))
    small = ["--max-row-bytes", "2048", "--on-bad-row", "skip", "--stats-json", str(stats)]
    result = _invoke(["run", str(query), "-i", str(data), "--format", "jsonl", "-q", *small])
    assert result.exit_code == 0, result.stderr
    assert json.loads(stats.read_text())["bad_rows"] == len(bad) > 20
    first = f"row {bad[0]}: 4 fields where 3 are expected"
    assert result.stderr.strip().splitlines() == [f"warning: skipped {len(bad)} bad rows (first: {first})"]
    clean_lines = [line for line in lines if line and not line.endswith(",extra")]
    clean = _run(tmp_path, clean_lines, "-q", name="clean.csv")
    assert clean.exit_code == 0, clean.stderr
    expected = _matches(clean.stdout, kept)
    assert _matches(result.stdout) == expected and len(expected) > 100
