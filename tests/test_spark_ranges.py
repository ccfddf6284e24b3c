"""A time-sorted Parquet input is read by time range (``cepcli.spark.ranges``): each shard
reads its own row groups and its window's neighbours, and evaluates them in the task that
read them. The shards' matches, together, are the oracle's, on random streams and queries
cut into random row groups and shards (no Spark needed to see it); through ``--spark``
they are the local run's for every engine, written to the driver and to a directory; and
where the metadata's claim fails (rows out of order inside a group, groups that overlap),
the general way gives the local run's answer, error and bad rows included."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

from cepcli.cli import cli
from cepcli.engines import ENGINE_NAMES
from cepcli.prepare import RunOptions, compile_text
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions
from cepcli.spark import ranges
from cepcli.spark.ranges import Group
from tests.oracle import UNITS, nanoseconds, oracle
from tests.strategies import MAX_COST, TIME_FORMS, examples, oracle_cost

pytestmark = pytest.mark.slow


def _parquet(csv_text: str, path: Path, group_rows: int, unit: str = "s", edge: str = "") -> None:
    """The stream of ``csv_text`` (``ts,type,x,y,g``) as Parquet: the time a native
    timestamp (the oracle's nanoseconds in ``unit``; with ``edge``, all moved as one to the
    least or the greatest int64), x and y integers, g text, missing cells null."""
    lines = [line.split(",") for line in csv_text.splitlines()[1:]]
    number = [None if c == "" else int(c) for c in (row[2] for row in lines)]
    ts = [nanoseconds(row[0], UNITS[unit]) for row in lines]
    if edge == "low":
        ts = [t - ts[0] - (1 << 63) + 1 for t in ts]
    elif edge == "high":
        ts = [t - ts[-1] + (1 << 63) - 1 for t in ts]
    table = pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("ns")),
            "type": pa.array([row[1] for row in lines]),
            "x": pa.array(number, pa.int64()),
            "y": pa.array([None if row[3] == "" else int(row[3]) for row in lines], pa.int64()),
            "g": pa.array([None if row[4] == "" else row[4] for row in lines], pa.string()),
        }
    )
    pq.write_table(table, path, row_group_size=group_rows)


def _shard_matches(query: str, path: Path, engine: str, shards: int) -> set[Any] | None:
    """The matches every shard of a by-time-range plan owns, as the oracle's keys (None:
    no plan, the groups too few); a match owned twice fails."""
    from cepcli.spark.plan import projected as _projected
    from cepcli.spark.plan import sample as _sample
    from cepcli.spark.shards import Evaluation, evaluate
    from cepcli.spark.splits import row_groups

    inputs = InputOptions(str(path), time_col="ts", type_col="type")
    compiled = compile_text(query, "<query>", inputs.unit)
    options = RunOptions(engine)
    reading, orders = _sample([("", compiled)], inputs, options, Stats())
    reading = _projected(reading, [("", compiled)], options, row_groups(str(path), 0, 1)[0])
    groups = ranges.time_groups([str(path)], "ts")
    assert groups is not None
    plan = ranges.plan(groups, shards, compiled.pattern.window, extra_share=float("inf"))
    if plan is None:
        return None
    job = Evaluation(
        reading,
        engine,
        orders[0],
        plan.bounds,
        compiled.pattern.window,
        None,
        None,
        1 << 20,
        False,
        False,
        True,
    )
    found: list[Any] = []
    read = 0
    for shard in range(len(plan.parts)):
        table, reports, unfit = ranges.read_range(reading, plan, shard)
        assert unfit is None
        read += sum(r["rows"] for r in reports)
        found += [frozenset(r["match"].key) for r in evaluate(job, shard, table) if r["kind"] == "match"]
    assert read == pq.ParquetFile(path).metadata.num_rows  # each row counted by one shard
    assert len(found) == len(set(found)), "a match was owned by two shards"
    return set(found)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    example=examples(time_forms=TIME_FORMS, missing=None),
    group_rows=st.integers(1, 4),
    shards=st.integers(2, 5),
    engine=st.sampled_from(ENGINE_NAMES),
    edge=st.sampled_from(["", "", "low", "high"]),
)
def test_shards_by_time_range_find_the_oracles_matches(
    example: Any, group_rows: int, shards: int, engine: str, edge: str, tmp_path_factory: Any
) -> None:
    """Times fractional, ISO, epoch-ms or at the int64 edges, missing values, ties across
    group edges: each shard reads its groups and its neighbours', and every match is owned
    by one shard, the oracle's matches all."""
    assume(oracle_cost(example.pattern, example.csv) <= MAX_COST)
    note(str(example))
    path = tmp_path_factory.mktemp("ranges") / "in.parquet"
    _parquet(example.csv, path, group_rows, example.time_unit, edge)
    got = _shard_matches(example.query, path, engine, shards)
    event("no plan" if got is None else "shards")
    assume(got is not None)
    assert got == oracle(example.query, example.csv, time_unit=example.time_unit)


