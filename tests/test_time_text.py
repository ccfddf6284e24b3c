"""Exact times written as text (issue 25, README "Time is exact"): ISO-8601 with ten or more
fractional digits, a lower-case ``t`` or ``z``, a decimal comma, and ``--time-format`` with
``%f`` (1 to 9 digits, ``%z`` after it too) are read to the nanosecond. Digits beyond the
ninth that are zeros are the same instant as nine; a non-zero one is finer than a
nanosecond: a bad value, said in one line.

Each writing goes through the CLI on a file, on standard input (CliRunner's input, which
is read like a file) and, for some, on a real pipe: the same matches, and the window
boundary exact (events W apart match, W + 1 ns apart do not). Below that, the reading
itself: exact values, whatever the batch around a value, and the kind of a column.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli
from cepcli.events import Kind
from cepcli.sources.kinds import infer_kind
from cepcli.sources.text import DEFAULT_NULLS
from cepcli.sources.times import TimeSpec, nanoseconds, time_problem

BASE = 1_709_273_845_123_456_789  # 2024-03-01T06:17:25.123456789Z, in nanoseconds
W = 500_000_000  # the window of the query: 500 ms
QUERY = "PATTERN SEQ(A a, B b) WITHIN 500 ms"
NULLS = pa.array(DEFAULT_NULLS, pa.string())


def _fields(ns: int, minutes: int = 0) -> tuple[str, str, str]:
    """An instant as shown at UTC + ``minutes``: the date, the time of day, nine digits."""
    whole, fraction = divmod(ns + minutes * 60 * 10**9, 10**9)
    stamp = datetime(1970, 1, 1) + timedelta(seconds=whole)
    return stamp.strftime("%Y-%m-%d"), stamp.strftime("%H:%M:%S"), f"{fraction:09d}"


def _written(template: str, minutes: int = 0) -> Callable[[int], str]:
    """A writing of an instant: ``template`` with ``{d}``, ``{t}`` and ``{f}`` (nine digits)."""

    def write(ns: int) -> str:
        d, t, f = _fields(ns, minutes)
        return template.format(d=d, t=t, f=f)

    return write


F = "%Y-%m-%d %H:%M:%S.%f"
# name: (how an instant is written, the options that read it)
WRITINGS: dict[str, tuple[Callable[[int], str], list[str]]] = {
    "iso-10-digits-Z": (_written("{d}T{t}.{f}0Z"), []),
    "iso-12-digits-no-zone": (_written("{d}T{t}.{f}000"), []),
    "iso-lower-z": (_written("{d}T{t}.{f}z"), []),
    "iso-lower-t-offset": (_written("{d}t{t}.{f}+01:30", 90), []),
    "iso-comma": (_written("{d}T{t},{f}Z"), []),
    "iso-space-comma-10-digits-lower-z": (_written("{d} {t},{f}0z"), []),
    "iso-comma-offset-no-colon": (_written("{d}T{t},{f}00-0130", -90), []),
    "format-f": (_written("{d} {t}.{f}"), ["--time-format", F]),
    "format-f-10-digits": (_written("{d} {t}.{f}0"), ["--time-format", F]),
    "format-f-zone": (_written("{d} {t}.{f}-01:30", -90), ["--time-format", F + "%z"]),
    "format-f-Z": (_written("{d} {t}.{f}Z"), ["--time-format", F + "%z"]),
    "format-compact": (_written("{d}{t}{f}"), ["--time-format", "%Y-%m-%d%H:%M:%S%f"]),
    "format-T-comma": (_written("{d}T{t},{f}"), ["--time-format", "%Y-%m-%dT%T,%f"]),
    "format-literal-after": (_written("{d} {t}.{f} UTC"), ["--time-format", F + " UTC"]),
}


def _csv(rows: list[tuple[str, str]]) -> str:
    """CSV text (a time is quoted: it may hold a comma)."""
    return "type,ts\n" + "".join(f'{kind},"{ts}"\n' for kind, ts in rows)


def _stream(write: Callable[[int], str]) -> str:
    """A at 0; B exactly one window later; B one nanosecond more: one match, (0, 1)."""
    return _csv([("A", write(BASE)), ("B", write(BASE + W)), ("B", write(BASE + W + 1))])


def _cli(args: list[str], stdin: str | None = None) -> Result:
    result = CliRunner().invoke(cli, ["run", "-e", QUERY, "--format", "jsonl", "-q", *args], input=stdin)
    assert "Traceback" not in result.output and "internal error" not in result.stderr, result.stderr
    return result


def _on_file(tmp_path: Path, text: str, args: list[str]) -> Result:
    data = tmp_path / "in.csv"
    data.write_text(text)
    return _cli(["-i", str(data), *args])


def _on_stdin(text: str, args: list[str]) -> Result:
    return _cli(["-i", "-", *args], text)


def _on_pipe(tmp_path: Path, text: str, args: list[str]) -> tuple[int, str, str]:
    """A real process reading a real pipe (the kinds come from its first row)."""
    cmd = [sys.executable, "-m", "cepcli", "run", "-e", QUERY, "-i", "-", "--format", "jsonl", "-q", *args]
    done = subprocess.run(cmd, input=text.encode(), capture_output=True, timeout=120, cwd=tmp_path)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _pairs(out: str) -> list[tuple[int, int]]:
    return [(m["a"]["_row"], m["b"]["_row"]) for m in map(json.loads, out.splitlines())]


@pytest.mark.parametrize("writing", sorted(WRITINGS))
def test_the_window_is_exact_in_every_writing(tmp_path: Path, writing: str) -> None:
    write, args = WRITINGS[writing]
    text = _stream(write)
    on_file = _on_file(tmp_path, text, args)
    assert on_file.exit_code == 0, on_file.stderr
    assert _pairs(on_file.stdout) == [(0, 1)], text
    on_stdin = _on_stdin(text, args)
    assert on_stdin.exit_code == 0 and on_stdin.stdout == on_file.stdout, on_stdin.stderr


@pytest.mark.parametrize("writing", ["iso-10-digits-Z", "iso-lower-t-offset", "iso-comma", "format-f-zone"])
def test_a_real_pipe_gives_the_same_answer(tmp_path: Path, writing: str) -> None:
    write, args = WRITINGS[writing]
    text = _stream(write)
    code, out, err = _on_pipe(tmp_path, text, args)
    assert code == 0, err
    assert out == _on_file(tmp_path, text, args).stdout and _pairs(out) == [(0, 1)]


# A value whose digit beyond the ninth is not zero, a good one of the same writing, and
# the options reading them.
FINER = [
    ("2024-01-01T00:00:00.1234567891Z", "2024-01-01T00:00:00.123456789Z", []),
    ("2024-01-01t00:00:00,0000000001z", "2024-01-01t00:00:00,0000000000z", []),
    ("2024-01-01 00:00:00.00000000005", "2024-01-01 00:00:00.00000000000", []),
    ("2024-01-01T01:30:00.1234567890000001+01:30", "2024-01-01T01:30:00.123456789+01:30", []),
    ("2024-01-01 00:00:00.1234567891", "2024-01-01 00:00:00.123456789", ["--time-format", F]),
    ("2024-01-01 00:00:00.0000000000001+01:00", "2024-01-01 00:00:00.0+01:00", ["--time-format", F + "%z"]),
]


@pytest.mark.parametrize(("value", "good", "args"), FINER, ids=[v for v, _, _ in FINER])
def test_a_digit_beyond_the_ninth_is_finer_than_a_nanosecond(
    tmp_path: Path, value: str, good: str, args: list[str]
) -> None:
    """Row 0 is read; row 1 is the bad value, said in one line, on a file, on standard
    input and on a real pipe."""
    text = _csv([("A", good), ("B", value)])
    why = f"row 1: timestamp {value!r} is finer than a nanosecond"
    on_file = _on_file(tmp_path, text, args)
    on_stdin = _on_stdin(text, args)
    code, _, err = _on_pipe(tmp_path, text, args)
    for exit_code, stderr, name in (
        (on_file.exit_code, on_file.stderr, "in.csv"),
        (on_stdin.exit_code, on_stdin.stderr, "<stdin>"),
        (code, err, "<stdin>"),
    ):
        lines = stderr.strip().splitlines()
        assert exit_code == 1 and len(lines) == 1 and lines[0].endswith(f"{name}: {why}"), lines


@pytest.mark.parametrize(
    ("value", "args", "why"),
    [
        ("2262-04-11T23:47:16.8547758080z", [], "is out of range: times must lie between 1677-09-21"),
        ("1677-09-21t00:12:43,145224191", [], "is out of range: times must lie between 1677-09-21"),
        ("2024-01-01T00:00:00,5+24:00", [], "cannot read timestamp"),
        ("2024-01-01T00:00,5", [], "cannot read timestamp"),  # a fraction of a minute
        ("2024-02-30T00:00:00,5", [], "cannot read timestamp"),
        ("2024-01-01 00:00:00", ["--time-format", F], "cannot read timestamp"),  # no fraction
        ("2024-01-01 00:00:00.", ["--time-format", F], "cannot read timestamp"),
        ("2024-01-01 00:00:00.5 ", ["--time-format", F], "cannot read timestamp"),  # not all read
        ("2300-01-01 00:00:00.5", ["--time-format", F], "is out of range: times must lie"),
        ("2262-04-11 23:47:16.854775808", ["--time-format", F], "is out of range: times must lie"),
    ],
)
def test_other_bad_values_say_why_in_one_line(tmp_path: Path, value: str, args: list[str], why: str) -> None:
    result = _on_file(tmp_path, _csv([("A", value)]), args)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and "in.csv: row 0: " in lines[0], lines
    assert f"{value!r}" in lines[0] and why in lines[0], lines


# The reading itself: each value and its exact nanoseconds (UTC).
T0 = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z
ISO_VALUES = [
    ("2024-01-01T00:00:00.0000000000", T0),
    ("2024-01-01T00:00:00.0000000000Z", T0),
    ("2024-01-01t00:00:00,000000000000z", T0),
    ("2024-01-01 00:00:00", T0),
    ("2024-01-01", T0),
    ("2024-01-01T00:00:00.1234567890Z", T0 + 123_456_789),
    ("2024-01-01T00:00:00.123z", T0 + 123_000_000),
    ("2024-01-01t00:00:00.123Z", T0 + 123_000_000),
    ("2024-01-01T00:00:00,5", T0 + 500_000_000),
    ("2024-01-01 01:00,", None),
    ("2024-01-01T01:30:00.000000001+01:30", T0 + 1),
    ("2023-12-31T22:30:00,0000000010-01:30", T0 + 1),
    ("2024-01-01T01+01", T0),
    ("2024-01-01T00:00:00.1234567891Z", None),
    ("2024-01-01T00:00:00+01:60", None),
    ("1677-09-21T00:12:43.145224192", -(2**63)),
    ("1677-09-21T00:12:43.5Z", -9_223_372_036_500_000_000),
    ("1677-09-21T00:12:43.145224191", None),
    ("2262-04-11T23:47:16.8547758070", 2**63 - 1),
    ("2262-04-11T23:47:16.854775808", None),
    ("NA", None),
    ("", None),
    ("next tuesday", None),
]


def _read(values: list[str], spec: TimeSpec) -> list[int | None]:
    ns, bad = nanoseconds(pa.array(values, pa.string()), spec, NULLS)
    return [None if b else int(n) for n, b in zip(ns, bad, strict=True)]


@pytest.mark.parametrize(("value", "want"), ISO_VALUES, ids=[v or "empty" for v, _ in ISO_VALUES])
def test_iso_values_are_read_exactly(value: str, want: int | None) -> None:
    assert _read([value], TimeSpec("iso")) == [want]


def test_a_value_reads_the_same_whatever_its_batch() -> None:
    """Alone, in one batch with all the others (read in parts), and in a batch of its own
    writing that pyarrow's cast reads whole: the same nanoseconds."""
    values = [v for v, _ in ISO_VALUES]
    want = [w for _, w in ISO_VALUES]
    assert _read(values, TimeSpec("iso")) == want
    assert _read(values[::-1], TimeSpec("iso")) == want[::-1]
    for value, ns in ISO_VALUES:
        if ns is not None:
            assert _read([value, value], TimeSpec("iso")) == [ns, ns], value


