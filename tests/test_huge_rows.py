"""A row longer than the limit (``--max-row-bytes``) is a bad row, read past without
being held in memory (``sources.records.RecordStream``, in front of pyarrow's reader).

The limit is made small here (1,000 bytes, and reads of 256 bytes so that a long row
spans many reads), so the rows are small too. ``fail`` names the row after writing the
matches before it; ``skip`` reads on at the next record, with the row ids of the file.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import cepcli.sources.records as records
from cepcli.cli import cli
from cepcli.errors import InputError
from cepcli.sources.records import MARKER, RecordStream, record_ends
from tests.test_bad_rows import _matches

QUERY = "PATTERN SEQ(A a, B b, C c)\nWHERE a.price < c.price\nWITHIN 10\n"
HEADER = "ts,type,price"
GOOD = ["0,A,1", "1,B,2", "2,C,3", "3,X,0", "4,X,0", "5,A,2", "6,B,3", "7,C,9", "8,C,1"]
BAD_AT = 4
LIMIT = 1000
BLOCK = 256

# Each would complete a=0, b=1 if it were read (a C with a price above 1).
HUGE = {
    "unquoted": "4,C,9." + "0" * 5000,
    "quoted": '4,C,"9.' + "0" * 5000 + '"',
    "quoted-with-line-breaks": '4,C,"9' + '\n\r\n,""0' * 1000 + '"',
}
INPUTS = ("file", "gz", "stdin")


@pytest.fixture(params=[BLOCK, 1 << 20], ids=["read-past", "in-one-read"])
def small_limit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """A 1,000-byte limit; reads of 256 bytes (the long row is read past, a read at a
    time) or of 1 MiB (it is read whole in one read, then replaced)."""
    monkeypatch.setattr(records, "READ_BYTES", request.param)
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
    args = [
        "run",
        str(query),
        "--format",
        "jsonl",
        "--chunk-rows",
        "4",
        "--max-row-bytes",
        str(LIMIT),
        *extra,
    ]
    if how == "stdin":
        return _invoke([*args, "-i", "-"], stdin=data), "<stdin>"
    path = tmp_path / (f"{name}.csv.gz" if how == "gz" else f"{name}.csv")
    path.write_bytes(gzip.compress(data) if how == "gz" else data)
    return _invoke([*args, "-i", str(path)]), str(path)


def _with_huge(kind: str) -> list[str]:
    lines = list(GOOD)
    lines[BAD_AT] = HUGE[kind]
    return lines


def _message(kind: str) -> str:
    size = len(HUGE[kind]) + 1  # with its line break
    return f"row {BAD_AT}: the row is {size} bytes long (the limit is {LIMIT} bytes, see --max-row-bytes)"


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


def test_rows_after_huge_rows_keep_the_ids_of_the_file(tmp_path: Path, small_limit: int) -> None:
    """Two huge rows in a row, one of them many lines long, and a short row after them:
    all three skipped, the others read with their ids, whatever the chunk size."""
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


def test_a_two_column_file_knows_the_marker_too(tmp_path: Path) -> None:
    """In a file of two columns, the marker that stands for a long row has the right width:
    it is still a bad row, not a row."""
    query, data = tmp_path / "q.sase", tmp_path / "two.csv"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    data.write_text("ts,type\n0,A\n1," + "B" * 5000 + "\n2,B\n")
    args = ["run", str(query), "-i", str(data), "--format", "jsonl", "--max-row-bytes", "100"]
    result = _invoke([*args, "-q"])
    assert result.exit_code == 1 and "row 1: the row is 5003 bytes long" in result.stderr
    result = _invoke([*args, "-q", "--on-bad-row", "skip"])
    assert result.exit_code == 0
    assert [json.loads(line)["b"]["_row"] for line in result.stdout.splitlines()] == [2]


def test_the_option_sets_the_limit(tmp_path: Path) -> None:
    """--max-row-bytes without any patching; the default limit (16 MiB) reads the row."""
    result, name = _run(tmp_path, _with_huge("quoted"), "file", "-q")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"cepcli: error: {name}: {_message('quoted')}"]
    query = tmp_path / "q.sase"
    data = tmp_path / "default.csv"
    data.write_text("\n".join([HEADER, *_with_huge("unquoted")]) + "\n")
    result = _invoke(["run", str(query), "-i", str(data), "--format", "jsonl", "-q"])
    assert result.exit_code == 0, result.stderr
    assert (0, 1, BAD_AT) in _matches(result.stdout)


def test_a_huge_header_is_an_error_of_the_file(tmp_path: Path, small_limit: int) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(QUERY)
    data.write_text("ts,type,price" + ",x" * 1000 + "\n0,A,1\n")
    result = _invoke(
        ["run", str(query), "-i", str(data), "-q", "--on-bad-row", "skip", "--max-row-bytes", str(LIMIT)]
    )
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {data}: the header row is 2014 bytes long"
        f" (the limit is {LIMIT} bytes, see --max-row-bytes)"
    ]


@pytest.mark.parametrize("how", INPUTS)
def test_a_quote_open_to_the_end_is_an_error_of_the_file(tmp_path: Path, small_limit: int, how: str) -> None:
    """A quoted field that never closes runs to the end of the input: read past (not held),
    then an error of the whole file, even under skip."""
    lines = [*GOOD[:BAD_AT], '4,C,"9' + "\n0" * 3000, *GOOD[BAD_AT + 1 :]]
    result, name = _run(tmp_path, lines, how, "-q", "--on-bad-row", "skip")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {name}: a quoted field is not closed (at the end of the input)"
    ]


@pytest.mark.parametrize("how", INPUTS)
def test_a_huge_row_is_never_held_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Rows 400 times the limit, one unquoted, one quoted with line breaks: the stream
    never holds more than the limit and a read of them, and hands on nothing longer."""
    monkeypatch.setattr(records, "READ_BYTES", BLOCK)
    held: list[int] = []  # the tail held back after each step, and every buffer read past
    handed: list[int] = []
    reads: list[int] = []
    step, scan, read = RecordStream._next, records.record_end, RecordStream._raw_read

    def tracked_step(self: RecordStream) -> bytes:
        out = step(self)
        held.append(len(self.tail))
        handed.append(len(out))
        return out

    def tracked_scan(arr: np.ndarray, before: int, inside: bool, final: bool) -> tuple[int, int, bool]:
        held.append(len(arr))
        return scan(arr, before, inside, final)

    def tracked_read(self: RecordStream) -> bytes:
        data = read(self)
        reads.append(len(data))
        return data

    monkeypatch.setattr(RecordStream, "_next", tracked_step)
    monkeypatch.setattr(records, "record_end", tracked_scan)
    monkeypatch.setattr(RecordStream, "_raw_read", tracked_read)
    lines = list(GOOD)
    lines[2] = "2,C," + "3" * 400 * LIMIT
    lines[BAD_AT] = '4,C,"' + "x,\n" * 133 * LIMIT + '"'
    result, _ = _run(tmp_path, lines, how, "-q", "--on-bad-row", "skip", "--chunk-rows", "3")
    assert result.exit_code == 0, result.stderr
    assert "skipped 2 bad rows (first: row 2: the row is 400005 bytes long" in result.stderr
    assert _matches(result.stdout) == {(0, 1, 7), (0, 6, 7), (5, 6, 7)}
    assert len(reads) > 1000 and max(held) <= LIMIT + BLOCK, max(held)
    assert max(handed) <= LIMIT + BLOCK


