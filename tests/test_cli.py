"""The command line as a user sees it (docs/input.md and docs/running.md, README "Input" and
"Running"): click's ``CliRunner`` over ``cepcli.cli.cli``, one table of
(args, files/stdin, expected exit code, stdout check, stderr substring) per command,
plus a few real processes for what only a process shows (a closed pipe,
``CEPCLI_DEBUG``).

Every invocation is also checked for what must never happen: a Python traceback,
an "internal error", or an exception escaping the command group.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli
from cepcli.sources.options import CHUNK_ROWS

# --- inputs ---------------------------------------------------------------------------

# Rows: 0 A, 1 B (vol missing), 2 B (name missing), 3 C, 4 N, 5 C.
EVENTS = """\
ts,type,price,vol,name
0,A,10,5,x
1,B,12,,y
2,B,13.5,7,
3,C,11,8,z
4,N,1,1,n
5,C,20,9,w
"""
EVENT_ROWS = 6

# SEQ on EVENTS: a=0, b in {1, 2}, c in {3, 5}: 4 matches.
SEQ_Q = "PATTERN SEQ(A a, B b, C c)\nWITHIN 10 s\n"
SEQ_MATCHES = {(0, 1, 3), (0, 2, 3), (0, 1, 5), (0, 2, 5)}

# Kleene plus a negation on EVENTS: b is a non-empty subset of {1, 2}; the N at row 4
# forbids c = 5, so c = 3: 3 matches, and n never appears in the output.
KLEENE_Q = "PATTERN SEQ(A a, B+ b[], NOT N n, C c)\nWITHIN 10 s\n"
KLEENE_MATCHES = {(0, (1,), 3), (0, (2,), 3), (0, (1, 2), 3)}

# A different stream, to tell which input a run read: a=0, b=1, c=2 only.
OTHER = "ts,type,price,vol,name\n0,A,1,1,o\n1,B,2,2,o\n2,C,3,3,o\n"
OTHER_MATCHES = {(0, 1, 2)}

# The same rows as EVENTS, other column names.
RENAMED = EVENTS.replace("ts,type,", "time,kind,", 1)
HEADERLESS = EVENTS.split("\n", 1)[1]

# Stock ticks with time zones: 10:35+01:00 is 09:35Z, five minutes after the A;
# 05:50-04:00 is 09:50Z. Read as local times they would decrease.
ISO = """\
ts,type,price
2024-03-04T09:30:00Z,A,1
2024-03-04T10:35:00+01:00,B,2
2024-03-04T09:45:00Z,X,3
2024-03-04T05:50:00-04:00,B,4
"""
ISO_Q = "PATTERN SEQ(A a, B b)\nWHERE b.ts - a.ts = 300\nWITHIN 10 minutes\n"

# NASDAQ minute bars: ticker,YYYYMMDDhhmm,open,high,low,close,volume, no header.
NASDAQ = """\
AAPL,200802010900,136.2,136.2,136,136,6700
GOOG,200802010901,532.04,532.04,530.51,530.51,17665
AMZN,200802010902,79.26,79.36,79.25,79.36,1450
GOOG,200802010905,531.5,532.0,531.0,531.2,900
"""
NASDAQ_COLUMNS = "ticker,time,open,high,low,close,volume"
# The time column in a condition is the timestamp in seconds, under its own name.
NASDAQ_Q = "PATTERN SEQ(AAPL a, GOOG b)\nWHERE b.time - a.time = 60\nWITHIN 2 minutes\n"

# Out of time order: row 2 (ts 2) comes after row 1 (ts 5).
UNSORTED = "ts,type,price\n0,A,1\n5,C,3\n2,B,2\n6,C,4\n"
UNSORTED_SORTED_MATCHES = {(0, 2, 1), (0, 2, 3)}  # row ids stay those of the file


def _many(n: int = 30) -> tuple[str, int]:
    """A, B, C repeating once a second: more than 20 matches of SEQ_Q."""
    types = "ABC"
    text = "ts,type,price,vol,name\n" + "".join(f"{i},{types[i % 3]},{i},{i},m\n" for i in range(n))
    rows = [(i, types[i % 3]) for i in range(n)]
    count = sum(
        1
        for (i, ti), (j, tj), (k, tk) in combinations(rows, 3)
        if (ti, tj, tk) == ("A", "B", "C") and k - i <= 10
    )
    return text, count


MANY, MANY_COUNT = _many()

LATIN1 = b"ts,type,price,name\n0,A,1,caf\xe9\n1,B,2,x\n2,C,3,y\n"
EVENTS_GZ = gzip.compress(EVENTS.encode())
TRUNCATED_GZ = gzip.compress(MANY.encode())[:-30]  # the whole file fits in one read


# --- running the CLI ------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as a user does: without CEPCLI_DEBUG, whatever the developer's shell has."""
    monkeypatch.delenv("CEPCLI_DEBUG", raising=False)