def _group(low: int, high: int, rows: int = 10, at: int = 0) -> Group:
    return Group("f", at, at + rows, at, low, high)


def test_the_plan_cuts_at_group_edges_and_reads_the_neighbours_in_reach() -> None:
    groups = [_group(10 * k, 10 * k + 9, at=10 * k) for k in range(8)]
    plan = ranges.plan(groups, 4, 3, extra_share=1)
    assert plan is not None
    assert plan.bounds == (20, 40, 60)
    owned = [[(p.split.start, p.split.stop) for p in parts if p.owned] for parts in plan.parts]
    others = [[(p.split.start, p.split.stop) for p in parts if not p.owned] for parts in plan.parts]
    assert owned == [[(0, 20)], [(20, 40)], [(40, 60)], [(60, 80)]]
    # shard 1 needs [17, 43]: the group of 10..19 before it, the group of 40..49 after
    assert others == [[(20, 30)], [(10, 20), (40, 50)], [(30, 40), (60, 70)], [(50, 60)]]
    assert plan.extra == 60


def test_a_tie_across_a_group_edge_reaches_both_shards() -> None:
    """A group ending at the time the next one starts: the rows at that time belong to the
    later shard's slice, and it reads them from the earlier group."""
    plan = ranges.plan([_group(0, 5), _group(5, 9, at=10)], 2, 0, extra_share=1)
    assert plan is not None and plan.bounds == (5,)
    assert [(p.split.start, p.owned) for p in plan.parts[1]] == [(0, False), (10, True)]
    assert ranges.plan([_group(0, 5), _group(5, 9, at=10)], 2, 0) is None  # (each reads all)


def test_the_plan_declines_what_it_cannot_cut() -> None:
    assert ranges.plan([_group(0, 9), _group(5, 19, at=10)], 2, 1) is None  # the groups overlap
    assert ranges.plan([_group(0, 9)], 2, 1) is None  # fewer groups than shards
    many = [_group(10 * k, 10 * k + 9, at=10 * k) for k in range(8)]
    assert ranges.plan(many, 4, 100) is None  # every shard would read every group
    assert ranges.plan([_group(7, 7, at=10 * k) for k in range(4)], 2, 1) is None  # one time: one shard
    tied = [_group(0, 7), _group(7, 7, at=10), _group(7, 7, at=20), _group(7, 9, at=30)]
    tied = ranges.plan(tied, 4, 0, extra_share=2)
    assert tied is not None and tied.bounds == (7,)  # equal bounds make one shard


def test_time_groups_read_the_metadata_in_nanoseconds(tmp_path: Path) -> None:
    table = pa.table({"t": pa.array([1, 2, 3, 4], pa.timestamp("us", tz="UTC")), "v": [1, 2, 3, 4]})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=2)
    pq.write_table(table, tmp_path / "b.parquet", row_group_size=3)
    groups = ranges.time_groups([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], "t")
    assert groups is not None
    assert [(g.start, g.stop, g.first_row, g.low, g.high) for g in groups] == [
        (0, 2, 0, 1000, 2000),
        (2, 4, 2, 3000, 4000),
        (0, 3, 4, 1000, 3000),
        (3, 4, 7, 4000, 4000),
    ]
    days = pa.table({"t": pa.array([0, 1], pa.date32())})
    pq.write_table(days, tmp_path / "d.parquet")
    assert ranges.time_groups([str(tmp_path / "d.parquet")], "t") == [
        Group(str(tmp_path / "d.parquet"), 0, 2, 0, 0, 86_400 * 10**9)
    ]
    numbers = pa.table({"t": [1, 2]})
    pq.write_table(numbers, tmp_path / "n.parquet")
    assert ranges.time_groups([str(tmp_path / "n.parquet")], "t") is None  # a number's unit is the reader's
    gaps = pa.table({"t": pa.array([1, None], pa.timestamp("s"))})
    pq.write_table(gaps, tmp_path / "g.parquet")
    assert ranges.time_groups([str(tmp_path / "g.parquet")], "t") is None  # a missing time is a bad row