def _expected(text: bytes, limit: int) -> bytes | None:
    """What the stream hands on for ``text`` (records found in the whole input at once,
    those over the limit replaced by markers); None when a quote is left open there past
    the limit (an error)."""
    arr = np.frombuffer(text, dtype=np.uint8)
    ends = record_ends(arr, True).tolist()
    if not ends or ends[-1] != len(text):
        ends.append(len(text))
    pieces, start, number = [], 0, 0
    for end in ends:
        record = text[start:end]
        if len(record) > limit:
            if record_ends(np.frombuffer(record + b"\n", dtype=np.uint8), True).size == 0:
                return None  # an open quote runs to the end
            pieces.append(f"{MARKER}{number},\x00\n".encode())
            number += 1
        else:
            pieces.append(record)
        start = end
    return b"".join(pieces)


def _no_stray_quotes(text: bytes) -> bytes:
    """``text`` without the quotes that neither open nor close a field."""
    edges = b',"\r\n'
    while True:
        stray = [
            i
            for i, c in enumerate(text)
            if c == ord('"')
            and (i > 0 and text[i - 1] not in edges)
            and (i < len(text) - 1 and text[i + 1] not in edges)
        ]
        if not stray:
            return text
        text = bytes(c for i, c in enumerate(text) if i not in stray)


@pytest.mark.parametrize("seed", range(300))
def test_reading_past_cuts_where_the_whole_input_is_cut(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Random bytes rich in quotes, delimiters, CR and LF (no stray quotes here: see the
    records module), read in tiny reads under tiny limits, from a pipe and from a file:
    what the stream hands on is the input cut into records as at once, with the records
    over the limit replaced by markers; a quote left open past the limit fails."""
    rng = random.Random(seed)
    monkeypatch.setattr(records, "READ_BYTES", rng.choice([1, 2, 3, 8, 64]))
    text = _no_stray_quotes(bytes(rng.choice(b'ab,,""\n\n\r  ') for _ in range(rng.randrange(300))))
    limit = rng.choice([1, 4, 16, 1000])
    expected = _expected(text, limit)
    for streaming in (True, False):
        stream = RecordStream(io.BytesIO(text), "t", limit, streaming, header=False)
        if expected is None:
            with pytest.raises(InputError, match="a quoted field is not closed"):
                stream.read()
            continue
        assert stream.read() == expected, (streaming, text)