@dataclass(frozen=True)
class Case:
    """One row of a command's table.

    ``stdout`` is a substring or a check ``(stdout, directory) -> None`` that asserts;
    ``stderr`` a substring; ``error`` the shape of the error on standard error:
    ``"line"`` (one line) or ``"caret"`` (``file:line:col: message``, source, caret).
    ``files`` are written under a temporary directory, the command runs in ``cwd``
    below it."""

    id: str
    args: list[str]
    files: dict[str, str | bytes] = field(default_factory=dict)
    stdin: str | bytes | None = None
    exit: int = 0
    stdout: str | Callable[[str, Path], None] | None = None
    stderr: str | None = None
    error: str | None = None
    cwd: str = "."


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def describe(result: Result) -> str:
    return f"exit {result.exit_code}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"


def assert_no_crash(result: Result) -> None:
    """No traceback, no "internal error", no exception escaping the group."""
    for text in (result.stdout, result.stderr):
        assert "Traceback" not in text, describe(result)
        assert "internal error" not in text, describe(result)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{describe(result)}"
    )


def assert_one_line(result: Result) -> str:
    lines = result.stderr.strip("\n").splitlines()
    assert len(lines) == 1, f"expected one error line\n{describe(result)}"
    assert lines[0].strip(), describe(result)
    return lines[0]


def assert_caret(result: Result) -> tuple[str, int, int, str]:
    """``file:line:col: message``, then the query line, then a caret under ``col``."""
    lines = result.stderr.strip("\n").splitlines()
    assert len(lines) == 3, f"expected file:line:col, source line, caret\n{describe(result)}"
    head = re.fullmatch(r"(.+):(\d+):(\d+): (.+)", lines[0])
    assert head, describe(result)
    name, line, col, message = head.group(1), int(head.group(2)), int(head.group(3)), head.group(4)
    caret = lines[2]
    assert re.fullmatch(r" *\^+", caret), describe(result)
    # The source line and the caret line are indented alike (the test queries' lines do
    # not start with blanks); the caret sits under column ``col``.
    indent = len(lines[1]) - len(lines[1].lstrip(" "))
    assert caret.index("^") == indent + col - 1, describe(result)
    return name, line, col, message


def invoke(args: list[str], stdin: str | bytes | None = None) -> Result:
    result = CliRunner().invoke(cli, args, input=stdin)
    assert_no_crash(result)
    return result


def run_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    write_files(tmp_path, case.files)
    cwd = tmp_path / case.cwd
    cwd.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(cwd)
    result = invoke(case.args, case.stdin)
    assert result.exit_code == case.exit, describe(result)
    if isinstance(case.stdout, str):
        assert case.stdout in result.stdout, describe(result)
    elif case.stdout is not None:
        case.stdout(result.stdout, cwd)
    if case.stderr is not None:
        assert case.stderr in result.stderr, describe(result)
    if case.error == "line":
        assert_one_line(result)
    elif case.error == "caret":
        assert_caret(result)
    return result


# --- checks on output -----------------------------------------------------------------


def jsonl(text: str) -> list[dict[str, object]]:
    assert text == "" or text.endswith("\n"), f"last line incomplete: {text[-80:]!r}"
    return [json.loads(line) for line in text.splitlines()]


def rows_of(objs: list[dict[str, object]]) -> set[tuple[object, ...]]:
    """Each match as the tuple of its variables' row ids (a tuple for a Kleene list)."""

    def rows(value: object) -> object:
        if isinstance(value, list):
            return tuple(e["_row"] for e in value)
        assert isinstance(value, dict)
        return value["_row"]

    return {tuple(rows(v) for v in obj.values()) for obj in objs}


def matches_are(expected: set[tuple[object, ...]]) -> Callable[[str, Path], None]:
    def check(out: str, _: Path) -> None:
        objs = jsonl(out)
        assert len(objs) == len(expected), out
        assert rows_of(objs) == expected, out

    return check


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_kleene_jsonl(out: str, _: Path) -> None:
    objs = jsonl(out)
    assert rows_of(objs) == KLEENE_MATCHES and len(objs) == 3, out
    by_row = {}
    for obj in objs:
        assert list(obj) == ["a", "b", "c"], obj  # positive variables, pattern order, no n
        assert isinstance(obj["b"], list) and obj["b"], obj
        assert [e["_row"] for e in obj["b"]] == sorted(e["_row"] for e in obj["b"]), obj
        for event in [obj["a"], obj["c"], *obj["b"]]:
            assert set(event) == {"ts", "type", "price", "vol", "name", "_row"}, event
            by_row[event["_row"]] = event
    a, b1, b2, c = by_row[0], by_row[1], by_row[2], by_row[3]
    assert a == {"ts": 0, "type": "A", "price": 10, "vol": 5, "name": "x", "_row": 0}
    for event in (a, b1, b2, c):
        assert isinstance(event["_row"], int) and is_number(event["ts"]), event
        assert is_number(event["price"]), event
        assert isinstance(event["type"], str) and isinstance(event["_row"], int), event
    assert b2["price"] == 13.5
    assert b1["vol"] is None and isinstance(b2["vol"], int) and not isinstance(b2["vol"], bool)
    assert b2["name"] is None and b1["name"] == "y"


