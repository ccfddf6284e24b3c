"""The columnar engine's own mechanisms, each against the oracle: time slices (a match owned
by the slice of its earliest event, each once, whatever the slices' size), joins on an exact
key (and where equal keys would not be equal values, no key), the limit on live partial
matches, and what its stats say. The case table and the hypothesis properties run it too
(``tests/test_cases.py``)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from cepcli.errors import LimitError
from cepcli.runtime import bands, columnar
from cepcli.sources import source as source_module
from tests.harness import run_engine
from tests.oracle import oracle


def _stream(seed: int, rows: int = 60) -> str:
    rnd = random.Random(seed)
    lines, ts = ["type,ts,x,k,f"], 0
    for _ in range(rows):
        ts += rnd.choice([0, 1, 1, 2, 5])
        k = rnd.choice(["p", "q", "", "r"])
        f = rnd.choice(["0.0", "-0.0", "1.5", "", "NaN"])
        lines.append(f"{rnd.choice('ABCD')},{ts},{rnd.randrange(5)},{k},{f}")
    return "\n".join(lines) + "\n"


QUERIES = [
    "PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 6",
    "PATTERN SEQ(A a, B b, C c) WHERE a.k = c.k AND b.k = c.k WITHIN 8",
    "PATTERN AND(A a, B b, C c) WHERE a.k = b.k WITHIN 5",
    "PATTERN SEQ(A a, NOT D n, C c) WHERE [k] WITHIN 6",
    "PATTERN SEQ(A a, C c, NOT D n) WHERE n.x > a.x WITHIN 4",
    "PATTERN OR(SEQ(A a, B b), SEQ(C c, D d)) WHERE a.f = b.f AND c.k = d.k WITHIN 3",
    "PATTERN OR(SEQ(A a, B b), AND(A a2, B b2)) WHERE a.x <= b.x WITHIN 3",
    "PATTERN SEQ(A a, A b) WHERE a.f = b.f AND a.x != b.x WITHIN 5",
]


@pytest.mark.parametrize("engine", ["columnar", "columnar:pipe"])
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(
    "slice_rows,step_tuples", [(1, 1 << 21), (3, 1 << 21), (1 << 20, 1 << 21), (1 << 20, 2)]
)
def test_slices_of_any_size_give_the_oracles_matches(
    query: str, slice_rows: int, step_tuples: int, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice owns the matches whose earliest event it holds and reads a window on each
    side: with one row a slice, matches cross every border; with at most 2 partial matches a
    join, a slice is halved again and again (down to the rows of one time). Also inside the
    steps of an incremental evaluation (``columnar:pipe``: a step every 13 rows)."""
    monkeypatch.setattr(columnar, "SLICE_ROWS", slice_rows)
    monkeypatch.setattr(columnar, "STEP_TUPLES", step_tuples)
    for seed in range(8):
        text = _stream(seed)
        got, _ = run_engine(query, text, engine, chunk_rows=13)
        assert got == oracle(query, text), (seed, query)


