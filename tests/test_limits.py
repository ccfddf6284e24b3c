"""Limits with a message (issue 14): past each one, one clear error line, never a silent
wrong answer, a RecursionError, or minutes of work at gigabytes.

* at most 64 variables in a pattern (event masks are int64 bit masks, one bit each);
* Kleene subsets of any size (generated with an explicit stack, not recursion);
* at most 10,000 conditions joined by AND/OR in a WHERE clause (checked before parsing);
* at most 10,000 columns in an input (a CSV header is checked as it is read).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cepcli.cli import cli
from cepcli.clock import Window
from cepcli.errors import QueryError
from cepcli.events import Event
from cepcli.plan.pattern import Condition
from cepcli.query import limits
from cepcli.query.checks import MAX_VARIABLES
from cepcli.query.limits import MAX_CONDITIONS, check_conditions
from cepcli.runtime.iterate import Iteration, Subset
from cepcli.runtime.options import EvalOptions
from cepcli.runtime.stats import Stats
from cepcli.sources import options
from cepcli.sources.options import MAX_COLUMNS
from tests.harness import run_engine
from tests.oracle import MatchKey, oracle

ENGINES = ["eager", "chain", "first-chance", "post-processing", "tree", "columnar", "adaptive"]


def _invoke(args: list[str]) -> Result:
    result = CliRunner().invoke(cli, args)
    assert "Traceback" not in result.output, result.output
    assert isinstance(result.exception, SystemExit | None), result.exception
    return result


# --- variables ------------------------------------------------------------------------


def _pattern(count: int) -> str:
    """``count`` variables, one a line: positive ones, then a negated and a Kleene one (the
    last bits: the negated one is bit 62, the Kleene one bit 63 when ``count`` is 64)."""
    items = [f"  T{i} v{i}" for i in range(count - 2)] + ["  NOT X x", "  K+ k[]"]
    return "PATTERN SEQ(\n" + ",\n".join(items) + "\n)\nWITHIN 1000\n"


def _stream(count: int) -> str:
    rows = [f"{i},T{i}" for i in range(count - 2)]
    return "ts,type\n" + "\n".join(rows) + f"\n{count},K\n{count + 1},X\n{count + 2},K\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_most_variables_a_pattern_can_have_find_their_matches(engine: str) -> None:
    """Bit 63, the sign bit of the int64 masks, works like any other, in every engine."""
    query, data = _pattern(MAX_VARIABLES), _stream(MAX_VARIABLES)
    expected = oracle(query, data)
    kleene = {dict(m)["k"] for m in expected}
    assert kleene == {(MAX_VARIABLES - 2,), (MAX_VARIABLES - 2, MAX_VARIABLES)}  # the X forbids (K64) alone
    got, _ = run_engine(query, data, engine, chunk_rows=1000)
    assert got == expected


@pytest.mark.parametrize("engine", ["columnar", "adaptive", "chain", "tree"])
def test_sixty_four_positive_variables_find_their_matches(engine: str) -> None:
    """The last variable's bit is the masks' sign (the columnar engine once stopped with
    an internal error on it)."""
    query = "PATTERN SEQ(" + ", ".join(f"T{i} v{i}" for i in range(MAX_VARIABLES)) + ") WITHIN 1000"
    rows = [f"{i},T{i}" for i in range(MAX_VARIABLES)] + [f"{MAX_VARIABLES},T{MAX_VARIABLES - 1}"]
    data = "ts,type\n" + "\n".join(rows) + "\n"
    expected = oracle(query, data)
    assert len(expected) == 2  # the last type twice
    got, stats = run_engine(query, data, engine, chunk_rows=1000)
    assert got == expected
    if engine in ("columnar", "adaptive"):
        assert "columnar_steps" in stats.extra  # (the columnar engine ran it)


def test_one_variable_too_many_is_a_query_error(tmp_path: Path) -> None:
    query = tmp_path / "q.sase"
    query.write_text(_pattern(MAX_VARIABLES + 1))
    data = tmp_path / "in.csv"
    data.write_text(_stream(MAX_VARIABLES + 1))
    for args in (["check", str(query)], ["run", str(query), "-i", str(data), "-q"]):
        result = _invoke(args)
        assert result.exit_code == 2
        assert result.stderr.splitlines() == [
            f"{query}:{MAX_VARIABLES + 2}:3: too many variables: a pattern has at most 64 (this is the 65th)",
            "      K+ k[]",
            "      ^^^^^^",
        ]
        assert result.stdout == ""


def test_a_long_seq_is_refused_at_once(tmp_path: Path) -> None:
    """300 variables took 50 s in tree and eager (and found nothing: no bit past 63)."""
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(" + ", ".join(f"T{i} v{i}" for i in range(300)) + ") WITHIN 10\n")
    started = time.perf_counter()
    result = _invoke(["check", str(query)])
    assert time.perf_counter() - started < 1.5
    assert result.exit_code == 2
    head = result.stderr.splitlines()[0]
    assert head == f"{query}:1:569: too many variables: a pattern has at most 64 (this is the 65th)"


# --- Kleene subsets ---------------------------------------------------------------------

# A subset of every size up to the number of candidates: the element after the first has
# x = 2, the next x = 3, ...; only the first B starts one longer than itself.
KLEENE = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x = count(b[..i-1]) + 1 WITHIN 100000"


def _kleene_stream(n: int) -> str:
    return "ts,type,x\n0,A,0\n" + "".join(f"{i},B,{i}\n" for i in range(1, n + 1)) + f"{n + 1},C,0\n"


def _kleene_expected(n: int) -> set[MatchKey]:
    """Every B on its own, and every run of the B's from the first on."""
    runs = {(j,) for j in range(1, n + 1)} | {tuple(range(1, k + 1)) for k in range(2, n + 1)}
    return {frozenset({("a", (0,)), ("b", run), ("c", (n + 1,))}) for run in runs}