def check_kleene_csv(out: str, _: Path) -> None:
    lines = out.splitlines()
    columns = ["_row", "ts", "type", "price", "vol", "name"]
    assert lines[0] == ",".join(f"{v}.{c}" for v in "abc" for c in columns), lines[0]
    assert lines[0].startswith("a._row,a.ts,")
    assert len(lines) == 1 + 3, out
    records = list(csv.DictReader(io.StringIO(out)))
    assert {r["b._row"] for r in records} == {"1", "2", "1;2"}, out
    both = next(r for r in records if r["b._row"] == "1;2")
    assert both["b.ts"] == "1;2" and both["b.type"] == "B;B", both
    assert both["b.vol"] == ";7" and both["b.name"] == "y;", both  # missing cells stay empty
    assert float(both["b.price"].split(";")[1]) == 13.5, both
    assert all(r["a._row"] == "0" and r["c._row"] == "3" for r in records), out
    assert not any(key.startswith("n.") for key in records[0]), records[0]


def table_check(total: int, first: tuple[int, int, int]) -> Callable[[str, Path], None]:
    def check(out: str, _: Path) -> None:
        lines = [line.rstrip() for line in out.splitlines() if line.strip()]
        shown = min(total, 20)
        suffix = f" (first {shown} shown)" if total > shown else ""
        assert lines[-1] == f"{total:,} match{'es' if total != 1 else ''}{suffix}", out
        a, b, c = first
        numbered = [line for line in lines if re.match(r"^\W*\d+\W.*\brow \d", line)]
        assert len(numbered) == shown, out
        assert re.search(rf"\b1\b.*\brow {a}\b.*\brow {b}\b.*\brow {c}\b", numbered[0]), out

    return check


def output_file_check(out: str, d: Path) -> None:
    assert out == "", out  # matches went to the file, nothing else to stdout
    assert rows_of(jsonl((d / "out" / "m.jsonl").read_text(encoding="utf-8"))) == SEQ_MATCHES


STATS_KEYS = {
    "engine",
    "order",
    "events",
    "relevant_events",
    "matches",
    "seconds",
    "events_per_second",
    "peak_instances",
    "peak_buffered_events",
    "predicate_evaluations",
    "memory_operations",
    "peak_rss_mb",
}


def stats_check(out: str, d: Path) -> None:
    lines = jsonl(out)
    stats = json.loads((d / "stats.json").read_text(encoding="utf-8"))
    assert set(stats) >= STATS_KEYS, sorted(STATS_KEYS - set(stats))
    assert stats["engine"] == "adaptive"  # the default engine
    assert stats["order"] == ["a", "b", "c"]
    assert stats["matches"] == len(lines) == 3
    assert stats["events"] == EVENT_ROWS
    assert 0 < stats["relevant_events"] <= stats["events"]
    for key in STATS_KEYS - {"engine", "order"}:
        assert is_number(stats[key]) and stats[key] >= 0, (key, stats[key])
    for key in ("peak_instances", "predicate_evaluations", "memory_operations", "peak_buffered_events"):
        assert isinstance(stats[key], int), (key, stats[key])
    assert stats["peak_instances"] > 0 and stats["memory_operations"] > 0
    assert stats["peak_rss_mb"] > 0
    if stats["seconds"] >= 1e-4:
        expected = stats["events"] / stats["seconds"]
        assert abs(stats["events_per_second"] - expected) <= max(1.0, 0.01 * expected), stats


def exactly_lines(n: int) -> Callable[[str, Path], None]:
    def check(out: str, _: Path) -> None:
        objs = jsonl(out)
        assert len(objs) == n, out
        assert rows_of(objs) <= SEQ_MATCHES, out

    return check


def max_matches_stats(n: int) -> Callable[[str, Path], None]:
    def check(out: str, d: Path) -> None:
        exactly_lines(n)(out, d)
        stats = json.loads((d / "stats.json").read_text(encoding="utf-8"))
        assert stats["matches"] == n, stats  # the matches written, not those found

    return check


def nothing(out: str, _: Path) -> None:
    assert out == "", out


# --- cepcli run -----------------------------------------------------------------------

BASE = {"q.sase": SEQ_Q, "events.csv": EVENTS}
KLEENE = {"k.sase": KLEENE_Q, "events.csv": EVENTS}
JSONL = ["--format", "jsonl"]