@pytest.mark.parametrize(
    "query",
    ["PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 6", "PATTERN SEQ(A a, B b, NOT C n) WITHIN 6"],
)
def test_a_file_in_time_order_is_held_a_window_at_a_time(query: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory follows the window, not the file: 20,000 rows in steps of at least 500 new
    rows hold at most a step, its tail and a window's rows at once (the whole input with
    ``--sort``, which must hold it), with the same matches."""
    monkeypatch.setattr(source_module, "STEP_ROWS", 500)
    rnd = random.Random(7)
    lines = ["type,ts,x"] + [f"{rnd.choice('ABC')},{i // 2},{rnd.randrange(9)}" for i in range(20_000)]
    text = "\n".join(lines) + "\n"
    stepped, stats = run_engine(query, text, "columnar", chunk_rows=256)
    whole, whole_stats = run_engine(query, text, "columnar", chunk_rows=256, sort=True)
    assert stepped == whole and len(stepped) > 1000
    assert whole_stats.peak_buffered_events == whole_stats.relevant_events > 10_000
    assert stats.extra["columnar_steps"] > 10
    # a step: its new rows (500, and a piece of at most 256 beyond), its tail (the rows of
    # two windows at most, 2 rows a time unit): under 800 rows, of more than 10,000
    assert stats.peak_buffered_events <= 500 + 256 + 2 * 6 * 2 + 2


def test_float_keys_are_compared_as_numbers() -> None:
    """-0.0 equals 0.0, NaN equals nothing: a float equality is no hash key (a dictionary
    would tell -0.0 from 0.0), it is evaluated as the condition it is."""
    text = "type,ts,f\nA,1,0.0\nB,2,-0.0\nA,3,NaN\nB,4,NaN\n"
    query = "PATTERN SEQ(A a, B b) WHERE a.f = b.f WITHIN 5"
    got, _ = run_engine(query, text, "columnar")
    assert got == oracle(query, text) == {frozenset({("a", (0,)), ("b", (1,))})}


def test_a_missing_key_joins_nothing() -> None:
    text = "type,ts,k\nA,1,\nB,2,\nA,3,p\nB,4,p\n"
    query = "PATTERN SEQ(A a, B b) WHERE a.k = b.k WITHIN 5"
    got, _ = run_engine(query, text, "columnar")
    assert got == oracle(query, text) == {frozenset({("a", (2,)), ("b", (3,))})}


def test_too_many_partial_matches_is_the_limit_error() -> None:
    import pyarrow as pa

    import cepcli

    table = pa.table({"type": list("AB" * 200), "ts": [i // 4 for i in range(400)]})
    found = cepcli.find("PATTERN AND(A a, B b) WITHIN 30", table, engine="columnar", max_instances=1_000)
    with pytest.raises(LimitError, match="more than 1,000 live instances"):
        list(found)


def test_its_stats_say_the_order_it_joined_in_and_the_sizes() -> None:
    text = "type,ts,x\n" + "".join(f"{t},{i},{i % 3}\n" for i, t in enumerate("AAAAB" * 6))
    _, stats = run_engine("PATTERN SEQ(A a, B b) WHERE a.x = b.x WITHIN 2", text, "columnar")
    joins = stats.extra["columnar_joins"]
    assert [step["variable"] for step in joins[0]] == ["b", "a"]  # the rarest first
    assert joins[0][-1]["partial_matches"] == stats.matches
    assert stats.relevant_events == 30


def test_a_variable_with_a_condition_on_the_bound_ones_is_joined_before_a_rarer_one_without() -> None:
    """After the rarest, the join order weighs each variable's candidates by the conditions
    its join decides: B (6 rows, ``b.x > a.x``) before C (4 rows, nothing to check), whose
    join would be every pair in the window."""
    rows = [("A", 0, 5), ("B", 1, 1), ("B", 1, 2), ("C", 2, 0), ("B", 3, 9), ("C", 3, 0)]
    rows += [("A", 10, 5), ("B", 11, 1), ("C", 12, 0), ("B", 13, 2), ("C", 14, 0), ("B", 15, 6)]
    text = "type,ts,x\n" + "".join(f"{t},{ts},{x}\n" for t, ts, x in rows)
    query = "PATTERN AND(A a, B b, C c) WHERE b.x > a.x WITHIN 5"
    found, stats = run_engine(query, text, "columnar")
    assert found == oracle(query, text) and len(found) == 4
    joins = stats.extra["columnar_joins"][0]
    assert [step["variable"] for step in joins] == ["a", "b", "c"]
    assert [step["partial_matches"] for step in joins] == [2, 2, 4]  # (a, c first: 4, then 4)


@pytest.mark.parametrize("distinct", [1, 300, 1 << 15, 1 << 20])
def test_a_key_join_visits_its_candidates_by_key_then_position(distinct: int) -> None:
    """The candidates of a key join (ascending positions) are ordered by their key's code
    (a missing key's -1 first), then by position, whatever the number of distinct keys
    (a radix sort below 2**15, a stable sort past it): a wide key column needs more rows
    in one step than the oracle can check, so the order is checked against numpy's
    ``lexsort`` of both."""
    rng = np.random.default_rng(distinct)
    keys = rng.integers(-1, distinct, 50_000).astype(np.int64)
    positions = np.arange(len(keys), dtype=np.int64)
    assert columnar._by_key(keys).tolist() == np.lexsort((positions, keys)).tolist()
    assert columnar._by_key(keys[:0]).tolist() == []


def test_the_limit_counts_what_one_slice_holds() -> None:
    """``--max-instances`` bounds what is held at once: a stream whose joins make many more
    partial matches in all than the limit (here about 4,800), though never near it within
    a short stretch of time, is cut into slices, not refused, and gives the oracle's
    matches; the peak stays under the limit."""
    import pyarrow as pa

    import cepcli

    rows = "".join(f"{i},{'AB'[i % 2]},{i % 7}\n" for i in range(600))
    text = "ts,type,x\n" + rows
    query = "PATTERN SEQ(A a, B b) WHERE a.x + b.x < 3 WITHIN 30"
    table = pa.table(
        {"ts": range(600), "type": ["AB"[i % 2] for i in range(600)], "x": [i % 7 for i in range(600)]}
    )
    found = cepcli.find(query, table, engine="columnar", max_instances=1_000)
    got = {frozenset((v, (e["_row"],)) for v, e in match.items()) for match in found}
    stats = found.stats
    assert got == oracle(query, text) and len(got) > 100
    assert 0 < stats.peak_instances <= 1_000
    assert stats.instances_created > 4_000


def _at_the_edge(text: str, edge: str) -> str:
    """``text`` with its times (whole numbers) read as nanoseconds and moved as one so that
    the first is int64's least but one, or the last int64's greatest."""
    lines = text.splitlines()
    rows = [line.split(",") for line in lines[1:]]
    ticks = [int(r[1]) for r in rows]
    shift = -(1 << 63) + 1 - ticks[0] if edge == "least" else (1 << 63) - 1 - ticks[-1]
    return "\n".join([lines[0], *(",".join([r[0], str(int(r[1]) + shift), *r[2:]]) for r in rows)]) + "\n"


@pytest.mark.parametrize("edge", ["least", "greatest"])
@pytest.mark.parametrize("engine", ["columnar", "adaptive", "tree", "eager"])
def test_times_at_the_int64_edges_give_the_oracles_matches(edge: str, engine: str) -> None:
    """The window's reach of a time near int64's ends is held there, not wrapped around
    (before, the columnar engine's reach of many times at once wrapped around and lost matches)."""
    for query in QUERIES:
        text = _at_the_edge(_stream(0), edge)
        got, _ = run_engine(query, text, engine, time_unit="ns")
        want = oracle(query, text, time_unit="ns")
        assert want, query
        assert got == want, (edge, query)


@pytest.mark.parametrize("engine", ["columnar", "columnar:pipe"])
def test_strict_contiguity_joins_only_the_next_row(engine: str) -> None:
    """Strict contiguity binds the row right after (a join on the next row, SQL's
    ``LEAD``), not every pair in the window that the anti-join would then drop: each
    partial match has one candidate at most, and the matches are the oracle's."""
    query = "PATTERN SEQ(A a, B b, C c) WHERE strict_contiguity { a.x <= b.x } WITHIN 50"
    for seed in range(6):
        text = _stream(seed, rows=400)
        got, stats = run_engine(query, text, engine, chunk_rows=37)
        assert got == oracle(query, text), seed
        for joins in stats.extra["columnar_joins"]:
            sizes = [j["partial_matches"] for j in joins]
            assert all(later <= sizes[0] for later in sizes[1:]), joins


@pytest.mark.parametrize("engine", ["columnar", "columnar:pipe"])
@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B b) WHERE skip_till_next_match { a.x < b.x } WITHIN 50",
        "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match { a.x <= b.x AND c.x > a.x } WITHIN 50",
        "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match(b, c) { c.x > a.x } WITHIN 50",
    ],
)
def test_next_match_binds_the_first_event_that_could_be_the_next(engine: str, query: str) -> None:
    """Skip-till-next-match binds, per partial match, the first later event that could be
    the next variable's (its type, its conditions with the variables before): one candidate
    at most, so its join never grows the partial matches, where the window join would make
    every pair in the window and the anti-join then drop all but one. The matches are the
    oracle's."""
    nexts = {"b", "c"} if "(b, c)" not in query else {"c"}
    for seed in range(6):
        text = _stream(seed, rows=400)
        got, stats = run_engine(query, text, engine, chunk_rows=37)
        assert got == oracle(query, text), seed
        for joins in stats.extra["columnar_joins"]:
            for before, join in itertools.pairwise(joins):
                if join["variable"] in nexts:
                    assert join["partial_matches"] <= before["partial_matches"], joins


