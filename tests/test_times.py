"""Exact time (docs/semantics.md sections 1 and 4): timestamps are int64 nanoseconds
from the reader to the engines, and the window is inclusive, ``max - min <= W``, computed
exactly.

The boundary is checked for every engine and every structure, in every way a time can be
written: events exactly one window apart match; one step of the representation more
(1 ms, or 1 ns) and they do not. Each count is worked out by hand, and the oracle and
every engine must give it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli
from cepcli.errors import InputError
from tests.harness import run_engine
from tests.oracle import oracle
from tests.test_cases import ENGINES

BASE = 1_709_273_845_210_000_000  # 2024-03-01T06:17:25.210Z, in nanoseconds
W = 500_000_000  # the window of every query here: 500 ms

# How a time is written: (name, text of an instant in nanoseconds, --time-unit, resolution).
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(ns: int, digits: int, zone: str = "Z") -> str:
    whole, frac = divmod(ns, 10**9)
    stamp = _EPOCH + timedelta(seconds=whole)
    if zone != "Z":
        stamp = stamp.astimezone(datetime.strptime(zone, "%z").tzinfo)
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
    text += f".{frac:09d}"[: digits + 1] if digits else ""
    return text + (zone if zone == "Z" else stamp.strftime("%z")[:3] + ":" + stamp.strftime("%z")[3:])


WRITINGS: dict[str, tuple[Callable[[int], str], str, int]] = {
    "decimal-seconds": (lambda ns: str(Decimal(ns) / Decimal(10**9)), "s", 10**6),
    "iso-ms-z": (lambda ns: _iso(ns, 3), "s", 10**6),
    "iso-ms-offset": (lambda ns: _iso(ns, 3, "+0130"), "s", 10**6),
    "iso-ns": (lambda ns: _iso(ns, 9), "s", 1),
    # RFC 3339's lower-case t and z, and a tenth digit that is zero: the same instants
    "iso-ns-10-digits-lower-z": (lambda ns: _iso(ns, 9).replace("T", "t").replace("Z", "0z"), "s", 1),
    "iso-ns-lower-t-offset": (lambda ns: _iso(ns, 9, "+0130").replace("T", "t"), "s", 1),
    "epoch-ms": (lambda ns: str(ns // 10**6), "ms", 10**6),
    "epoch-us": (lambda ns: str(ns // 10**3), "us", 10**3),
    "epoch-ns": (lambda ns: str(ns), "ns", 1),
}

# (query, events as (type, offset from BASE in units of W/2 or of the resolution), matches
# when the last offset is exactly the window, and when it is one step more). Offsets:
# "W" is the window, "W+" the window and one step of the writing's resolution.
STRUCTURES: dict[str, tuple[str, list[tuple[str, str]], int, int]] = {
    "seq2": ("SEQ(A a, B b)", [("A", "0"), ("B", "W")], 1, 0),
    "seq3": ("SEQ(A a, B b, C c)", [("A", "0"), ("B", "H"), ("C", "W")], 1, 0),
    "and": ("AND(A a, B b)", [("B", "0"), ("A", "W")], 1, 0),
    "kleene": ("SEQ(A a, B+ b[], C c)", [("A", "0"), ("B", "H"), ("B", "H"), ("C", "W")], 3, 0),
    "or": ("OR(SEQ(A a, B b), SEQ(C c, D d))", [("C", "0"), ("A", "H"), ("D", "W"), ("B", "W")], 2, 1),
    # the negated event is just inside (exactly W after the first), or just outside
    "not-trailing": ("SEQ(A a, B b, NOT C n)", [("A", "0"), ("B", "H"), ("C", "W")], 0, 1),
    "not-leading": ("SEQ(NOT C n, A a, B b)", [("C", "0"), ("A", "H"), ("B", "W")], 0, 1),
    "not-in-and": ("AND(A a, B b, NOT C n)", [("A", "0"), ("B", "H"), ("C", "W")], 0, 1),
    # the condition sees the times in time units, exactly (the window is 1 s here): twice
    # the gap is one second exactly at W, and more one step past it
    "condition": ("SEQ(A a, B b) WHERE (b.ts - a.ts) * 2 <= 1 s", [("A", "0"), ("B", "W")], 1, 0),
}


def _offset(code: str, step: int, past: bool) -> int:
    return {"0": 0, "H": W // 2, "W": W + (step if past else 0)}[code]


def _stream(structure: str, writing: str, past: bool) -> tuple[str, str, str, int]:
    """The query, the CSV text, the time unit and the hand-worked count."""
    pattern, events, at, beyond = STRUCTURES[structure]
    write, unit, step = WRITINGS[writing]
    if " WHERE " in pattern:
        pattern, where = pattern.split(" WHERE ")
        where = where.replace("1 s", {"s": "1", "ms": "1000", "us": "1000000", "ns": "1000000000"}[unit])
        query = f"PATTERN {pattern} WHERE {where} WITHIN 1 s"
    else:
        query = f"PATTERN {pattern} WITHIN 500 ms"
    lines = ["type,ts", *(f"{t},{write(BASE + _offset(code, step, past))}" for t, code in events)]
    return query, "\n".join(lines) + "\n", unit, beyond if past else at


@pytest.mark.parametrize("past", [False, True], ids=["exactly-W", "one-step-more"])
@pytest.mark.parametrize("writing", sorted(WRITINGS))
@pytest.mark.parametrize("structure", sorted(STRUCTURES))
def test_the_window_is_inclusive_and_exact(structure: str, writing: str, past: bool) -> None:
    query, text, unit, count = _stream(structure, writing, past)
    want = oracle(query, text, time_unit=unit)
    assert len(want) == count, (query, text, want)
    for engine in ENGINES:
        got, _ = run_engine(query, text, engine, time_unit=unit)
        assert got == want, (engine, query, text)


def test_fractional_seconds_from_the_issue() -> None:
    """``14.067`` and ``614.067`` are exactly 600 s apart."""
    query = "PATTERN SEQ(A a, B b) WITHIN 600 s"
    text = "type,ts\nA,14.067\nB,614.067\nB,614.0670001\n"
    for engine in ENGINES:
        got, _ = run_engine(query, text, engine)
        assert got == {frozenset({("a", (0,)), ("b", (1,))})}, engine


def test_a_bare_window_is_in_the_time_unit() -> None:
    """Epoch milliseconds: ``WITHIN 500`` is 500 ms, as ``WITHIN 500 ms``; ``500 s`` is more."""
    text = "type,ts\nA,1000\nB,1500\nB,1501\n"
    for window, count in (("500", 1), ("500 ms", 1), ("0.5 s", 1), ("500 s", 2)):
        got, _ = run_engine(f"PATTERN SEQ(A a, B b) WITHIN {window}", text, "tree", time_unit="ms")
        assert len(got) == count, window


def _run(tmp_path: Path, text: str, *args: str, query: str = "PATTERN SEQ(A a, B b) WITHIN 10 s") -> Result:
    q, data = tmp_path / "q.sase", tmp_path / "in.csv"
    q.write_text(query)
    data.write_text(text)
    result = CliRunner().invoke(cli, ["run", str(q), "-i", str(data), "--format", "jsonl", "-q", *args])
    assert "Traceback" not in result.output and "internal error" not in result.stderr, result.stderr
    return result


@pytest.mark.parametrize(
    ("value", "args", "why"),
    [
        ("2300-01-01T00:00:00", [], "timestamp '2300-01-01T00:00:00' is out of range: times must lie"),
        ("1600-01-01", [], "timestamp '1600-01-01' is out of range"),
        ("99999999999", [], "timestamp '99999999999' is out of range"),
        ("1.0000000001", [], "timestamp '1.0000000001' is finer than a nanosecond"),
        ("1.5", ["--time-unit", "ns"], "timestamp '1.5' is finer than a nanosecond"),
        ("20130101junk", ["--time-format", "%Y%m%d"], "cannot read timestamp '20130101junk' with"),
        ("2013-01-01 05:00", ["--time-format", "%Y-%m-%d"], "cannot read timestamp '2013-01-01 05:00' with"),
        ("next tuesday", [], "cannot read timestamp 'next tuesday' as an ISO-8601 date-time"),
    ],
)
def test_an_unreadable_time_is_a_bad_row_saying_why(
    tmp_path: Path, value: str, args: list[str], why: str
) -> None:
    result = _run(tmp_path, f"type,ts\nA,{value}\n", *args)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"row 0: {why}" in lines[0], lines


def test_the_format_must_read_the_whole_value(tmp_path: Path) -> None:
    """strptime reads a prefix; cepcli refuses a value it only partly consumes."""
    good = _run(tmp_path, "type,ts\nA,201301010500\nB,201301010501\n", "--time-format", "%Y%m%d%H%M")
    assert good.exit_code == 0 and len(good.stdout.splitlines()) == 0  # a minute apart: outside 10 s
    ok = _run(
        tmp_path,
        "type,ts\nA,201301010500\nB,201301010500\n",
        "--time-format",
        "%Y%m%d%H%M",
    )
    assert ok.exit_code == 0 and len(ok.stdout.splitlines()) == 1
    cut = _run(tmp_path, "type,ts\nA,20130101050012\n", "--time-format", "%Y%m%d%H%M")
    assert cut.exit_code == 1 and "cannot read timestamp '20130101050012' with --time-format" in cut.stderr


def test_numbers_that_look_like_dates_get_a_warning(tmp_path: Path) -> None:
    """12-digit YYYYMMDDhhmm numbers read as seconds are decades off: say so, once; a
    --time-unit given says the user means numbers."""
    text = "type,ts\nA,201301010500\nB,201301010501\n"
    result = _run(tmp_path, text, "--on-bad-row", "skip")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings[0].startswith("warning: the time column 'ts' holds numbers like 201301010500 that look")
    assert "--time-format %Y%m%d%H%M" in warnings[0]
    quiet = _run(tmp_path, text, "--time-unit", "ms")
    assert quiet.exit_code == 0 and "look like dates" not in quiet.stderr


def test_nasdaq_minute_bars_with_the_format(tmp_path: Path) -> None:
    """Headerless NASDAQ bars (YYYYMMDDhhmm): with --time-format they are minutes apart."""
    text = "AAPL,201307010930,1,2,0,1,10\nAMZN,201307010931,1,2,0,1,10\nAAPL,201307010940,1,2,0,1,10\n"
    columns = "ticker,time,open,high,low,close,volume"
    args = ["--no-header", "--columns", columns, "--type-col", "ticker", "--time-col", "time"]
    query = "PATTERN SEQ(AAPL a, AMZN b) WITHIN 5 min"
    result = _run(tmp_path, text, *args, "--time-format", "%Y%m%d%H%M", query=query)
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["a"]["_row"] for line in result.stdout.splitlines()] == [0]


def test_zones_are_converted_to_utc(tmp_path: Path) -> None:
    """05:00+01:00 is 04:00Z: the same instant, so ``a`` and ``b`` are 0 s apart."""
    text = "type,ts\nA,2013-01-01T05:00:00+01:00\nB,2013-01-01T04:00:00Z\nB,2013-01-01T04:00:00\n"
    for engine in ("eager", "chain", "tree"):
        got, _ = run_engine("PATTERN AND(A a, B b) WITHIN 1 ns", text, engine)
        assert got == {frozenset({("a", (0,)), ("b", (1,))}), frozenset({("a", (0,)), ("b", (2,))})}


def test_within_zero_is_a_window_too() -> None:
    got, _ = run_engine("PATTERN SEQ(A a, B b) WITHIN 0.000000001 s", "type,ts\nA,1\nB,1.000000001\n", "tree")
    assert len(got) == 1


def test_a_time_out_of_order_names_both_values() -> None:
    with pytest.raises(InputError, match=r"timestamp '1.5' is earlier than the previous row's '1.50001'"):
        run_engine("PATTERN SEQ(A a, B b) WITHIN 1", "type,ts\nA,1.50001\nB,1.5\n", "tree")