RUN_CASES = [
    # output formats
    Case(
        "table-default",
        ["run", "q.sase", "-i", "events.csv"],
        BASE,
        stdout=table_check(4, (0, 1, 3)),
        stderr="cepcli stats",
    ),
    Case(  # the default engine says what it ran: a file, so the columnar engine
        "stats-adaptive-ran",
        ["run", "q.sase", "-i", "events.csv"],
        BASE,
        stderr="columnar, in 1 step (set-at-a-time)",
    ),
    Case(  # with --stats-every, the segments: one here, the first, by the tree
        "stats-adaptive-ran-segments",
        ["run", "q.sase", "-i", "events.csv", "--stats-every", "1000"],
        BASE,
        stderr="segments: tree 1; runtimes: 1",
    ),
    Case(
        "table-first-20-and-total",
        ["run", "q.sase", "-i", "many.csv"],
        {"q.sase": SEQ_Q, "many.csv": MANY},
        stdout=table_check(MANY_COUNT, (0, 1, 2)),
    ),
    Case(
        "jsonl-kleene-negation-typing",
        ["run", "k.sase", "-i", "events.csv", *JSONL],
        KLEENE,
        stdout=check_kleene_jsonl,
    ),
    Case(
        "csv-header-and-kleene-join",
        ["run", "k.sase", "-i", "events.csv", "--format", "csv"],
        KLEENE,
        stdout=check_kleene_csv,
    ),
    Case(
        "output-file",
        ["run", "q.sase", "-i", "events.csv", *JSONL, "--output", "out/m.jsonl"],
        {**BASE, "out/.keep": ""},
        stdout=output_file_check,
    ),
    Case(
        "stats-json",
        ["run", "k.sase", "-i", "events.csv", *JSONL, "--stats-json", "stats.json"],
        KLEENE,
        stdout=stats_check,
    ),
    Case(
        "max-matches",
        ["run", "q.sase", "-i", "events.csv", *JSONL, "--max-matches", "2"],
        BASE,
        stdout=exactly_lines(2),
        stderr="--max-matches",
    ),
    Case(
        "max-matches-warning-even-when-quiet",
        ["run", "q.sase", "-i", "events.csv", *JSONL, "--max-matches", "2", "-q"],
        BASE,
        stdout=exactly_lines(2),
        stderr="warning",
    ),
    Case(
        "max-matches-stats-count",
        ["run", "q.sase", "-i", "events.csv", *JSONL, "--max-matches", "2", "--stats-json", "stats.json"],
        BASE,
        stdout=max_matches_stats(2),
    ),
    Case(
        "max-matches-zero-is-usage-error",
        ["run", "q.sase", "-i", "events.csv", "--max-matches", "0"],
        BASE,
        exit=2,
    ),
    Case(
        "quiet",
        ["run", "q.sase", "-i", "events.csv", *JSONL, "--quiet"],
        BASE,
        stdout=matches_are(SEQ_MATCHES),
    ),
    # where the input comes from
    Case(
        "stdin-dash",
        ["run", "q.sase", "-i", "-", *JSONL],
        {"q.sase": SEQ_Q},
        stdin=EVENTS,
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "stdin-no-input-no-from",
        ["run", "q.sase", *JSONL],
        {"q.sase": SEQ_Q},
        stdin=EVENTS,
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "from-relative-to-query-file",
        ["run", "../queries/q.sase", *JSONL],
        {
            "queries/q.sase": "FROM 'data.csv'\n" + SEQ_Q,
            "queries/data.csv": EVENTS,
            "cwd/data.csv": OTHER,  # a decoy next to the working directory
        },
        stdout=matches_are(SEQ_MATCHES),
        cwd="cwd",
    ),
    Case(
        "from-subdirectory-relative-to-query-file",
        ["run", "queries/q.sase", *JSONL],
        {"queries/q.sase": "FROM 'in/data.csv'\n" + SEQ_Q, "queries/in/data.csv": EVENTS},
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "input-overrides-from",
        ["run", "q.sase", "-i", "other.csv", *JSONL],
        {"q.sase": "FROM 'events.csv'\n" + SEQ_Q, "events.csv": EVENTS, "other.csv": OTHER},
        stdout=matches_are(OTHER_MATCHES),
    ),
    Case(
        "input-dash-overrides-from",
        ["run", "q.sase", "-i", "-", *JSONL],
        {"q.sase": "FROM 'events.csv'\n" + SEQ_Q, "events.csv": EVENTS},
        stdin=OTHER,
        stdout=matches_are(OTHER_MATCHES),
    ),
    Case(
        "gzip",
        ["run", "q.sase", "-i", "events.csv.gz", *JSONL],
        {"q.sase": SEQ_Q, "events.csv.gz": EVENTS_GZ},
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "gzip-from",
        ["run", "q.sase", *JSONL],
        {"q.sase": "FROM 'events.csv.gz'\n" + SEQ_Q, "events.csv.gz": EVENTS_GZ},
        stdout=matches_are(SEQ_MATCHES),
    ),
    # how the input is read
    Case(
        "no-header-columns",
        ["run", "q.sase", "-i", "h.csv", "--no-header", "--columns", "ts,type,price,vol,name", *JSONL],
        {"q.sase": SEQ_Q, "h.csv": HEADERLESS},
        stdout=matches_are(SEQ_MATCHES),  # row 0 is the first line: there is no header
    ),
    Case(
        "no-header-without-columns",
        ["run", "q.sase", "-i", "h.csv", "--no-header"],
        {"q.sase": SEQ_Q, "h.csv": HEADERLESS},
        exit=2,
        stderr="--columns",
        error="line",
    ),
    Case(
        "columns-without-no-header",
        ["run", "q.sase", "-i", "events.csv", "--columns", "a,b,c,d,e"],
        BASE,
        exit=2,
        stderr="--no-header",
        error="line",
    ),
    Case(
        "chunk-rows",
        ["run", "q.sase", "-i", "events.csv", "--chunk-rows", "2", *JSONL],
        BASE,
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "type-col-time-col",
        ["run", "q.sase", "-i", "r.csv", "--type-col", "kind", "--time-col", "time", *JSONL],
        {"q.sase": SEQ_Q, "r.csv": RENAMED},
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "iso-8601-time-zones",
        ["run", "iso.sase", "-i", "iso.csv", *JSONL],
        {"iso.sase": ISO_Q, "iso.csv": ISO},
        stdout=matches_are({(0, 1)}),
    ),
    Case(
        "nasdaq-time-format",
        [
            "run",
            "n.sase",
            "-i",
            "nasdaq.txt",
            "--no-header",
            "--columns",
            NASDAQ_COLUMNS,
            "--type-col",
            "ticker",
            "--time-col",
            "time",
            "--time-format",
            "%Y%m%d%H%M",
            *JSONL,
        ],
        {"n.sase": NASDAQ_Q, "nasdaq.txt": NASDAQ},
        stdout=matches_are({(0, 1)}),  # 200802010901 is 60 s after 200802010900, 0905 is 5 min
    ),
    Case(
        "sort",
        ["run", "q.sase", "-i", "u.csv", "--sort", *JSONL],
        {"q.sase": SEQ_Q, "u.csv": UNSORTED},
        stdout=matches_are(UNSORTED_SORTED_MATCHES),
    ),
    Case(
        "unsorted-without-sort",
        ["run", "q.sase", "-i", "u.csv", *JSONL],
        {"q.sase": SEQ_Q, "u.csv": UNSORTED},
        exit=1,
        stdout=nothing,
        stderr="row 2",
        error="line",
    ),
    # engines
    *(
        Case(
            f"engine-{e}",
            ["run", "q.sase", "-i", "events.csv", "--engine", e, *JSONL],
            BASE,
            stdout=matches_are(SEQ_MATCHES),
        )
        for e in ("eager", "chain", "first-chance", "post-processing", "tree")
    ),
    Case(
        "engine-chain-with-order",
        ["run", "q.sase", "-i", "events.csv", "--engine", "chain", "--order", "c,b,a", *JSONL],
        BASE,
        stdout=matches_are(SEQ_MATCHES),
    ),
    Case(
        "engine-unknown",
        ["run", "q.sase", "-i", "events.csv", "--engine", "bogus"],
        BASE,
        exit=2,
        stdout=nothing,
        stderr="bogus",
    ),
]