@pytest.mark.parametrize("engine", ["columnar", "columnar:pipe"])
@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, A+ b[]) WHERE skip_till_next_match { a.x > 1 AND b[i].x > b[i-1].x"
        " AND b[1].x > a.x } WITHIN 12",
        "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match { [k] AND b[i].x >= b[i-1].x } WITHIN 8",
        "PATTERN SEQ(A a, B c, A{2,} b[]) WHERE skip_till_next_match { b[i].x < a.x } WITHIN 4",
        "PATTERN SEQ(A a, A+ b[]) WHERE skip_till_next_match(a, b) { b[i].x > b[i-1].x } WITHIN 5",
    ],
)
def test_a_next_match_run_is_one_run_per_start(engine: str, query: str) -> None:
    """A SEQ ending in a Kleene variable under skip-till-next-match has one run per start:
    the columnar engine follows it (each next element the first event that could follow
    the run so far, within the window), rather than leaving the pattern to the engines that
    make its subsets one at a time. The matches are the oracle's, a step at a time too."""
    for seed in range(5):
        text = _stream(seed, rows=80)
        got, stats = run_engine(query, text, engine, chunk_rows=13)
        assert got == oracle(query, text), seed
        assert "columnar_ran" not in stats.extra  # (not left to the tree: "tree: a Kleene variable")
        assert "columnar_joins" in stats.extra