def test_the_deep_kleene_case_is_the_oracles() -> None:
    assert oracle(KLEENE, _kleene_stream(9)) == _kleene_expected(9)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_kleene_subset_of_1100_elements_needs_no_recursion(engine: str) -> None:
    """Subsets grown by recursion, one level per element, hit Python's recursion limit
    (1,000) in the lazy engines; an explicit stack has none."""
    n = 1100
    got, stats = run_engine(KLEENE, _kleene_stream(n), engine, chunk_rows=1000)
    assert got == _kleene_expected(n)
    assert stats.predicate_evaluations == (n - 1) ** 2  # as many as the recursive form made


def _grow_recursively(
    it: Iteration,
    m: list[object],
    pool: list[Event],
    start: int,
    current: Subset,
    min_ts: int,
    max_ts: int,
    last: Event | None,
) -> Iterator[tuple[Subset, int]]:
    """The recursive form ``Iteration._grow`` had: the order and the checks to keep."""
    hi = it.hi
    size = len(current)
    if last is not None:
        if (hi is None or size < hi) and size + 1 >= it.lo:
            lo_ts = min(min_ts, current[0].ts if current else last.ts)
            if max(max_ts, last.ts) - lo_ts <= it.window.ns and it.element(m, current, last):
                yield current + (last,), lo_ts
        room = hi is None or size + 1 < hi
    else:
        room = hi is None or size < hi
    if not room:
        return
    for j in range(start, len(pool)):
        event = pool[j]
        lo_ts = min(min_ts, current[0].ts if current else event.ts)
        if max(max_ts, event.ts) - lo_ts > it.window.ns:
            break
        if not it.element(m, current, event):
            continue
        grown = current + (event,)
        if last is None and len(grown) >= it.lo:
            yield grown, lo_ts
        yield from _grow_recursively(it, m, pool, j + 1, grown, min_ts, max(max_ts, event.ts), last)