@pytest.mark.parametrize("case", RUN_CASES, ids=lambda c: c.id)
def test_run(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_case(case, tmp_path, monkeypatch)
    if "--quiet" in case.args or "-q" in case.args:
        assert "cepcli stats" not in result.stderr, describe(result)
        if "--max-matches" not in case.args:
            assert result.stderr == "", describe(result)


# --- errors of cepcli run: exit code, one line (or the caret snippet), no traceback ----

BAD_ROWS = "ts,type,price\n0,A,1\nfoo,B,2\n3,C,4\n"
DECREASING = "ts,type,price\n0,A,1\n5,B,2\n3,C,4\n"

ERROR_CASES = [
    Case(
        "malformed-query",
        ["run", "bad.sase", "-i", "events.csv"],
        {"bad.sase": "PATTERN SEQ(A a, B b C c)\nWITHIN 10 s\n", "events.csv": EVENTS},
        exit=2,
        stderr="bad.sase:1:",
        error="caret",
    ),
    Case(
        "missing-within",
        ["run", "bad.sase", "-i", "events.csv"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\n", "events.csv": EVENTS},
        exit=2,
        stderr="bad.sase:1:",
        error="caret",
    ),
    Case(
        "unknown-variable",
        ["run", "bad.sase", "-i", "events.csv"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\nWHERE z.price > 1\nWITHIN 10 s\n", "events.csv": EVENTS},
        exit=2,
        stderr="bad.sase:2:",
        error="caret",
    ),
    Case(
        "unknown-attribute",
        ["run", "bad.sase", "-i", "events.csv"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\nWHERE a.nope > 1\nWITHIN 10 s\n", "events.csv": EVENTS},
        exit=2,
        stderr="nope",
        error="caret",
    ),
    Case(
        "missing-type-column",
        ["run", "q.sase", "-i", "r.csv"],
        {"q.sase": SEQ_Q, "r.csv": RENAMED},
        exit=1,
        stderr="'type'",
        error="line",
    ),
    Case(
        "missing-time-column",
        ["run", "q.sase", "-i", "r.csv", "--type-col", "kind"],
        {"q.sase": SEQ_Q, "r.csv": RENAMED},
        exit=1,
        stderr="'ts'",
        error="line",
    ),
    Case(
        "decreasing-timestamp",
        ["run", "q.sase", "-i", "dec.csv"],
        {"q.sase": SEQ_Q, "dec.csv": DECREASING},
        exit=1,
        stderr="row 2",
        error="line",
    ),
    Case(
        "unparsable-timestamp",
        ["run", "q.sase", "-i", "bad.csv"],
        {"q.sase": SEQ_Q, "bad.csv": BAD_ROWS},
        exit=1,
        stderr="row 1",
        error="line",
    ),
    Case(
        "unparsable-timestamp-iso",
        ["run", "q.sase", "-i", "bad.csv"],
        {"q.sase": SEQ_Q, "bad.csv": "ts,type\n2024-01-01T00:00:00Z,A\nnot-a-date,B\n"},
        exit=1,
        stderr="row 1",
        error="line",
    ),
    Case(
        "unparsable-timestamp-time-format",
        ["run", "q.sase", "-i", "bad.csv", "--time-format", "%Y%m%d%H%M"],
        {"q.sase": SEQ_Q, "bad.csv": "ts,type\n200802010900,A\n2008-02-01,B\n"},
        exit=1,
        stderr="row 1",
        error="line",
    ),
    Case(
        "missing-input-file",
        ["run", "q.sase", "-i", "nowhere.csv"],
        {"q.sase": SEQ_Q},
        exit=1,
        stderr="nowhere.csv",
        error="line",
    ),
    Case(
        "missing-from-file",
        ["run", "q.sase"],
        {"q.sase": "FROM 'nowhere.csv'\n" + SEQ_Q},
        exit=1,
        stderr="nowhere.csv",
        error="line",
    ),
    Case(
        "missing-query-file",
        ["run", "nowhere.sase", "-i", "events.csv"],
        {"events.csv": EVENTS},
        exit=2,
        stderr="nowhere.sase",
        error="line",
    ),
    Case(
        "empty-input-file",
        ["run", "q.sase", "-i", "empty.csv"],
        {"q.sase": SEQ_Q, "empty.csv": ""},
        exit=1,
        stderr="empty.csv",
        error="line",
    ),
    Case("empty-stdin", ["run", "q.sase"], {"q.sase": SEQ_Q}, stdin="", exit=1, error="line"),
    Case(
        "truncated-gzip",
        ["run", "q.sase", "-i", "cut.csv.gz"],
        {"q.sase": SEQ_Q, "cut.csv.gz": TRUNCATED_GZ},
        exit=1,
        stderr="cut.csv.gz",
        error="line",
    ),
    Case(
        "not-utf8",
        ["run", "q.sase", "-i", "latin.csv"],
        {"q.sase": SEQ_Q, "latin.csv": LATIN1},
        exit=1,
        stderr="latin.csv",
        error="line",
    ),
    Case(
        "not-utf8-stdin",
        ["run", "q.sase"],
        {"q.sase": SEQ_Q},
        stdin=LATIN1,
        exit=1,
        stderr="UTF-8",
        error="line",
    ),
    Case(
        "bad-order",
        ["run", "q.sase", "-i", "events.csv", "--order", "a,b,zz"],
        BASE,
        exit=2,
        stderr="zz",
        error="line",
    ),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c.id)
def test_run_errors(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_case(case, tmp_path, monkeypatch)
    if case.error == "caret":
        name, line, col, message = assert_caret(result)
        assert name == case.args[1] and line >= 1 and col >= 1 and message, describe(result)


def test_unknown_attribute_caret_points_at_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = Case(
        "attr",
        ["run", "bad.sase", "-i", "events.csv"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\nWHERE a.nope > 1\nWITHIN 10 s\n", "events.csv": EVENTS},
        exit=2,
    )
    result = run_case(case, tmp_path, monkeypatch)
    name, line, col, message = assert_caret(result)
    assert (name, line, col) == ("bad.sase", 2, 7), describe(result)
    assert "nope" in message, describe(result)
    source, caret = result.stderr.splitlines()[1:3]
    assert "WHERE a.nope > 1" in source
    assert source[caret.index("^") :].startswith("a.nope"), describe(result)


def test_decreasing_and_unparsable_messages_name_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path, {"q.sase": SEQ_Q, "dec.csv": DECREASING, "bad.csv": BAD_ROWS})
    monkeypatch.chdir(tmp_path)
    line = assert_one_line(invoke(["run", "q.sase", "-i", "dec.csv"]))
    assert "dec.csv" in line and "row 2" in line and "'3'" in line and "'5'" in line, line
    assert "--sort" in line, line
    line = assert_one_line(invoke(["run", "q.sase", "-i", "bad.csv"]))
    assert "bad.csv" in line and "row 1" in line and "foo" in line, line


# --- output already written stays complete when a later row is bad ---------------------


# Row 6 goes back in time; a=0, b=1, c=2 completes before it (and before its chunk).
BAD_ROW_6 = "ts,type,price\n0,A,1\n1,B,2\n2,C,3\n3,X,0\n4,X,0\n5,X,0\n1,C,9\n7,C,9\n"


def assert_written_then_failed(result: Result, bad_row: int, expected: set[tuple[object, ...]]) -> None:
    assert result.exit_code == 1, describe(result)
    objs = jsonl(result.stdout)  # every line complete and valid JSON
    assert rows_of(objs) == expected and len(objs) == len(expected), describe(result)
    line = assert_one_line(result)
    assert f"row {bad_row}" in line, line


def test_matches_before_a_bad_row_are_written_small_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--chunk-rows 4``: rows 0-3, then 4-7; the bad row 6 is in the second chunk."""
    write_files(tmp_path, {"q.sase": SEQ_Q, "bad6.csv": BAD_ROW_6})
    monkeypatch.chdir(tmp_path)
    result = invoke(["run", "q.sase", "-i", "bad6.csv", "--chunk-rows", "4", *JSONL])
    assert_written_then_failed(result, 6, {(0, 1, 2)})
    assert "'1'" in result.stderr and "'5'" in result.stderr, describe(result)


def _long_input(bad_at_end: bool) -> str:
    """A B C (one match), then X rows past the first chunk, then optionally a row back in time."""
    lines = ["ts,type,price", "0,A,1", "1,B,2", "2,C,3"]
    lines += [f"{i},X,0" for i in range(3, CHUNK_ROWS + 4)]
    if bad_at_end:
        lines.append("1,C,9")
    return "\n".join(lines) + "\n"


def test_matches_before_a_bad_row_are_written_real_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _long_input(bad_at_end=True)
    bad_row = text.count("\n") - 2  # data rows minus one
    assert bad_row >= CHUNK_ROWS
    write_files(tmp_path, {"q.sase": SEQ_Q, "long.csv": text})
    monkeypatch.chdir(tmp_path)
    assert_written_then_failed(invoke(["run", "q.sase", "-i", "long.csv", *JSONL]), bad_row, {(0, 1, 2)})


def test_matches_before_a_truncation_are_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .gz cut off well after the first chunk: the first chunk's match is written."""
    text = _long_input(bad_at_end=False) + "".join(
        f"{i},X,0\n" for i in range(CHUNK_ROWS + 4, 3 * CHUNK_ROWS)
    )
    packed = gzip.compress(text.encode())
    write_files(tmp_path, {"q.sase": SEQ_Q, "cut.csv.gz": packed[: len(packed) * 3 // 4]})
    monkeypatch.chdir(tmp_path)
    result = invoke(["run", "q.sase", "-i", "cut.csv.gz", *JSONL])
    assert result.exit_code == 1, describe(result)
    assert rows_of(jsonl(result.stdout)) == {(0, 1, 2)}, describe(result)
    line = assert_one_line(result)
    assert "cut.csv.gz" in line, line


# --- cepcli check ---------------------------------------------------------------------

CHECK_CASES = [
    Case("ok", ["check", "q.sase"], {"q.sase": SEQ_Q}, stdout="q.sase: ok"),
    Case(
        "ok-against-input", ["check", "q.sase", "-i", "events.csv"], BASE, stdout="checked against events.csv"
    ),
    Case(
        "ok-against-from",
        ["check", "queries/q.sase"],
        {"queries/q.sase": "FROM 'data.csv'\n" + SEQ_Q, "queries/data.csv": EVENTS},
        stdout="ok",
    ),
    Case(
        "ok-without-input-does-not-check-columns",
        ["check", "bad.sase"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\nWHERE a.nope > 1\nWITHIN 10 s\n"},
        stdout="ok",
    ),
    Case(
        "missing-column-with-input",
        ["check", "bad.sase", "-i", "events.csv"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\nWHERE a.nope > 1\nWITHIN 10 s\n", "events.csv": EVENTS},
        exit=2,
        stdout=nothing,
        stderr="nope",
        error="caret",
    ),
    Case(
        "missing-column-via-from",
        ["check", "bad.sase"],
        {
            "bad.sase": "FROM 'events.csv'\nPATTERN SEQ(A a, B b)\nWHERE a.nope > 1\nWITHIN 10 s\n",
            "events.csv": EVENTS,
        },
        exit=2,
        stdout=nothing,
        stderr="bad.sase:3:",
        error="caret",
    ),
    Case(
        "syntax-error",
        ["check", "bad.sase"],
        {"bad.sase": "PATTERN SEQ(A a, B b C c)\nWITHIN 10 s\n"},
        exit=2,
        stdout=nothing,
        stderr="bad.sase:1:",
        error="caret",
    ),
    Case(
        "unknown-variable",
        ["check", "bad.sase"],
        {"bad.sase": "PATTERN SEQ(A a, B b)\nWHERE z.price > 1\nWITHIN 10 s\n"},
        exit=2,
        stdout=nothing,
        stderr="'z'",
        error="caret",
    ),
    Case("missing-query-file", ["check", "nowhere.sase"], {}, exit=2, stderr="nowhere.sase", error="line"),
    Case(
        "missing-input-file",
        ["check", "q.sase", "-i", "nowhere.csv"],
        {"q.sase": SEQ_Q},
        exit=1,
        stderr="nowhere.csv",
        error="line",
    ),
    Case(
        "missing-type-column",
        ["check", "q.sase", "-i", "r.csv"],
        {"q.sase": SEQ_Q, "r.csv": RENAMED},
        exit=1,
        stderr="--type-col",
        error="line",
    ),
    Case(
        "type-col-time-col",
        ["check", "q.sase", "-i", "r.csv", "--type-col", "kind", "--time-col", "time"],
        {"q.sase": SEQ_Q, "r.csv": RENAMED},
        stdout="ok",
    ),
    Case(
        "no-header-without-columns",
        ["check", "q.sase", "-i", "events.csv", "--no-header"],
        BASE,
        exit=2,
        stderr="--columns",
        error="line",
    ),
]


@pytest.mark.parametrize("case", CHECK_CASES, ids=lambda c: c.id)
def test_check(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_case(case, tmp_path, monkeypatch)
    if case.exit == 0:
        assert result.stderr == "", describe(result)
        assert len(result.stdout.splitlines()) == 1, describe(result)


# --- real processes -------------------------------------------------------------------

CEPCLI = Path(sys.executable).with_name("cepcli")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CEPCLI_DEBUG"}
    env.update(extra)
    return env


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_closed_pipe_exits_quietly(fmt: str, tmp_path: Path) -> None:
    """``cepcli run ... | head -1``: the reader goes away after one line."""
    types = "ABC"
    rows = "".join(f"{i},{types[i % 3]},{i}\n" for i in range(20_000))
    (tmp_path / "many.csv").write_text("ts,type,price\n" + rows, encoding="utf-8")
    (tmp_path / "q.sase").write_text("PATTERN SEQ(A a, B b, C c)\nWITHIN 30 s\n", encoding="utf-8")
    proc = subprocess.Popen(
        [str(CEPCLI), "run", "q.sase", "-i", "many.csv", "--format", fmt],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    try:
        code = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert first.endswith(b"\n") and first.strip(), first
    assert "Traceback" not in err, err
    assert "Exception ignored" not in err, err
    assert "error" not in err.lower(), err
    assert code in (0, 1, -13), (code, err)  # quiet: 0 (or a SIGPIPE-style exit), never a crash


DEBUG_INPUTS = {
    "decreasing-timestamp": ("dec.csv", DECREASING.encode()),
    "truncated-gzip": ("cut.csv.gz", TRUNCATED_GZ),
}


@pytest.mark.parametrize("which", list(DEBUG_INPUTS))
def test_cepcli_debug_shows_a_traceback(which: str, tmp_path: Path) -> None:
    name, content = DEBUG_INPUTS[which]
    (tmp_path / name).write_bytes(content)
    (tmp_path / "q.sase").write_text(SEQ_Q, encoding="utf-8")
    command = [str(CEPCLI), "run", "q.sase", "-i", name]
    plain = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=30)
    assert plain.returncode == 1, plain.stderr
    assert "Traceback" not in plain.stderr, plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1 and name in plain.stderr, plain.stderr
    debug = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, env=_env(CEPCLI_DEBUG="1"), timeout=30
    )
    assert debug.returncode != 0, debug.stderr
    assert "Traceback (most recent call last)" in debug.stderr, debug.stderr
    assert "InputError" in debug.stderr, debug.stderr