@pytest.mark.parametrize("engine", ["columnar", "columnar:pipe"])
@pytest.mark.parametrize(
    "query",
    [
        "PATTERN SEQ(A a, B{1,3} b[], C c) WHERE b[i].x > a.x WITHIN 6",
        "PATTERN SEQ(A a, B{2,3} b[]) WHERE b[i].x >= b[i-1].x AND count(b[]) <= 2 WITHIN 5",
        "PATTERN SEQ(A a, B{1,2} b[], C c) WHERE b[1].x < c.x AND b[last].x > 1 WITHIN 6",
        "PATTERN SEQ(A a, B{1,3} b[], NOT D n, C c) WHERE b[i].x > 0 AND [k] WITHIN 6",
        "PATTERN AND(A a, B{1,2} b[]) WHERE b[i].x < a.x WITHIN 4",
    ],
)
def test_a_bounded_closure_is_joined_as_its_lengths(engine: str, query: str) -> None:
    """``B{l,m} b[]`` binds any ``l`` to ``m`` of B's events: the columnar engine joins each
    length as plain variables (``b[i]``, ``b[i-1]``, ``b[1]``, ``b[last]`` and ``count(b[])``
    written for them) and folds them back into ``b``'s run. The matches are the oracle's,
    a step at a time too."""
    for seed in range(4):
        text = _stream(seed, rows=70)
        got, stats = run_engine(query, text, engine, chunk_rows=13)
        assert got == oracle(query, text), seed
        assert "columnar_ran" not in stats.extra  # (not left to the tree: "tree: a Kleene variable")


RANGE_QUERIES = [
    "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 9",
    "PATTERN SEQ(A a, B b, C c) WHERE b.x >= a.x AND c.x <= b.x WITHIN 9",
    "PATTERN AND(A a, B b) WHERE a.f > b.f WITHIN 9",  # floats: NaN, -0.0, missing
    "PATTERN SEQ(A a, B b) WHERE a.k = b.k AND a.x > b.x WITHIN 9",  # within a key's run
    "PATTERN SEQ(A a, B b) WHERE a.x <= b.f WITHIN 9",  # an integer and a float: not ordered together
    "PATTERN SEQ(A a, B b, NOT C n) WHERE b.x > a.x AND n.x > a.x WITHIN 9",
]