def test_subsets_come_in_the_recursive_order_after_the_same_checks() -> None:
    """Random pools, bounds, windows and conditions (``b[i]`` and ``b[i-1]`` ones): the same
    subsets in the same order, and the same count of predicate evaluations."""
    from cepcli.query import ast as a

    def condition(seed: int, from_second: bool) -> tuple[object, Condition]:
        def check(m: list[object], event: Event, prev: Event | None, current: Subset) -> bool:
            if seed % 2:
                return prev is None or event.values[0] >= prev.values[0]  # type: ignore[operator]
            return hash((seed, event.row, prev.row if prev else -1, len(current))) % 5 != 0

        return check, Condition(a.Bool(True), frozenset({"b"}), "b", from_second)

    for seed in range(400):
        rnd = random.Random(seed)
        n = rnd.randrange(0, 10)
        times = sorted(rnd.randrange(0, 30) for _ in range(n + 1))
        events = [Event(i, t, "B", (rnd.randrange(4),), 1) for i, t in enumerate(times)]
        last = events[-1] if rnd.random() < 0.4 else None
        pool = events[:n]
        lo = rnd.randrange(1, 4)
        hi = rnd.choice([None, lo, lo + 2])
        window = rnd.choice([3, 10, 100])
        conditions = [condition(rnd.randrange(4), rnd.random() < 0.5) for _ in range(rnd.randrange(3))]
        min_ts = rnd.randrange(0, 30)
        max_ts = min_ts + rnd.randrange(0, 6)
        found = []
        for grow in ("stack", "recursion"):
            stats = Stats()
            it = Iteration(lo, hi, conditions, (), None, Window(window), stats, EvalOptions())  # type: ignore[arg-type]
            if grow == "stack":
                subsets = it._grow([], pool, min_ts, max_ts, last)
            else:
                subsets = _grow_recursively(it, [], pool, 0, (), min_ts, max_ts, last)
            rows = [(tuple(e.row for e in s), lo_ts) for s, lo_ts in subsets]
            found.append((rows, stats.predicate_evaluations))
        assert found[0] == found[1], seed


# --- conditions -------------------------------------------------------------------------


def _conditions(count: int) -> str:
    """``count`` conditions joined by AND, one a line (line 3 holds the first)."""
    joined = "\n  AND ".join(f"b.x > a.x - {i}" for i in range(count))
    return f"PATTERN SEQ(A a, B b)\nWHERE\n  {joined}\nWITHIN 10\n"


@pytest.mark.parametrize("count", [MAX_CONDITIONS + 1, 200_000])
def test_too_many_conditions_is_a_query_error_before_parsing(tmp_path: Path, count: int) -> None:
    """200,000 conditions took minutes and gigabytes (parsing, then compiling each one)."""
    query = tmp_path / "q.sase"
    query.write_text(_conditions(count))
    started = time.perf_counter()
    result = _invoke(["check", str(query)])
    assert time.perf_counter() - started < 1.5
    assert result.exit_code == 2
    line = 3 + MAX_CONDITIONS  # the 10,001st condition
    assert result.stderr.splitlines() == [
        f"{query}:{line}:7: too many conditions: a WHERE clause joins at most 10,000 with AND or OR"
        " (this is the 10,001st)",
        f"      AND b.x > a.x - {MAX_CONDITIONS}",
        "          ^",
    ]