FORMAT_VALUES = [
    (F, "2024-01-01 00:00:00.123456789", T0 + 123_456_789),
    (F, "2024-01-01 00:00:00.5", T0 + 500_000_000),
    (F, "2024-01-01 00:00:00.0000000000", T0),
    (F, "2024-01-01 00:00:00.1234567890", T0 + 123_456_789),
    (F, "2024-01-01 00:00:00.1234567891", None),
    (F, "2024-01-01 00:00:00", None),
    (F, "2024-01-01 00:00:00.5x", None),
    (F, "1677-09-21 00:12:43.5", -9_223_372_036_500_000_000),
    (F + "%z", "2024-01-01 01:00:00.000000001+01:00", T0 + 1),
    (F + "%z", "2024-01-01 01:00:00.000000001+0100", T0 + 1),
    (F + "%z", "2024-01-01 00:00:00.25Z", T0 + 250_000_000),
    (F + "%z", "2024-01-01 00:00:00.25", None),
    ("%Y%m%d%H%M%S%f", "20240101000000123", T0 + 123_000_000),
    ("%Y%m%d%H%M%S%f", "202401010000001234567890", T0 + 123_456_789),
    ("%d/%m/%Y %T,%f", "01/01/2024 00:00:00,000000007", T0 + 7),
    ("%% %Y-%m-%d %H:%M:%S.%f", "% 2024-01-01 00:00:00.5", T0 + 500_000_000),
    ("%s.%f", "1704067200.000000042", T0 + 42),
    ("%Y-%m-%d %H:%M:%S", "2024-01-01 00:00:00", T0),  # no %f: pyarrow's strptime alone
]


