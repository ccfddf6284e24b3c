"""A row longer than ``MAX_RECORD_BYTES`` (``--max-row-bytes``) is a bad row, read past
without being held in memory.

The limit is made small here (1,000 bytes, and blocks of 256 bytes so that a long row
spans many reads), so the rows are small too. ``fail`` names the row after writing the
matches before it; ``skip`` reads on at the next record, with the row ids of the file.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import cepcli.sources.csv as csv
from cepcli.cli import cli
from cepcli.errors import InputError
from cepcli.sources.csv import _Records, split_records
from tests.test_bad_rows import _matches

QUERY = "PATTERN SEQ(A a, B b, C c)\nWHERE a.price < c.price\nWITHIN 10\n"
HEADER = "ts,type,price"
GOOD = ["0,A,1", "1,B,2", "2,C,3", "3,X,0", "4,X,0", "5,A,2", "6,B,3", "7,C,9", "8,C,1"]
BAD_AT = 4  # opens the second chunk with --chunk-rows 4
LIMIT = 1000
BLOCK = 256

# Each would complete a=0, b=1 if it were read (a C with a price above 1).
HUGE = {
    "unquoted": "4,C,9." + "0" * 5000,
    "quoted": '4,C,"9.' + "0" * 5000 + '"',
    "quoted-with-line-breaks": '4,C,"9' + '\n\r\n,""0' * 1000 + '"',
}
INPUTS = ("file", "gz", "stdin")


@pytest.fixture(params=[BLOCK, 1 << 20], ids=["read-past", "in-one-block"])
def small_limit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """A 1,000-byte limit; blocks of 256 bytes (the long row is read past, a block at a
    time) or of 1 MiB (it is read whole, then left out)."""
    monkeypatch.setattr(csv, "MAX_RECORD_BYTES", LIMIT)
    monkeypatch.setattr(csv, "READ_BYTES", request.param)
    return int(request.param)


def _invoke(args: list[str], stdin: bytes | None = None) -> Result:
    result = CliRunner().invoke(cli, args, input=stdin)
    assert "Traceback" not in result.output and "internal error" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _run(tmp_path: Path, lines: list[str], how: str, *extra: str, name: str = "in") -> tuple[Result, str]:
    """Runs the query over the lines given as a file, a .gz file or standard input; the
    result and the name errors give the input."""
    query = tmp_path / "q.sase"
    query.write_text(QUERY)
    data = ("\n".join([HEADER, *lines]) + "\n").encode()
    args = ["run", str(query), "--format", "jsonl", "--chunk-rows", "4", *extra]
    if how == "stdin":
        return _invoke([*args, "-i", "-"], stdin=data), "<stdin>"
    path = tmp_path / (f"{name}.csv.gz" if how == "gz" else f"{name}.csv")
    path.write_bytes(gzip.compress(data) if how == "gz" else data)
    return _invoke([*args, "-i", str(path)]), str(path)


def _with_huge(kind: str) -> list[str]:
    lines = list(GOOD)
    lines[BAD_AT] = HUGE[kind]
    return lines


def _message(kind: str, line: int = BAD_AT + 2) -> str:
    size = len(HUGE[kind]) + 1  # with its line break
    return (
        f"row {BAD_AT}: the row is {size} bytes long (line {line} of the file;"
        f" the limit is {LIMIT} bytes, see --max-row-bytes)"
    )


@pytest.mark.parametrize("how", INPUTS)
@pytest.mark.parametrize("kind", sorted(HUGE))
def test_fail_names_the_huge_row_after_writing_earlier_matches(
    tmp_path: Path, small_limit: int, kind: str, how: str
) -> None:
    result, name = _run(tmp_path, _with_huge(kind), how, "-q")
    assert result.exit_code == 1, result.stderr
    assert result.stderr.strip().splitlines() == [f"cepcli: error: {name}: {_message(kind)}"]
    assert _matches(result.stdout) == {(0, 1, 2)}


@pytest.mark.parametrize("how", INPUTS)
@pytest.mark.parametrize("kind", sorted(HUGE))
def test_skip_reads_on_with_the_row_ids_of_the_file(
    tmp_path: Path, small_limit: int, kind: str, how: str
) -> None:
    stats = tmp_path / "stats.json"
    result, _ = _run(
        tmp_path, _with_huge(kind), how, "-q", "--on-bad-row", "skip", "--stats-json", str(stats)
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip().splitlines() == [f"warning: skipped 1 bad row (first: {_message(kind)})"]
    kept = [i for i in range(len(GOOD)) if i != BAD_AT]
    clean, _ = _run(tmp_path, [GOOD[i] for i in kept], "file", "-q", name="clean")
    expected = _matches(clean.stdout, kept)
    assert expected == {(0, 1, 2), (0, 1, 7), (0, 6, 7), (5, 6, 7)}
    assert _matches(result.stdout) == expected
    numbers = json.loads(stats.read_text())
    assert numbers["bad_rows"] == 1
    assert numbers["events"] == len(GOOD) - 1


def test_lines_and_rows_after_huge_rows_stay_those_of_the_file(tmp_path: Path, small_limit: int) -> None:
    """Two huge rows in a row, one of them many lines long, in one chunk and across
    chunks, and a short row after them: all three skipped, the others read with their
    ids. (Lines after rows read past: see the last test.)"""
    lines = list(GOOD)
    lines[1:1] = [HUGE["quoted-with-line-breaks"], HUGE["unquoted"]]  # rows 1 and 2
    lines.append("9,C")  # row 11: too few fields
    stats = tmp_path / "stats.json"
    for chunk_rows in ("2", "100"):
        result, _ = _run(
            tmp_path,
            lines,
            "file",
            "--on-bad-row",
            "skip",
            "--stats-json",
            str(stats),
            "--chunk-rows",
            chunk_rows,
        )
        assert result.exit_code == 0, result.stderr
        assert json.loads(stats.read_text())["bad_rows"] == 3
        kept = [i for i in range(len(lines)) if i not in (1, 2, 11)]
        clean, _ = _run(tmp_path, [lines[i] for i in kept], "file", "-q", name="clean")
        assert _matches(result.stdout) == _matches(clean.stdout, kept) != set()


def test_the_option_sets_the_limit(tmp_path: Path) -> None:
    """--max-row-bytes without any patching; the default limit reads the row."""
    result, name = _run(tmp_path, _with_huge("quoted"), "file", "-q", "--max-row-bytes", str(LIMIT))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"cepcli: error: {name}: {_message('quoted')}"]
    result, _ = _run(tmp_path, _with_huge("unquoted"), "file", "-q")
    assert result.exit_code == 0, result.stderr
    assert (0, 1, BAD_AT) in _matches(result.stdout)


def test_a_huge_header_is_an_error_of_the_file(tmp_path: Path, small_limit: int) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(QUERY)
    data.write_text("ts,type,price" + ",x" * 1000 + "\n0,A,1\n")
    result = _invoke(["run", str(query), "-i", str(data), "-q", "--on-bad-row", "skip"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {data}: the header row is 2014 bytes long (line 1 of the file;"
        f" the limit is {LIMIT} bytes, see --max-row-bytes)"
    ]


@pytest.mark.parametrize("how", INPUTS)
def test_a_quote_open_to_the_end_is_an_error_of_the_file(tmp_path: Path, small_limit: int, how: str) -> None:
    """A quoted field that never closes runs to the end of the input: read past (not held),
    then an error of the whole file naming the line where the row starts, even under skip."""
    lines = [*GOOD[:BAD_AT], '4,C,"9' + "\n0" * 3000, *GOOD[BAD_AT + 1 :]]
    result, name = _run(tmp_path, lines, how, "-q", "--on-bad-row", "skip")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {name}: a quoted field is not closed (from line {BAD_AT + 2} on)"
    ]


def _tracked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the size of every buffer the reader cuts into records or reads past."""
    sizes: list[int] = []
    split, record_end = csv.split_records, csv._record_end

    def tracked_split(buf: bytes, final: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        sizes.append(len(buf))
        return split(buf, final)

    def tracked_end(arr: np.ndarray, before: int, inside: bool, final: bool) -> tuple[int, int, bool]:
        sizes.append(len(arr))
        return record_end(arr, before, inside, final)

    monkeypatch.setattr(csv, "split_records", tracked_split)
    monkeypatch.setattr(csv, "_record_end", tracked_end)
    return sizes


@pytest.mark.parametrize("how", INPUTS)
def test_a_huge_row_is_never_held_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Rows 400 times the limit, one unquoted, one quoted with line breaks: no buffer the
    reader cuts or scans (every byte it holds passes through one) is longer than the limit
    and a block, and neither is what it carries from one chunk to the next."""
    monkeypatch.setattr(csv, "MAX_RECORD_BYTES", LIMIT)
    monkeypatch.setattr(csv, "READ_BYTES", BLOCK)
    sizes = _tracked(monkeypatch)
    carried: list[int] = []
    take = _Records.take

    def tracked_take(self: _Records, count: int) -> csv._Piece | None:
        piece = take(self, count)
        carried.append(len(self.carry))
        return piece

    monkeypatch.setattr(_Records, "take", tracked_take)
    lines = list(GOOD)
    lines[2] = "2,C," + "3" * 400 * LIMIT
    lines[BAD_AT] = '4,C,"' + "x,\n" * 133 * LIMIT + '"'
    result, _ = _run(tmp_path, lines, how, "-q", "--on-bad-row", "skip", "--chunk-rows", "3")
    assert result.exit_code == 0, result.stderr
    assert "skipped 2 bad rows (first: row 2: the row is 400005 bytes long" in result.stderr
    assert _matches(result.stdout) == {(0, 1, 7), (0, 6, 7), (5, 6, 7)}
    assert len(sizes) > 1000 and max(sizes) <= LIMIT + BLOCK, max(sizes)
    assert carried and max(carried) <= LIMIT + BLOCK


def _drain(records: _Records, rng: random.Random) -> Iterator[tuple[int, int, int, int]]:
    """(size, fields, start in the stream, line) of each record: fields -1 when too long."""
    while (piece := records.take(rng.choice([1, 2, 5, 100]))) is not None:
        for i in range(len(piece.fields)):
            if i in piece.too_long:
                yield piece.too_long[i], -1, -1, piece.line(i)
                continue
            start, end = int(piece.starts[i]), int(piece.ends[i])
            skipped, _ = piece.skipped(start)
            yield end - start, int(piece.fields[i]), piece.offset + skipped + start, piece.line(i)


@pytest.mark.parametrize("seed", range(300))
def test_reading_past_cuts_where_the_whole_input_is_cut(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Random bytes rich in quotes, delimiters, CR and LF, read in tiny blocks under tiny
    limits: the records, their sizes, places and lines are those ``split_records`` finds
    in the whole input at once; a quote left open fails alike."""
    rng = random.Random(seed)
    monkeypatch.setattr(csv, "READ_BYTES", rng.choice([1, 2, 3, 8, 64]))
    text = bytes(rng.choice(b'ab,,""\n\n\r  ') for _ in range(rng.randrange(300)))
    limit = rng.choice([1, 4, 16, 1000])
    ends, fields, filled, open_quote = split_records(text, True)
    records = _Records(io.BytesIO(text), "t", limit)
    if open_quote:
        with pytest.raises(InputError, match="a quoted field is not closed"):
            list(_drain(records, rng))
        return
    starts = np.concatenate(([0], ends[:-1]))
    expected = []
    for i in np.flatnonzero(filled):
        size, line = int(ends[i] - starts[i]), text.count(b"\n", 0, int(starts[i])) + 1
        long = size > limit
        expected.append((size, -1 if long else int(fields[i]), -1 if long else int(starts[i]), line))
    assert list(_drain(records, rng)) == expected


def test_bytes_and_lines_after_a_huge_row_are_those_of_the_file(tmp_path: Path, small_limit: int) -> None:
    """An error placed by offset and line, after a huge row in the same chunk."""
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(QUERY)
    text = f"{HEADER}\n0,A,1\n{HUGE['quoted-with-line-breaks']}\n2,X,1\n3,B,caf\xe9\n".encode("latin-1")
    data.write_bytes(text)
    result = _invoke(
        ["run", str(query), "-i", str(data), "-q", "--on-bad-row", "skip", "--chunk-rows", "100"]
    )
    assert result.exit_code == 1
    at = text.index(b"\xe9")
    line = text.count(b"\n", 0, at) + 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {data}: the input is not valid UTF-8 (byte b'\\xe9' at offset {at}, line {line})"
    ]