@pytest.mark.parametrize("engine", ["columnar", "columnar:pipe"])
@pytest.mark.parametrize("query", RANGE_QUERIES)
@pytest.mark.parametrize("block", [1, 2, 5])
def test_range_joins_give_the_oracles_matches(
    query: str, block: int, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An order between two variables' attributes is joined by range (blocks of
    candidates sorted by value, ``runtime.bands``) where windows hold many candidates:
    here every join is, in blocks of 1, 2 and 5 candidates, so ranges start and end in and
    across blocks. Missing values, NaN and -0.0 are in the values; the matches are the
    oracle's, and the stats say the joins were made so."""
    monkeypatch.setattr(bands, "MIN_PAIRS", 0)
    monkeypatch.setattr(bands, "MIN_WINDOW", 0)
    monkeypatch.setattr(bands, "BLOCK", block)
    ranged = 0
    for seed in range(6):
        text = _stream(seed, rows=80)
        got, stats = run_engine(query, text, engine, chunk_rows=13)
        assert got == oracle(query, text), (seed, query)
        joins = stats.extra.get("columnar_range_joins", {})
        ranged += sum(j["joins"] for j in joins.values())
    assert (ranged > 0) == ("a.x <= b.f" not in query)


def test_a_range_join_makes_only_the_pairs_it_keeps() -> None:
    """A late event, then a later one: the windows hold 96,454 pairs, a range
    join makes only those it keeps (counted in ``columnar_range_joins``), and its matches
    are the oracle's."""
    rnd = random.Random(3)
    lines = ["type,ts,x"] + [f"{'AB'[i % 2]},{i // 4},{rnd.randrange(10**6)}" for i in range(4_000)]
    text = "\n".join(lines) + "\n"
    query = "PATTERN SEQ(A a, B b) WHERE a.x > 950000 AND b.x > a.x WITHIN 1000"
    got, stats = run_engine(query, text, "columnar")
    assert got == oracle(query, text) and len(got) > 1000
    (sizes,) = stats.extra["columnar_range_joins"].values()
    assert sizes["window_pairs"] > 10 * sizes["pairs"] and sizes["pairs"] == len(got)


def test_explain_names_the_joins_that_may_search_by_key_or_by_range() -> None:
    """``explain`` of the columnar engine says, per join, the equality it looks up by and
    the order it may search by (and when: windows of many candidates)."""
    from click.testing import CliRunner

    from cepcli.cli import cli

    query = "PATTERN SEQ(A a, B b, C c) WHERE a.k = b.k AND b.x > a.x AND c.x <= 3 WITHIN 5"
    done = CliRunner().invoke(cli, ["explain", "-e", query, "--engine", "columnar"])
    assert done.exit_code == 0, done.output
    (state,) = [line for line in done.stdout.splitlines() if line.strip().startswith("q2 ")]
    assert "by key b.k = a.k" in state
    assert f"by range b.x > a.x where its windows hold {bands.MIN_WINDOW}+" in state
    (third,) = [line for line in done.stdout.splitlines() if line.strip().startswith("q3 ")]
    assert "by range" not in third  # (c.x <= 3: a prefilter, no order between two variables)


@pytest.mark.parametrize("order", [["--sort"], ["--max-delay", "50"]])
def test_rows_put_in_time_order_keep_their_own_values(tmp_path: Path, order: list[str]) -> None:
    """An input out of time order, put in order (``--sort``; ``--max-delay``): only the
    columns the query reads are sorted with the rows, the others are taken for the
    matches from where their rows came; every event of every match holds its own row's
    values, in both."""
    import json

    from click.testing import CliRunner

    from cepcli.cli import cli

    rnd = random.Random(3)
    times = list(range(400))
    for i in range(0, 400, 8):  # shuffled within blocks of 8: late by less than 50
        block = times[i : i + 8]
        rnd.shuffle(block)
        times[i : i + 8] = block
    lines = ["type,ts,x,note,score"] + [
        f"{'AB'[t % 2]},{t},{t % 7},n{row},{row * 3}" for row, t in enumerate(times)
    ]
    data, query = tmp_path / "late.csv", tmp_path / "q.sase"
    data.write_text("\n".join(lines) + "\n")
    query.write_text("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 3")
    options = ["--type-col", "type", "--time-col", "ts", *order, "--format", "jsonl", "-q"]
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), *options])
    assert result.exit_code == 0, result.output
    matches = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(matches) > 50
    for match in matches:
        for event in match.values():
            row = event["_row"]
            assert (event["ts"], event["note"], event["score"]) == (times[row], f"n{row}", row * 3)
            assert event["x"] == times[row] % 7