def test_a_time_outside_its_groups_claim_is_found(tmp_path: Path) -> None:
    """The metadata is a claim: a shard checks each relevant row against its own row
    group's times, not only the run of groups it reads (a middle group claiming less than
    it holds would hide its rows from the neighbour that needs them)."""
    from cepcli.spark.plan import sample as _sample

    path = tmp_path / "in.parquet"
    ts = pa.array([k * 10**9 for k in range(12)], pa.timestamp("ns"))
    pq.write_table(pa.table({"ts": ts, "type": ["A", "B", "C"] * 4}), path, row_group_size=3)
    groups = ranges.time_groups([str(path)], "ts")
    assert groups is not None and len(groups) == 4
    compiled = compile_text("PATTERN SEQ(A a, B b, C c) WITHIN 2 s", "<query>", "s")
    inputs = InputOptions(str(path), time_col="ts", type_col="type")
    reading, _ = _sample([("", compiled)], inputs, RunOptions(), Stats())
    plan = ranges.plan(groups, 2, 2 * 10**9)
    assert plan is not None
    assert ranges.read_range(reading, plan, 0)[2] is None
    part = plan.parts[0][0]
    assert part.owned and len(part.groups) == 2  # (two groups, one split)
    lying = ((part.groups[0][0], 0, 10**9), part.groups[1])  # the first claims 0-1 s, holds 0-2 s
    told = replace(plan, parts=((replace(part, groups=lying), *plan.parts[0][1:]), *plan.parts[1:]))
    assert ranges.read_range(reading, told, 0)[2] == "times outside the row groups' statistics"


def test_time_groups_find_the_time_after_a_nested_column(tmp_path: Path) -> None:
    table = pa.table(
        {
            "tags": pa.array([[1, 2], [3]], pa.list_(pa.int64())),
            "where": pa.array([{"x": 1, "y": 2}, {"x": 3, "y": 4}]),
            "t": pa.array([5, 6], pa.timestamp("s")),
        }
    )
    pq.write_table(table, tmp_path / "n.parquet")
    groups = ranges.time_groups([str(tmp_path / "n.parquet")], "t")
    assert groups is not None and (groups[0].low, groups[0].high) == (5 * 10**9, 6 * 10**9)


# --- through Spark ---------------------------------------------------------------------

QUERIES = [
    "PATTERN SEQ(A a, B b, C c) WHERE a.x < b.x WITHIN 3 s",
    "PATTERN SEQ(A a, NOT B n, C c) WHERE [g] WITHIN 4 s",
    "PATTERN AND(A a, B+ b[]) WHERE b[i].x > a.x WITHIN 2 s",
    "PATTERN SEQ(NOT C n, A a, B b) WITHIN 2 s",
]