def test_the_most_conditions_pass_and_words_in_strings_and_comments_do_not_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_conditions(_conditions(MAX_CONDITIONS))  # the scan only: compiling them takes 2 s
    check_conditions("PATTERN SEQ('and' a, 'or' b) -- and or and\nWHERE a.x = 'and or' WITHIN 1")
    monkeypatch.setattr(limits, "MAX_CONDITIONS", 3)
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    data.write_text("ts,type,x\n0,A,1\n1,B,5\n")
    query.write_text(
        "PATTERN SEQ(A a, B b) -- a comment: and, or, and\n"
        "WHERE a.x = 1 AND (b.x = 5 or b.type = 'and or and') WITHIN 10\n"
    )
    result = _invoke(["run", str(query), "-i", str(data), "--format", "csv", "-q"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2  # the header and the match
    query.write_text("PATTERN SEQ(A a, B b)\nWHERE a.x = 1 AND b.x = 5 AND true AND true WITHIN 10\n")
    result = _invoke(["run", str(query), "-i", str(data), "-q"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"{query}:2:40: too many conditions: a WHERE clause joins at most 3 with AND or OR (this is the 4th)"
    )


def test_the_limit_error_is_a_query_error_with_a_place() -> None:
    with pytest.raises(QueryError) as info:
        check_conditions("PATTERN SEQ(A a, B b) WHERE " + " OR ".join(["a.x = 1"] * 10_001) + " WITHIN 1")
    assert (info.value.span.line, info.value.span.col) == (1, 29 + 10_000 * len("a.x = 1 OR "))


# --- columns ----------------------------------------------------------------------------


def _wide(path: Path, columns: int) -> Path:
    """A CSV of ``columns`` columns in all (ts, type and the rest), an A then a B."""
    rest = columns - 2
    path.write_text(
        "ts,type," + ",".join(f"c{i}" for i in range(rest)) + "\n"
        "0,A," + ",".join(["1"] * rest) + "\n"
        "1,B," + ",".join(["2"] * rest) + "\n"
    )
    return path


@pytest.mark.parametrize("columns", [MAX_COLUMNS + 1, 1_000_000])
def test_a_header_with_too_many_columns_is_one_line(tmp_path: Path, columns: int) -> None:
    """A 1,000,000-column header took minutes and gigabytes (a quadratic check for names
    given twice, then a sample, a kind and a value per column and event)."""
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 10\n")
    data = _wide(tmp_path / "wide.csv", columns)
    started = time.perf_counter()
    result = _invoke(["run", str(query), "-i", str(data), "-q"])
    assert time.perf_counter() - started < 1.5
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"cepcli: error: {data}: the header has {columns:,} columns, more than the limit of 10,000:"
        " keep only the columns the query needs"
    ]


def test_other_inputs_have_the_same_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    import cepcli
    from cepcli.errors import InputError

    monkeypatch.setattr(options, "MAX_COLUMNS", 4)
    frame = pd.DataFrame({"ts": [0, 1], "type": ["A", "B"], "x": [1, 2], "y": [3, 4]})
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 10"
    assert len(list(cepcli.find(query, frame))) == 1
    frame["z"] = [5, 6]
    with pytest.raises(InputError, match="the input has 5 columns, more than the limit of 4: keep only"):
        list(cepcli.find(query, frame))


def test_the_widest_header_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options, "MAX_COLUMNS", 1000)
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WHERE a.c997 < b.c997 WITHIN 10\n")
    for columns, code in ((1000, 0), (1001, 1)):
        data = _wide(tmp_path / "wide.csv", columns)
        result = _invoke(["run", str(query), "-i", str(data), "--format", "csv", "-q"])
        assert result.exit_code == code, result.output
        if code == 0:
            assert len(result.stdout.splitlines()) == 2
        else:
            assert "the header has 1,001 columns, more than the limit of 1,000" in result.stderr


def test_an_error_in_a_long_generated_line_shows_the_part_around_it() -> None:
    """A one-line generated query of 250,000 characters with a mistake near its end: the
    error is three short lines (``file:line:col``, about 160 characters of the line around
    the spot, marked ``...`` where cut, and the caret under the mistake), not the whole line."""
    text = "PATTERN SEQ(" + ", ".join(f"A{i} a{i}" for i in range(20)) + ") WHERE "
    text += " AND ".join(f"a{i % 20}.x > {i}" for i in range(9_000)) + " AND a3.y <> WITHIN 1 s"
    result = _invoke(["check", "-e", text])
    lines = result.stderr.rstrip("\n").split("\n")
    assert result.exit_code == 2 and len(lines) == 3, result.stderr[:500]
    col = text.index("WITHIN") + 1  # "<>" wants a value after it
    assert lines[0].startswith(f"<-e>:1:{col}: unexpected 'WITHIN'")
    assert lines[1].startswith("    ...") and len(lines[1]) <= 4 + 3 + 160 + 3
    assert lines[1][lines[2].index("^") :].startswith("WITHIN")