@pytest.mark.parametrize(("time_format", "value", "want"), FORMAT_VALUES)
def test_format_values_are_read_exactly(time_format: str, value: str, want: int | None) -> None:
    spec = TimeSpec("format", format=time_format)
    assert _read([value], spec) == [want]
    assert _read([value, "NA", value], spec) == [want, None, want]


@pytest.mark.parametrize(
    ("value", "spec", "why"),
    [
        ("2024-01-01T00:00:00.1234567891z", TimeSpec("iso"), "is finer than a nanosecond"),
        ("2262-04-11T23:47:16.8547758080", TimeSpec("iso"), "is out of range"),
        ("2024-01-01T00:00:00.5+24:00", TimeSpec("iso"), "cannot read timestamp"),
        ("2024-01-01 00:00:00.1234567891", TimeSpec("format", format=F), "is finer than a nanosecond"),
        ("2262-04-11 23:47:16.854775808", TimeSpec("format", format=F), "is out of range"),
        ("2024-01-01 00:00:00", TimeSpec("format", format=F), "cannot read timestamp"),
    ],
)
def test_the_explanation_follows_the_reading(value: str, spec: TimeSpec, why: str) -> None:
    assert _read([value], spec) == [None]
    assert why in time_problem(value, spec, "ts", frozenset(DEFAULT_NULLS))


@pytest.mark.parametrize(
    "values",
    [
        ["2024-01-01t00:00:00z", "2024-01-01t00:00:01z"],
        ["2024-01-01T00:00:00,5", "2024-01-01T00:00:01,25"],
        ["2024-01-01T00:00:00.1234567890Z", "2024-01-01T00:00:00.0000000000"],
    ],
)
def test_such_a_column_is_of_kind_time(values: list[str]) -> None:
    assert infer_kind(pa.array(values), NULLS) is Kind.TIME