def _stream(path: Path, rows: int, group_rows: int, shuffle_in: int | None = None) -> None:
    """A sorted stream of ``rows`` events over types A-C (times in whole and half seconds,
    tied in pairs, a missing x in seven), in groups of ``group_rows``; ``shuffle_in``: that
    group's rows reversed (its metadata still true of it, its order not)."""
    ts = [(k // 2) * 500_000_000 for k in range(rows)]
    types = ["ABC"[(k * 7 + k // 3) % 3] for k in range(rows)]
    x = [None if k % 7 == 3 else (k * 5) % 11 for k in range(rows)]
    g = [["p", "q"][(k // 4) % 2] for k in range(rows)]
    order = list(range(rows))
    if shuffle_in is not None:
        a = shuffle_in * group_rows
        order[a : a + group_rows] = order[a : a + group_rows][::-1]
    table = pa.table(
        {
            "ts": pa.array([ts[k] for k in order], pa.timestamp("ns")),
            "type": [types[k] for k in order],
            "x": pa.array([x[k] for k in order], pa.int64()),
            "g": [g[k] for k in order],
            "note": [f"n{k}" for k in order],
        }
    )
    pq.write_table(table, path, row_group_size=group_rows)


def _run(args: list[str], tmp_path: Path, name: str) -> tuple[int, str, str, dict[str, Any]]:
    stats = tmp_path / f"{name}.json"
    result = CliRunner().invoke(cli, [*args, "--quiet", "--stats-json", str(stats)])
    said = json.loads(stats.read_text()) if stats.exists() else {}
    return result.exit_code, result.stdout, result.stderr, said


def _compared(
    tmp_path: Path, data: Path, query: str, *extra: str, engine: str = "adaptive"
) -> dict[str, Any]:
    """The ``--spark`` run's stats, its jsonl and exit checked equal to the local run's."""
    base = [
        "run",
        "-e",
        query,
        "-i",
        str(data),
        "--time-col",
        "ts",
        "--format",
        "jsonl",
        "--engine",
        engine,
        *extra,
    ]
    local = _run(base, tmp_path, "local")
    spark = _run([*base, "--spark", "--master", "local[2]", "--partitions", "3"], tmp_path, "spark")
    assert spark[0] == local[0], spark[2]
    assert sorted(spark[1].splitlines()) == sorted(local[1].splitlines())
    assert spark[2].splitlines()[-1:] == local[2].splitlines()[-1:]  # the error, or the warning
    for key in ("events", "matches", "bad_rows", "relevant_events"):
        assert spark[3].get(key) == local[3].get(key), key
    return spark[3]


@pytest.mark.spark
@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_spark_by_time_range_is_the_local_run_for_every_engine(
    spark: object, tmp_path: Path, engine: str
) -> None:
    data = tmp_path / "in.parquet"
    _stream(data, 240, 24)
    # the default engine on all four; the others on a negation or a Kleene query, in turn
    for query in QUERIES if engine == "adaptive" else [QUERIES[1 + ENGINE_NAMES.index(engine) % 2]]:
        stats = _compared(tmp_path, data, query, engine=engine)
        assert stats["matches"] > 0, query
        assert stats["spark_by_time_range"]["shards"] == 3, query


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_spark_by_time_range_writes_a_directory_as_locally(spark: object, tmp_path: Path, fmt: str) -> None:
    data = tmp_path / "in.parquet"
    _stream(data, 240, 24)
    query = QUERIES[1]
    base = ["run", "-e", query, "-i", str(data), "--time-col", "ts", "--format", fmt]
    local = tmp_path / f"local.{fmt}"
    assert _run([*base, "--output", str(local)], tmp_path, "local")[0] == 0
    out = tmp_path / "out"
    code, _, err, stats = _run(
        [*base, "--spark", "--master", "local[2]", "--partitions", "3", "--output", str(out)],
        tmp_path,
        "spark",
    )
    assert code == 0, err
    assert isinstance(stats["spark_by_time_range"], dict)
    parts = sorted(out.glob("part-*"))
    if fmt == "parquet":  # (Spark's timestamps hold microseconds: these times are whole seconds)
        want = pq.read_table(local)
        theirs = pa.concat_tables([pq.read_table(p) for p in parts]).cast(want.schema).to_pylist()
        assert sorted(map(repr, theirs)) == sorted(map(repr, want.to_pylist())) and theirs
    elif fmt == "csv":  # (each part file has the header; Spark's writer quotes an empty text)
        import csv

        rows = [r for p in parts for r in csv.DictReader(p.open())]
        with local.open() as f:
            mine = list(csv.DictReader(f))
        assert sorted(map(repr, rows)) == sorted(map(repr, mine)) and mine
    else:
        lines = [line for p in parts for line in p.read_text().splitlines()]
        assert sorted(lines) == sorted(local.read_text().splitlines()) and lines


@pytest.mark.spark
@pytest.mark.parametrize("on_bad_row", ["fail", "skip"])
def test_rows_out_of_order_inside_a_group_take_the_general_way(
    spark: object, tmp_path: Path, on_bad_row: str
) -> None:
    """A group's rows reversed: its metadata's least and greatest still hold, its order
    does not. A shard finds the rows going back, and the general way reports them as the
    local run does (the error and its row, or the skipped rows and the matches)."""
    data = tmp_path / "in.parquet"
    _stream(data, 240, 24, shuffle_in=6)
    stats = _compared(tmp_path, data, QUERIES[0], "--on-bad-row", on_bad_row)
    if on_bad_row == "skip":  # (with fail, the run ends with the local run's error line)
        assert stats["spark_by_time_range"].startswith("no: shard ")
        assert stats["bad_rows"] > 0


@pytest.mark.spark
def test_groups_that_overlap_in_time_take_the_general_way(spark: object, tmp_path: Path) -> None:
    data = tmp_path / "in.parquet"
    _stream(data, 120, 24)
    twice = pq.read_table(data)
    pq.write_table(pa.concat_tables([twice, twice]), data, row_group_size=24)  # (time starts again)
    stats = _compared(tmp_path, data, QUERIES[0], "--on-bad-row", "skip")
    assert "spark_by_time_range" not in stats
    assert stats["bad_rows"] > 0
