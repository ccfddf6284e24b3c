"""``--spark`` returns exactly the local result: the matches, the error and the bad rows,
for every engine, on cases that straddle shard borders (tiny shards and tiny splits
forced), with an ``[attr]`` query grouped by key, on the CSV corner files of the local
reader's tests (quotes, line breaks in fields, ragged rows, bad UTF-8, null markers, time
going back across splits) under ``fail`` and ``skip``, on Parquet and JSON lines, written
by the executors to a directory, and through the CLI. Its shards run at the same time; it
is a quiet citizen of a cluster (spark-submit, an unreachable master, Ctrl-C).

One Spark session (``local[2]``) serves the in-process tests; some run real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cepcli.cli import cli
from cepcli.clock import Window
from cepcli.engines import ENGINE_NAMES
from cepcli.errors import CepError
from cepcli.events import Event, Kind
from cepcli.prepare import RunOptions, compile_file, compile_text
from cepcli.run import Run
from cepcli.runtime.stats import Stats
from cepcli.sources.options import InputOptions
from tests.cases import CASES
from tests.test_formats import _keys_of_jsonl

CEPCLI = str(Path(sys.executable).with_name("cepcli"))
pytestmark = [pytest.mark.slow, pytest.mark.spark]

SHARDED = [
    "seq_paper_a1a2b1b2c",
    "window_spans_all_three",
    "and_window",
    "or_two_branches_same_match_reported_once",
    "neg_leading_within_window",
    "neg_trailing_within_window",
    "neg_inside_and_anywhere_in_window",
    "kleene_plus_all_seven_subsets",
    "kleene_inside_and_window",
    "equivalence_with_negation_and_missing",
    "iso_timestamps_window_minutes",
]


Outcome = tuple[set[frozenset[tuple[str, tuple[int, ...]]]], str | None, int]


def _local(query: Path, data: Path, engine: str, **inputs: Any) -> Outcome:
    """The local run: its matches, its error (or None) and its bad rows."""
    options = InputOptions(str(data), **inputs)
    found = set()
    error = None
    stats = Stats()
    try:
        job = Run({"q": compile_file(str(query), options.unit)}, options, RunOptions(engine), stats=stats)
        for _, match in job.matches():
            found.add(frozenset(match.key))
    except CepError as err:
        error = err.render()
    return found, error, stats.bad_rows


def _spark(
    query: Path,
    data: Path,
    engine: str,
    shard_seconds: float | None = 1.0,
    split_bytes: int | None = 40,
    **inputs: Any,
) -> Outcome:
    """The same through run_spark (tiny shards and tiny splits, so that matches, rows and
    time going back straddle their borders)."""
    from cepcli.spark import SparkOptions, run_spark

    found: list[Any] = []
    options = InputOptions(str(data), **inputs)
    spark = SparkOptions(master="local[2]", shard_seconds=shard_seconds, split_bytes=split_bytes)
    error = None
    bad = 0
    try:
        stats = run_spark(
            compile_file(str(query), options.unit),
            options,
            RunOptions(engine),
            spark,
            lambda s, p: found.append,
        )
        bad = stats.bad_rows
    except CepError as err:
        error = err.render()
    keys = [frozenset(m.key) for m in found]
    assert len(keys) == len(set(keys)), "a match was reported twice"
    return set(keys), error, bad


def _files(tmp_path: Path, query: str, data: bytes | str, name: str = "in.csv") -> tuple[Path, Path]:
    q, d = tmp_path / "q.sase", tmp_path / name
    q.write_text(query)
    d.write_bytes(data.encode() if isinstance(data, str) else data)
    return q, d


def _engines_for(i: int) -> list[str]:
    """Case ``i``'s engines under Spark: the default and one more in turn, so that over the
    cases every engine runs Spark's shards (each engine's own answers are checked against
    the oracle locally, on every case, and in-process on Spark's shards, ``test_spark_frames.py``)."""
    others = [e for e in ENGINE_NAMES if e != "adaptive"]
    return ["adaptive", others[i % len(others)]]


@pytest.mark.parametrize("name", SHARDED)
def test_spark_equals_local_for_every_engine(spark: object, name: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == name)
    query, data = _files(tmp_path, case.query, case.csv)
    for engine in _engines_for(SHARDED.index(name)):
        local = _local(query, data, engine, type_col=case.type_col)
        assert local[0] == case.expected and local[1] is None
        assert _spark(query, data, engine, type_col=case.type_col) == local, engine


def test_equivalence_query_is_grouped_by_its_attribute(spark: object, tmp_path: Path) -> None:
    rows = ["ts,type,k,x"] + [f"{i},{'ABC'[i % 3]},{'pq'[i % 2] if i % 7 else ''},{i % 5}" for i in range(40)]
    query, data = _files(
        tmp_path, "PATTERN SEQ(A a, NOT B n, C c) WHERE [k] AND a.x < c.x WITHIN 10", "\n".join(rows) + "\n"
    )
    for engine in ENGINE_NAMES:
        local = _local(query, data, engine)
        assert local[0], "the query should match something"
        assert _spark(query, data, engine, shard_seconds=None) == local, engine


# The CSV corner files of the local reader's tests: each read as locally, under fail and skip.
CORNERS: dict[str, str] = {
    "quotes-and-line-breaks": 'ts,type,x\n0,"A",1\n1,B,"2"\n2,"A","3,0"\n3,X,"a\nb"\n4,B,5" tv\n5,B,9\n',
    "ragged-rows": "ts,type,x\n0,A,1\n1,B,2,9\n2,A,3\n3,B\n4,B,7\n5,A,1\n6,B,8\n",
    "bad-utf8": "ts,type,x\n0,A,1\n1,B,2\n2,B,caf\udce9\n3,B,4\n",
    "null-markers": "ts,type,x\n0,A,NA\n1,A,1\n2,B,NaN\n3,B,5\n4,A,null\n5,B,\n6,B,7\n",
    "kinds-and-a-stray-word": "ts,type,x\n0,A,1\n1,B,2\n2,A,oops\n3,B,5\n4,A,2\n5,B,9\n",
    "time-goes-back-across-splits": "ts,type,x\n0,A,1\n5,B,2\n3,A,0\n6,B,9\n1,B,9\n7,A,1\n8,B,3\n",
    "blank-lines-and-crlf": "ts,type,x\r\n0,A,1\r\n\r\n  \r\n1,B,2\r\n2,A,0\r\n\r\n3,B,9",
}


@pytest.mark.parametrize("skip", [False, True], ids=["fail", "skip"])
@pytest.mark.parametrize("corner", sorted(CORNERS))
def test_corner_files_read_as_locally(spark: object, tmp_path: Path, corner: str, skip: bool) -> None:
    text = CORNERS[corner].encode("utf-8", "surrogateescape")
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5", text)
    mode = "skip" if skip else "fail"
    # reading does not depend on the engine (every engine meets Spark in the case table):
    # one engine for each split size, to keep the Spark runs few; splits of 7 bytes cut
    # every row, of 40 some (a file in one split is every other Spark test's)
    for engine, split_bytes in (("tree", 7), ("eager", 40)):
        local = _local(query, data, engine, on_bad_row=mode)
        got = _spark(query, data, engine, split_bytes=split_bytes, on_bad_row=mode)
        assert got == local, (engine, split_bytes)


def test_parquet_and_jsonl_inputs(spark: object, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "kleene_plus_all_seven_subsets")
    query, data = _files(tmp_path, case.query, case.csv)
    local = _local(query, data, "tree")
    rows = [line.split(",") for line in case.csv.splitlines()[1:]]
    table = pa.table({"ts": [int(r[0]) for r in rows], "type": [r[1] for r in rows]})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=2)
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"ts": int(r[0]), "type": r[1]}) + "\n" for r in rows)
    )
    for name in ("in.parquet", "in.jsonl"):
        for engine in ("tree", "chain"):
            assert _spark(query, tmp_path / name, engine, split_bytes=20) == local, (name, engine)


def test_a_second_run_in_one_session_reads_the_file_again(spark: Any, tmp_path: Path) -> None:
    """The same query on the same path, the file rewritten (to the same size) between the
    runs (a process that runs cepcli twice, as the tests do, keeps one session): the second
    run finds the new file's matches, not the first run's from Spark's cache, and nothing
    stays cached."""
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 5 s", "ts,type\n1,A\n2,B\n3,B\n")
    first = _spark(query, data, "tree")
    data.write_text("ts,type\n1,B\n2,A\n3,B\n")
    second = _spark(query, data, "tree")
    assert len(first[0]) == 2 and first[1] is None
    assert second == _local(query, data, "tree") and len(second[0]) == 1
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()


def test_a_compressed_file_and_a_directory(spark: object, tmp_path: Path) -> None:
    """A .gz cannot be cut: one split; a directory's files are read in name order, with row
    ids going on from one to the next (and each file has its header)."""
    import gzip

    case = next(c for c in CASES if c.name == "seq_paper_a1a2b1b2c")
    query, data = _files(tmp_path, case.query, case.csv)
    local = _local(query, data, "tree")
    packed = tmp_path / "in.csv.gz"
    packed.write_bytes(gzip.compress(case.csv.encode()))
    assert _spark(query, packed, "tree") == local
    lines = case.csv.splitlines()
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "1.csv").write_text("\n".join(lines[:3]) + "\n")
    (folder / "2.csv.gz").write_bytes(gzip.compress(("\n".join([lines[0], *lines[3:]]) + "\n").encode()))
    assert _spark(query, folder, "tree") == local


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_the_executors_write_the_matches_to_a_directory(spark: object, tmp_path: Path, fmt: str) -> None:
    case = next(c for c in CASES if c.name == "kleene_plus_all_seven_subsets")
    query, data = _files(tmp_path, case.query, case.csv)
    out = tmp_path / "matches"
    stats = tmp_path / "stats.json"
    args = ["run", str(query), "-i", str(data), "--spark", "--master", "local[2]", "--format", fmt]
    result = CliRunner().invoke(cli, [*args, "--output", str(out), "--stats-json", str(stats), "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    written = sorted(p for p in out.iterdir() if p.name.startswith("part-"))
    assert written, list(out.iterdir())
    if fmt == "jsonl":
        objects = [json.loads(line) for p in written for line in p.read_text().splitlines()]
        keys = {
            frozenset((v, tuple(e["_row"] for e in (o[v] if isinstance(o[v], list) else [o[v]]))) for v in o)
            for o in objects
        }
    elif fmt == "parquet":  # the result schema: a struct per variable, a Kleene one a list of them
        keys = {
            frozenset(
                (v, tuple(e["_row"] for e in row[v]) if isinstance(row[v], list) else (row[v]["_row"],))
                for v in row
            )
            for row in pq.read_table(out).to_pylist()
        }
    else:
        import csv as reader

        records = [r for p in written for r in reader.DictReader(p.open())]
        keys = {
            frozenset((v, tuple(int(x) for x in r[f"{v}._row"].split(";"))) for v in ("a", "b", "c"))
            for r in records
        }
    assert keys == case.expected
    assert json.loads(stats.read_text())["matches"] == len(case.expected)


TYPED_ROWS = (
    "ts,type,x,p,when,note\n"
    "2024-01-01T00:00:00Z,A,-9223372036854775808,0.1,2024-01-01T00:00:00Z,n1\n"
    "2024-01-01T00:00:01Z,B,2,123456789012345678.123456789,,n2\n"
    "2024-01-01T00:00:02Z,B,3,NA,2024-01-02T00:00:00.000001Z,\n"
    "2024-01-01T00:00:03Z,C,9223372036854775807,2,2024-01-03T00:00:00Z,n4\n"
)


def test_spark_parquet_is_the_local_result_schema(spark: object, tmp_path: Path) -> None:
    """``--spark --output DIR --format parquet`` writes the rows ``to_arrow()`` gives locally,
    typed alike: int64 extremes, exact decimals (Spark's 38 digits, the scale the values
    need), times as UTC instants (Spark's microseconds), text, a Kleene variable as a list."""
    import cepcli

    data = tmp_path / "in.csv"
    data.write_text(TYPED_ROWS)
    query = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 10 s"
    out = tmp_path / "matches"
    args = ["run", "-e", query, "-i", str(data), "--schema", "p:decimal", "--spark", "--master", "local[2]"]
    result = CliRunner().invoke(cli, [*args, "--format", "parquet", "--output", str(out), "-q"])
    assert result.exit_code == 0, result.output
    written = pq.read_table(out)
    local = cepcli.find(query, data, schema={"p": "decimal"}).to_arrow()
    assert written.column_names == local.column_names == ["a", "b", "c"]
    a = written.schema.field("a").type
    assert [f.name for f in a] == ["_row", "ts", "type", "x", "p", "when", "note"]
    assert a.field("x").type == pa.int64() and a.field("p").type == pa.decimal128(38, 9)
    assert a.field("ts").type == a.field("when").type == pa.timestamp("us", tz="UTC")
    assert pa.types.is_list(written.schema.field("b").type)

    def rows(table: pa.Table) -> list[str]:
        return sorted(json.dumps(r, default=str, sort_keys=True) for r in table.to_pylist())

    # the local times in microseconds, its decimals at Spark's scale: then the same rows
    microseconds = local.cast(written.schema)
    assert rows(written) == rows(microseconds)
    assert len(written) == 3


@pytest.mark.parametrize("on_bad_row", ["fail", "skip"])
def test_max_delay_is_the_local_run_across_splits(spark: object, tmp_path: Path, on_bad_row: str) -> None:
    """``--max-delay`` under ``--spark``: rows late within the delay, across the borders of
    tiny splits, give the local run's matches; a row later than the delay (coming after a
    split that went further in time) is the local run's bad row, failed or skipped alike."""
    import random

    draw = random.Random(7)
    rows = sorted((t, draw.choice("ABC"), draw.randrange(5)) for t in range(0, 60) for _ in range(2))
    arrival = sorted(range(len(rows)), key=lambda i: (rows[i][0] + draw.randint(0, 4), i))
    lines, latest = [], 0
    for k, i in enumerate(arrival):
        if k % 7 == 6 and k > 20:  # far too late: 10 s before the latest time read (one in a
            lines.append(f"{latest - 10},A,1")  # split's first row, where only the floor tells)
        lines.append(f"{rows[i][0]},{rows[i][1]},{rows[i][2]}")
        latest = max(latest, rows[i][0])
    query, data = _files(
        tmp_path,
        "PATTERN SEQ(A a, B b, NOT C n, A c) WHERE a.x < b.x AND b.x >= c.x WITHIN 6 s",
        "ts,type,x\n" + "\n".join(lines) + "\n",
    )
    inputs = {"max_delay": "4s", "on_bad_row": on_bad_row}
    local = _local(query, data, "eager", **inputs)
    assert local[0] and (local[1] is not None) == (on_bad_row == "fail")
    assert "comes later than --max-delay 4s allows" in (local[1] or "") or local[2] > 10
    for engine in ("eager", "tree"):  # (shards of the window: a match crosses their borders)
        assert _spark(query, data, engine, shard_seconds=6, split_bytes=60, **inputs) == local


def test_two_shards_run_at_the_same_time(spark: object, tmp_path: Path) -> None:
    """Partitions are evaluated in parallel by the executors: two shards' time spans
    (recorded in the stats) overlap. Each shard is long enough (some seconds of predicate
    evaluations, no matches) for the start of the Python workers not to matter."""
    rows = "".join(f"{i},{'AB'[i % 2]},{i % 97}\n" for i in range(40_000))
    query, data = _files(
        tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x + b.x < 0 WITHIN 1200", "ts,type,x\n" + rows
    )
    stats = tmp_path / "stats.json"
    args = ["run", str(query), "-i", str(data), "--spark", "--master", "local[2]", "--partitions", "2"]
    result = CliRunner().invoke(cli, [*args, "--format", "jsonl", "--stats-json", str(stats), "-q"])
    assert result.exit_code == 0, result.output
    shards = json.loads(stats.read_text())["spark_shards"]
    assert len(shards) == 2 and all(s["rows"] > 20_000 for s in shards)
    (a, b) = shards
    assert a["began"] < b["ended"] and b["began"] < a["ended"], shards
    assert json.loads(stats.read_text())["spark_shard_overlap"] > 1.0  # (said in the stats)


def test_overlap_is_the_shards_busy_seconds_over_their_union() -> None:
    from cepcli.spark.merge import overlap

    assert overlap([(0.0, 1.0), (1.0, 2.0)]) == 1.0  # one after another
    assert overlap([(0.0, 2.0), (0.0, 2.0)]) == 2.0  # side by side
    assert overlap([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 1.25  # 5 s of work over 4 s


def test_rows_reach_every_shard_whose_input_holds_them_at_the_int64_edges(spark: Any) -> None:
    """Shard k receives [b_k - W, b_(k+1) + W] (``_shards``, in the JVM): rows at the int64
    extremes, at a bound, and a window either side of it, with bounds near the extremes
    too (moved by the window, they would overflow unclamped)."""
    from cepcli.spark.evaluate import _shards
    from cepcli.spark.reading import TS

    low, high = -(1 << 63), (1 << 63) - 1
    window = 10
    bounds = (low + 5, 0, high - 5)
    labels = (100, 101, 102, 103)
    times = [low, low + 5, low + 15, -11, -10, 0, 10, 11, high - 15, high - 5, high]
    frame = spark.createDataFrame([(t,) for t in times], f"`{TS}` long")
    got: dict[int, set[int]] = {}
    for row in frame.select(TS, _shards(bounds, Window(window), labels).alias("s")).collect():
        got.setdefault(row[0], set()).add(labels.index(row[1]))

    def expected(t: int) -> set[int]:  # shard k spans [b_(k-1) - W, b_k + W], unbounded at the ends
        edges = (None, *bounds, None)
        return {
            k
            for k in range(len(labels))
            if (edges[k] is None or edges[k] - window <= t)
            and (edges[k + 1] is None or t <= edges[k + 1] + window)
        }

    assert got == {t: expected(t) for t in times}


@pytest.mark.parametrize("shards", [2, 3, 8, 31])
def test_each_shard_has_a_partition_of_its_own(spark: Any, shards: int) -> None:
    """The shard labels, chosen by cepcli's reading of Spark's hash, land in as many
    partitions as there are shards when Spark itself partitions them."""
    from pyspark.sql import functions as F

    from cepcli.spark.evaluate import _labels

    labels = spark.createDataFrame([(label,) for label in _labels(shards)], "shard long")
    spread = labels.repartition(shards, "shard").select(F.spark_partition_id().alias("p"))
    assert sorted(r["p"] for r in spread.collect()) == list(range(shards))


@pytest.mark.parametrize("name", ["neg_with_condition", "kleene_plus_all_seven_subsets"])
def test_cli_spark_writes_the_same_matches_and_merged_stats(spark: object, tmp_path: Path, name: str) -> None:
    """The local lines, and the shards' stats merged: under the default engine, what each
    shard ran (the columnar engine on a shard's bounded rows; segments for a Kleene
    pattern, which the columnar engine does not evaluate), summed over the shards."""
    case = next(c for c in CASES if c.name == name)
    query, data = _files(tmp_path, case.query, case.csv)
    stats_file = tmp_path / "stats.json"
    args = ["run", str(query), "-i", str(data), "--format", "jsonl", "-q"]
    local = CliRunner().invoke(cli, args)
    remote = CliRunner().invoke(
        cli, [*args, "--spark", "--master", "local[2]", "--stats-json", str(stats_file)]
    )
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    assert sorted(local.stdout.splitlines()) == sorted(remote.stdout.splitlines())
    stats = json.loads(stats_file.read_text())
    assert stats["matches"] == len(remote.stdout.splitlines())
    assert stats["partitions"] >= 1 and stats["peaks"] == "largest of any shard"
    assert stats["events"] == len(case.csv.splitlines()) - 1
    assert all({"began", "ended", "rows"} <= set(s) for s in stats["spark_splits"] + stats["spark_shards"])
    # the default engine, adaptive: what each shard ran, summed over the shards
    assert stats["engine"] == "adaptive"
    if name == "neg_with_condition":
        assert stats["adaptive_ran"] == "columnar" and "adaptive_segments" not in stats
        (joins,) = stats["columnar_joins"]
        assert {j["variable"] for j in joins} == {"a", "c"}
        assert joins[-1]["partial_matches"] >= stats["matches"] >= 1
        return
    assert "adaptive_ran" not in stats
    assert sum(stats["adaptive_segments"].values()) >= len(stats["spark_shards"])
    assert stats["adaptive_runtimes"] >= len(stats["spark_shards"])
    assert {c["shard"] for c in stats["adaptive_changes"]} == {s["shard"] for s in stats["spark_shards"]}


def _many_matches_on_the_driver(tmp_path: Path, n: int) -> tuple[list[str], list[str], list[str]]:
    """``n`` rows of A and B whose SEQ has many matches: the run's arguments (its query and
    input), ``--spark``'s, and the local jsonl lines, sorted, which the driver's lines under
    ``--spark`` equal (asserted here)."""
    rows = "".join(f"{t},{'AB'[t % 2]},{t % 7}\n" for t in range(n))
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 40", "ts,type,x\n" + rows)
    args = ["run", str(query), "-i", str(data), "-q"]
    spark_args = ["--spark", "--master", "local[2]"]
    local = CliRunner().invoke(cli, [*args, "--format", "jsonl"])
    assert local.exit_code == 0, local.output
    expected = sorted(local.stdout.splitlines())
    remote = CliRunner().invoke(cli, [*args, "--format", "jsonl", *spark_args])
    assert remote.exit_code == 0, remote.output
    assert sorted(remote.stdout.splitlines()) == expected
    return args, spark_args, expected


def test_many_matches_travel_packed_and_come_out_as_locally(
    spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More matches than a result row packs (``PACKED``, 4), brought to the driver shard by
    shard (more than ``GATHERED``, here 0): standard output has the local lines,
    ``--max-matches`` cuts inside a pack, ``--output DIR`` writes the same lines, and csv
    (the matches decoded on the driver, ``MatchCodec``, for its writer) the local rows."""
    import cepcli.spark.deliver
    from cepcli.spark.evaluate import PACKED

    monkeypatch.setattr(cepcli.spark.deliver, "GATHERED", 0)
    args, spark_args, expected = _many_matches_on_the_driver(tmp_path, 1200)
    assert len(expected) > 8 * PACKED  # more than two packs in each of the 4 shards
    cut = CliRunner().invoke(cli, [*args, "--format", "jsonl", *spark_args, "--max-matches", str(PACKED + 7)])
    assert cut.exit_code == 0, cut.output
    lines = cut.stdout.splitlines()
    assert len(lines) == PACKED + 7 and set(lines) <= set(expected)
    out = tmp_path / "matches"
    written = CliRunner().invoke(cli, [*args, "--format", "jsonl", *spark_args, "--output", str(out)])
    assert written.exit_code == 0, written.output
    parts = [p for p in out.iterdir() if p.name.startswith("part-")]
    assert sorted(line for p in parts for line in p.read_text().splitlines()) == expected
    rows = CliRunner().invoke(cli, [*args, "--format", "csv", *spark_args])
    local_rows = CliRunner().invoke(cli, [*args, "--format", "csv"])
    assert rows.exit_code == 0, rows.output
    assert sorted(rows.stdout.splitlines()) == sorted(local_rows.stdout.splitlines())


def test_few_matches_of_many_shards_reach_the_driver_in_one_job(spark: Any, tmp_path: Path) -> None:
    """Matches few in all (at most ``GATHERED``) come to the driver in one Spark job, not a
    job per shard (Spark's iterator runs one for each partition): 40 one-second shards
    here, and the run's jobs fewer than its shards; the matches the local run's."""
    from cepcli.spark import SparkOptions, run_spark

    rows = "".join(f"{t},{'AB'[t % 2]},{t % 7}\n" for t in range(40))
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5", "ts,type,x\n" + rows)
    local = _local(query, data, "tree")
    assert len(local[0]) > 10
    tracker = spark.sparkContext.statusTracker()
    before = max(tracker.getJobIdsForGroup(), default=-1)
    found: list[Any] = []
    options = InputOptions(str(data))
    stats = run_spark(
        compile_file(str(query), options.unit),
        options,
        RunOptions("tree"),
        SparkOptions(master="local[2]", shard_seconds=1.0),
        lambda s, p: found.append,
    )
    jobs = max(tracker.getJobIdsForGroup()) - before
    assert {frozenset(m.key) for m in found} == local[0]
    assert stats.extra["spark_gathered"] is True
    assert jobs < 20, jobs  # (a job per shard: more than 40)


def test_a_shards_matches_go_back_to_spark_in_many_batches(
    spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard's result goes back to Spark a batch at a time (``SHIPPED_ROWS`` matches at
    most; here 3, so every shard sends many): the driver's jsonl, and the executors' csv
    and typed Parquet under ``--output DIR``, are the local run's matches."""
    import cepcli.spark.evaluate

    monkeypatch.setattr(cepcli.spark.evaluate, "SHIPPED_ROWS", 3)  # (the shards' closures take it along)
    args, spark_args, expected = _many_matches_on_the_driver(tmp_path, 400)
    assert len(expected) > 1000
    local_csv = CliRunner().invoke(cli, [*args, "--format", "csv"])
    out = tmp_path / "csv"
    written = CliRunner().invoke(cli, [*args, "--format", "csv", *spark_args, "--output", str(out)])
    assert written.exit_code == 0, written.output
    lines = [line for p in out.iterdir() if p.name.startswith("part-") for line in p.read_text().splitlines()]
    header = local_csv.stdout.splitlines()[0]
    assert sorted(line for line in lines if line != header) == sorted(local_csv.stdout.splitlines()[1:])
    typed = tmp_path / "typed"
    done = CliRunner().invoke(cli, [*args, "--format", "parquet", *spark_args, "--output", str(typed)])
    assert done.exit_code == 0, done.output
    got = sorted((r["a"]["_row"], r["b"]["_row"]) for r in pq.read_table(typed).to_pylist())
    assert got == sorted((json.loads(x)["a"]["_row"], json.loads(x)["b"]["_row"]) for x in expected)


def test_a_large_result_reaches_the_driver_through_files(
    spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a local master, a shard with more matches than ``SPOOLED`` (here 0: every one)
    reaches the driver through text files the executors write (Spark's iterator would hold
    the shard whole in the driver's JVM), read ``SPOOLED_BYTES`` at a time (here 200, a few
    lines): the driver's jsonl and csv are the local run's, ``--max-matches`` stops them,
    the stats say so, and the files are gone at the end."""
    import tempfile

    import cepcli.spark.deliver

    monkeypatch.setattr(cepcli.spark.deliver, "SPOOLED", 0)
    monkeypatch.setattr(cepcli.spark.deliver, "SPOOLED_BYTES", 200)
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    args, spark_args, expected = _many_matches_on_the_driver(tmp_path, 400)
    assert len(expected) > 1000
    stats = tmp_path / "stats.json"
    rows = CliRunner().invoke(cli, [*args, "--format", "csv", *spark_args, "--stats-json", str(stats)])
    local_rows = CliRunner().invoke(cli, [*args, "--format", "csv"])
    assert rows.exit_code == 0, rows.output
    assert rows.stdout.splitlines()[0] == local_rows.stdout.splitlines()[0]
    assert sorted(rows.stdout.splitlines()) == sorted(local_rows.stdout.splitlines())
    assert json.loads(stats.read_text())["spark_spooled"] is True
    cut = CliRunner().invoke(cli, [*args, "--format", "jsonl", *spark_args, "--max-matches", "7"])
    assert cut.exit_code == 0, cut.output
    assert len(cut.stdout.splitlines()) == 7 and set(cut.stdout.splitlines()) <= set(expected)
    assert [p.name for p in spool.iterdir() if p.name.startswith("cepcli-matches-")] == []


def test_cli_skips_bad_rows_with_the_local_warning(spark: object, tmp_path: Path) -> None:
    """``--on-bad-row skip`` under ``--spark``: the local run's matches and its one warning."""
    text = "ts,type,price\n0,A,1\n1,B,2\n2,C,3\n3,C\n4,A,2\n5,B,3\n6,C,abc\n7,C,9\n8,C,1\n"
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b, C c) WHERE a.price < c.price WITHIN 10", text)
    args = ["run", str(query), "-i", str(data), "--format", "jsonl", "-q", "--on-bad-row", "skip"]
    local = CliRunner().invoke(cli, args)
    remote = CliRunner().invoke(cli, [*args, "--spark", "--master", "local[2]"])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    assert local.stdout.count("\n") == 4
    assert sorted(local.stdout.splitlines()) == sorted(remote.stdout.splitlines())
    warning = "warning: skipped 2 bad rows (first: row 3: 2 fields where 3 are expected"
    assert warning in local.stderr and warning in remote.stderr, remote.stderr


@pytest.mark.parametrize("engine", ["adaptive", "tree"])
def test_a_bad_row_ends_the_input_after_the_matches_before_it(
    spark: object, tmp_path: Path, engine: str
) -> None:
    """``--on-bad-row fail`` under ``--spark``: the local run's matches of the rows before
    the bad row, and its error. A match of a trailing negation whose window the rows before
    the bad row did not close (A at 58, B at 59, the window to 61, the bad row at 60) is
    undecided and reported by neither (the default engine's shards once reported no match)."""

    def kind(i: int) -> str:
        return "C" if i % 10 == 7 else "AB"[i % 2]

    rows = [f"{i},{kind(i)},{i % 7}" for i in range(60)] + ["60,A,oops"]
    rows += [f"{i},{kind(i)},{i % 7}" for i in range(61, 70)]
    query, data = _files(
        tmp_path,
        "PATTERN SEQ(A a, B b, NOT C c) WHERE a.x < b.x WITHIN 3",
        "ts,type,x\n" + "\n".join(rows) + "\n",
    )
    given = {"schema": (("x", Kind.INT),)}
    local = _local(query, data, engine, **given)
    assert local[1] is not None and "row 60: column 'x' holds 'oops'" in local[1]
    assert len(local[0]) > 5
    assert frozenset({("a", 58), ("b", 59)}) not in local[0]
    assert _spark(query, data, engine, shard_seconds=10, **given) == local  # (shards: a task each)


def test_native_times_in_parquet(spark: object, tmp_path: Path) -> None:
    """A Parquet timestamp column (as flights-3m's ``date``): the same matches as locally,
    and time going back is the local one-line error, the times shown as text."""
    import datetime as dt

    minute = dt.timedelta(minutes=1)
    start = dt.datetime(2001, 1, 1)
    query, _ = _files(tmp_path, "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 3 minutes", "")
    times = [start + k * minute for k in range(12)]
    table = pa.table(
        {"date": pa.array(times, pa.timestamp("us")), "type": ["A", "B", "X"] * 4, "x": list(range(12))}
    )
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=3)
    local = _local(query, tmp_path / "in.parquet", "tree", time_col="date")
    assert len(local[0]) == 4 and local[1] is None
    assert _spark(query, tmp_path / "in.parquet", "tree", split_bytes=20, time_col="date") == local
    back = table.set_column(0, "date", pa.array([*times[:7], start, *times[8:]], pa.timestamp("us")))
    pq.write_table(back, tmp_path / "back.parquet", row_group_size=3)
    local = _local(query, tmp_path / "back.parquet", "tree", time_col="date")
    assert local[1] == (
        f"{tmp_path / 'back.parquet'}: row 7: timestamp '2001-01-01T00:00:00Z' is earlier than the"
        " previous row's '2001-01-01T00:06:00Z' (the input must be in time order; pass --sort to sort it,"
        " or --max-delay 5min to take rows up to 5 minutes late)"
    )
    assert _spark(query, tmp_path / "back.parquet", "tree", split_bytes=20, time_col="date") == local


def test_max_instances_stops_a_shard_with_the_local_message(spark: object, tmp_path: Path) -> None:
    from cepcli.errors import LimitError
    from cepcli.spark import SparkOptions, run_spark

    query, data = _files(
        tmp_path,
        "PATTERN SEQ(B+ d[], A w) WITHIN 13",
        "ts,type\n" + "".join(f"{i // 3},B\n" for i in range(40)),
    )
    inputs = InputOptions(str(data))
    with pytest.raises(LimitError, match="more than 5,000 live instances .* the eager NFA"):
        run_spark(
            compile_file(str(query), inputs.unit),
            inputs,
            RunOptions("eager", max_instances=5000),
            SparkOptions(master="local[2]"),
            lambda s, p: print,
        )


def test_spark_needs_a_path_not_standard_input(spark: object, tmp_path: Path) -> None:
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    result = CliRunner().invoke(cli, ["run", str(query), "--spark"], input="ts,type\n0,A\n")
    assert result.exit_code == 2
    assert "--spark reads its input in the executors: give a path" in result.stderr


@pytest.mark.parametrize("where", ["", " WHERE [k]"], ids=["time shards", "grouped by [k]"])
def test_decreasing_timestamps_are_an_error_as_locally(spark: object, tmp_path: Path, where: str) -> None:
    query, data = _files(
        tmp_path, f"PATTERN SEQ(A a, B b){where} WITHIN 10", "ts,type,k\n0,A,p\n5,B,p\n3,A,p\n"
    )
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "-q"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"cepcli: error: {data}: row 2: timestamp '3' is earlier than the previous row's '5'"
        " (the input must be in time order; pass --sort to sort it, or --max-delay 5min to take rows"
        " up to 5 minutes late)"
    ]
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "--sort", "-q"])
    assert result.exit_code == 0


# --- a citizen of the cluster: real processes -------------------------------------------------


def _run(
    args: list[str], timeout: float = 180, extra_env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.update(extra_env or {})
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, **kw)


def _jsonl_run(query: Path, data: Path) -> list[str]:
    return [
        CEPCLI,
        "run",
        str(query),
        "-i",
        str(data),
        "--spark",
        "--master",
        "local[2]",
        "--format",
        "jsonl",
        "-q",
    ]


def test_the_first_run_builds_a_class_archive_that_later_runs_use(tmp_path: Path) -> None:
    """The first run records the classes its JVM loads and a detached process builds the
    archive after it; the next run maps it (``cepcli.spark.classes``): the same matches,
    and nothing on standard error, without the archive and with it: Spark's log is kept
    off it, not even the JVM's notice of Spark's incubator module is there."""
    case = next(c for c in CASES if c.name == "seq_paper_a1a2b1b2c")
    query, data = _files(tmp_path, case.query, case.csv)
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache), "CEPCLI_SPARK_CLASS_CACHE": "1"}
    outs, states = [], []
    for k in (1, 2):
        stats = tmp_path / f"stats{k}.json"
        done = _run([*_jsonl_run(query, data), "--stats-json", str(stats)], extra_env=env)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        outs.append(sorted(done.stdout.splitlines()))
        states.append(json.loads(stats.read_text())["spark_class_archive"])
        deadline = time.monotonic() + 240
        while k == 1 and not list(cache.glob("cepcli/*.jsa")) and time.monotonic() < deadline:
            assert not list(cache.glob("cepcli/*.failed")), list(cache.glob("cepcli/*.failed"))[0].read_text()
            time.sleep(1)
    assert states == ["recorded", "used"]
    assert outs[0] == outs[1] and len(outs[0]) == len(case.expected)
    archive = [p.suffix for p in (cache / "cepcli").iterdir() if p.name.startswith("spark-classes-")]
    assert archive == [".jsa"]  # no list, lock or part left (beside it: the query parser's cache)


def test_spark_submit_runs_cepcli_as_a_module(tmp_path: Path) -> None:
    """``spark-submit .../cepcli/__main__.py run ... --spark``: spark-submit decides the master."""
    import cepcli

    case = next(c for c in CASES if c.name == "seq_paper_a1a2b1b2c")
    query, data = _files(tmp_path, case.query, case.csv)
    submit = str(Path(sys.executable).with_name("spark-submit"))
    entry = str(Path(cepcli.__file__).with_name("__main__.py"))
    done = _run(
        [
            submit,
            "--master",
            "local[2]",
            entry,
            "run",
            str(query),
            "-i",
            str(data),
            "--spark",
            "--format",
            "jsonl",
            "-q",
        ]
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.splitlines()) == len(case.expected)


def test_executors_run_the_cepcli_the_driver_ships(tmp_path: Path) -> None:
    """cepcli ships itself to the executors (a zip on their Python path): executors whose
    Python has pyarrow, numpy and pandas but cannot import cepcli (the site-packages on the
    path without the ``.pth`` hooks that install cepcli and lark) run the job all the same."""
    import sysconfig

    site = sysconfig.get_paths()["purelib"]
    python = tmp_path / "executor-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH}}:{site}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    cannot = subprocess.run([python, "-c", "import cepcli"], cwd=tmp_path, capture_output=True, text=True)
    assert cannot.returncode != 0 and "No module named 'cepcli'" in cannot.stderr
    can = subprocess.run([python, "-c", "import pyarrow, numpy, pandas"], cwd=tmp_path)
    assert can.returncode == 0
    case = next(c for c in CASES if c.name == "seq_paper_a1a2b1b2c")
    query, data = _files(tmp_path, case.query, case.csv)
    args = [CEPCLI, "run", str(query), "-i", str(data), "--spark", "--master", "local[2]", "--format=jsonl"]
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([*args, "-q"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _keys_of_jsonl(done.stdout) == case.expected


def test_an_unreachable_master_fails_at_once_in_one_line(tmp_path: Path) -> None:
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 10", "ts,type\n0,A\n1,B\n")
    started = time.monotonic()
    done = _run(
        [CEPCLI, "run", str(query), "-i", str(data), "--spark", "--master", "spark://127.0.0.1:9", "-q"],
        timeout=60,
    )
    assert time.monotonic() - started < 30
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "cepcli: error: cannot reach the Spark master spark://127.0.0.1:9 (127.0.0.1:9: Connection refused)"
    ]


def test_ctrl_c_cancels_the_job_and_exits_130(tmp_path: Path) -> None:
    rows = "".join(f"{i},{'AB'[i % 2]},{i % 13}\n" for i in range(200_000))
    query, data = _files(
        tmp_path, "PATTERN SEQ(A a, B+ b[], A c) WHERE a.x < c.x WITHIN 40", "ts,type,x\n" + rows
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    stats = tmp_path / "stats.json"
    proc = subprocess.Popen(
        [*_jsonl_run(query, data), "--stats-json", str(stats)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while not any("pyspark.daemon" in c or "pyspark.worker" in c for c in _descendants(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, "no Python worker started"
        time.sleep(0.2)
    time.sleep(1)  # the session is up and a job runs (its Python workers have started)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "py4j" not in err.lower(), err
    assert "interrupted" in err
    written = json.loads(stats.read_text())  # the stats so far, as locally
    assert written["interrupted"] is True and written["engine"] == "adaptive"  # the default


def _descendants(pid: int) -> list[str]:
    """The command lines of a process's descendants, from /proc."""
    children: dict[int, list[int]] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            lines[int(entry.name)] = line.decode(errors="replace")
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(lines[child])
            todo.append(child)
    return found


def test_no_java_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    query, data = _files(tmp_path, "PATTERN SEQ(A a, B b) WITHIN 10", "ts,type\n0,A\n1,B\n")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    done = subprocess.run(
        [CEPCLI, "run", str(query), "-i", str(data), "--spark", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "cepcli: error: cannot start Spark: Java 17 or newer is needed" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("on_bad_row", ["fail", "skip"])
def test_the_typing_rule_is_the_local_one(spark: object, tmp_path: Path, on_bad_row: str) -> None:
    """One typing rule (issue 25) under ``--spark`` too, its splits read by the local reader
    with the driver's kinds: a marker among JSON numbers is missing, a stray word a bad row
    (in the sample as past it), a column of markers only equals nothing."""
    rows = []
    for i in range(60):
        x: object = "n/a" if i % 7 == 3 else ("abc" if i in (20, 50) else i % 11)
        rows.append(json.dumps({"ts": i, "type": "AB"[i % 2], "x": x, "m": "NaN"}))
    query, data = _files(
        tmp_path,
        "PATTERN SEQ(A a, B b) WHERE a.x < b.x AND (a.m = b.m OR a.x + 1 = b.x) WITHIN 3",
        "\n".join(rows) + "\n",
        name="in.jsonl",
    )
    # reading does not depend on the engine (every engine meets Spark in the case table)
    local = _local(query, data, "tree", on_bad_row=on_bad_row)
    assert local[0], "the query should match something"
    assert (local[1] is not None) == (on_bad_row == "fail")
    # splits of about 8 rows (past the sample and in it), shards of 10 s: a task each
    assert _spark(query, data, "tree", shard_seconds=10, split_bytes=400, on_bad_row=on_bad_row) == local


# --- what a local run prints, byte for byte -----------------------------------------------


def _iso_csv(path: Path) -> None:
    """ISO text dates in several forms (``Z``, ``+00:00``, no zone, fractions), decimal-looking
    floats, and columns the query does not read: zero-padded numbers, a null marker, a quoted
    comma, a word among numbers (a bad value only where a column is read)."""
    import datetime as dt

    rows = ["when,type,price,code,note,extra"]
    for i in range(24):
        at = dt.datetime(2024, 3, 1, 6) + dt.timedelta(minutes=7 * i, milliseconds=13 * i)
        zone = ("Z", "+00:00", "")[i % 3]
        price = ("1.5", "2.50", "3", "1e2")[i % 4]
        note = ('"a, b"', "NA", "", "x")[i % 4]
        extra = "abc" if i == 5 else ("1.50", "007", "-0")[i % 3]
        rows.append(f"{at.isoformat()}{zone},{'ABC'[i % 3]},{price},{i:03d},{note},{extra}")
    path.write_text("\n".join(rows) + "\n")


def _numbers_csv(path: Path) -> None:
    """Times as numbers of seconds with fractions (shown as written), and an OR: a variable
    the match's branch does not bind is empty."""
    rows = ["ts,type,x,y"]
    for i in range(30):
        rows.append(
            f"{3 * i}.{(37 * i) % 1000:03d},{'ABC'[i % 3]},{i % 5},{('1.50', '007', '', '-0')[i % 4]}"
        )
    path.write_text("\n".join(rows) + "\n")


def _native_parquet(path: Path) -> None:
    """Native timestamps (nanoseconds) and dates, decimals beyond a float, durations, nested
    values, empty strings, missing values, an infinite float, booleans."""
    import datetime as dt
    from decimal import Decimal

    n = 18
    table = pa.table(
        {
            "type": ["A", "B", "C"] * (n // 3),
            "at": pa.array([(978307200 + 20 * i) * 10**9 + 7 for i in range(n)], pa.timestamp("ns")),
            "p": pa.array([Decimal(f"1234567890123456789.{i:02d}") for i in range(n)], pa.decimal128(22, 2)),
            "w": pa.array(range(n), pa.duration("ms")),
            "g": ["", "x", None] * (n // 3),
            "n": pa.array([{"k": [i, None], "s": "é\n"} for i in range(n)]),
            "f": [i / 4 if i % 5 else float("inf") for i in range(n)],
            "b": [bool(i % 2) for i in range(n)],
            "d": pa.array([dt.date(2020, 1, 1 + i) for i in range(n)]),
        }
    )
    pq.write_table(table, path, row_group_size=5)


def _iso_jsonl(path: Path) -> None:
    """JSON lines with ISO times as JSON text, whole and fractional numbers, a field of mixed
    types (kinds by its values), nested objects, booleans, nulls and empty strings."""
    lines = []
    for i in range(30):
        at = f"2024-01-01T00:{i:02d}:00Z" if i % 2 else f"2024-01-01 00:{i:02d}:00.5"
        obj = {
            "ts": at,
            "type": "ABC"[i % 3],
            "v": i * 0.5 if i % 4 else i,
            "mixed": ["n/a", 3, 4.5, "x"][i % 4],
            "obj": {"q": [i, None]},
            "flag": i % 3 == 0,
            "z": None,
            "s": "" if i % 5 == 0 else f"s{i}",
        }
        lines.append(json.dumps(obj))
    path.write_text("\n".join(lines) + "\n")


def _numbers_jsonl(path: Path) -> None:
    """JSON lines with times as whole numbers of milliseconds, for a Kleene variable: events
    of several rows in one cell of the table."""
    lines = [
        json.dumps({"ms": 1000 * i, "kind": "ABBC"[i % 4], "v": (i * 7) % 10 + 0.25, "tag": f"t{i}"})
        for i in range(24)
    ]
    path.write_text("\n".join(lines) + "\n")


PRINTED = {
    "csv-iso-dates": (
        "in.csv",
        _iso_csv,
        "PATTERN SEQ(A a, B b) WHERE a.price < b.price WITHIN 20 min",
        ["--time-col", "when"],
    ),
    "csv-numeric-times": (
        "in.csv",
        _numbers_csv,
        "PATTERN SEQ(A a, OR(B b, C c)) WHERE a.x < b.x WITHIN 4",
        [],
    ),
    "parquet-native": (
        "in.parquet",
        _native_parquet,
        "PATTERN SEQ(A a, B b) WHERE a.p < b.p AND b.w - a.w < 0.002 AND a.f > 0 WITHIN 30 s",
        ["--time-col", "at"],
    ),
    "jsonl-iso-text": (
        "in.jsonl",
        _iso_jsonl,
        "PATTERN SEQ(A a, B+ b[], C c) WHERE a.v < c.v WITHIN 4 min",
        [],
    ),
    "jsonl-numeric-times": (
        "in.jsonl",
        _numbers_jsonl,
        "PATTERN SEQ(A a, B+ b[], C c) WHERE a.v < c.v AND b[i].v > 2 WITHIN 6 s",
        ["--type-col", "kind", "--time-col", "ms", "--time-unit", "ms"],
    ),
}


def _table_parts(text: str) -> tuple[list[str], list[tuple[str, ...]]]:
    """A table's frame (its heading, borders and the ``N matches`` line, in order) and its
    rows as a sorted multiset, each row its lines with the ``#`` cell left out (a row of a
    Kleene variable spans lines; the number says where a row starts)."""
    frame: list[str] = []
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            frame.append(line)
            continue
        number, rest = line[1:].split("│", 1)
        if number.strip():
            rows.append([])
        rows[-1].append(rest)
    return frame, sorted(tuple(r) for r in rows)


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_spark_prints_what_a_local_run_prints(spark: object, tmp_path: Path, name: str) -> None:
    """``cepcli run --spark`` writes what ``cepcli run`` writes, byte for byte, in every
    format the driver writes: the table (the real times of text dates and timestamps, numbers
    as written, values typed as locally), csv (the columns the query does not read as the
    input wrote them) and jsonl. Output order is not part of the result (docs/semantics.md,
    section 6): the shards' matches come shard after shard, so the lines of csv and jsonl
    are compared sorted (csv's header first), and the table's rows as a multiset, its frame
    (heading, widths, borders, count) exactly. The local run is a process of its own; the
    Spark runs use the tests' session, in this process (a quiet standard error is
    ``test_a_run_keeps_sparks_log_off_standard_error``'s)."""
    file_name, write, query, flags = PRINTED[name]
    data = tmp_path / file_name
    write(data)
    for fmt in ("table", "csv", "jsonl"):
        args = ["run", "-e", query, "-i", str(data), *flags, "--format", fmt, "-q"]
        local = _run([CEPCLI, *args], timeout=120)
        on_spark = CliRunner().invoke(cli, [*args, "--spark", "--master", "local[2]"])
        assert local.returncode == 0, local.stderr
        assert on_spark.exit_code == 0, on_spark.output
        if fmt == "table":
            frame, rows = _table_parts(local.stdout)
            assert 2 <= len(rows) <= 20, "every match in the table, more than one"
            assert "1970-01-01" not in local.stdout
            assert _table_parts(on_spark.stdout) == (frame, rows)
        else:
            expected = local.stdout.splitlines(keepends=True)
            got = on_spark.stdout.splitlines(keepends=True)
            if fmt == "csv":
                assert got[:1] == expected[:1]
                expected, got = expected[1:], got[1:]
            assert len(expected) >= 2
            assert sorted(got) == sorted(expected), fmt
            assert on_spark.stdout.endswith("\n")


_FLAGS = {"--time-col": "time_col", "--type-col": "type_col", "--time-unit": "time_unit"}


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_the_shards_make_the_local_events(tmp_path: Path, name: str) -> None:
    """The row factory (``cepcli.sources.rows``) makes the same events from a split reader's
    shipped table as from the local run's pieces: row, time, type, mask, and every value of
    the same Python type and value (no Spark needed to see it)."""
    from cepcli.spark.plan import sample as _sample
    from cepcli.spark.reading import read_split
    from cepcli.spark.shards import _events
    from cepcli.spark.splits import Split, row_groups

    file_name, write, query, flags = PRINTED[name]
    data = tmp_path / file_name
    write(data)
    inputs = InputOptions(str(data), **{_FLAGS[k]: v for k, v in zip(flags[::2], flags[1::2], strict=True)})
    compiled = compile_text(query, "<query>", inputs.unit)

    def shown(e: Event) -> tuple[object, ...]:
        return (e.row, e.ts, e.type, e.mask, [(type(v), repr(v)) for v in e.values])

    job = Run({"q": compiled}, inputs)
    local = [shown(e) for e in job.source.events(job.prefilter, Stats(), job.typed) if e.mask]
    job.close()
    reading, _ = _sample([("", compiled)], inputs, RunOptions(), Stats())
    if file_name.endswith(".parquet"):
        splits, _ = row_groups(str(data), 0, 1)
    else:
        splits = [Split(str(data), -1, -1, 0, len(local))]
    shipped = [shown(e) for split in splits for e in _events(read_split(reading, split)[0], reading, None)]
    assert len(local) > 4
    assert shipped == local


def test_a_shard_fetches_the_columns_its_splits_left_unread(tmp_path: Path) -> None:
    """Parquet evaluated by the columnar engine: the split readers read only the type, the
    time and the columns the conditions read (the others travel as nulls), and a shard
    fetches the others for the events it makes, by row id, from the right file of a
    directory: every event a shard makes equals the local run's, value for value and of the
    same Python type (native times, decimals, durations, nested values, dates, booleans)."""
    import numpy as np

    from cepcli.spark.plan import projected as _projected
    from cepcli.spark.plan import sample as _sample
    from cepcli.spark.reading import Fetch, read_split
    from cepcli.spark.shards import shard_columns
    from cepcli.spark.splits import row_groups

    folder = tmp_path / "in"
    folder.mkdir()
    _native_parquet(folder / "a.parquet")
    second = pq.read_table(folder / "a.parquet")
    later = pa.array([t.value + 10**12 for t in second.column("at").to_pylist()], pa.timestamp("ns"))
    second = second.set_column(1, "at", later)  # (the second file's unread values differ too)
    second = second.set_column(4, "g", pa.array([f"b{i}" for i in range(second.num_rows)]))
    pq.write_table(second, folder / "b.parquet", row_group_size=4)
    query = "PATTERN SEQ(A a, B b) WHERE a.p < b.p AND a.f > 0 WITHIN 30 s"
    inputs = InputOptions(str(folder), time_col="at")
    compiled = compile_text(query, "<query>", inputs.unit)

    def shown(e: Event) -> tuple[object, ...]:
        return (e.row, e.ts, e.type, e.mask, [(type(v), repr(v)) for v in e.values])

    files = sorted(str(f) for f in folder.iterdir())
    local = []
    for first, path in zip((0, 18), files, strict=True):
        job = Run({"q": compiled}, InputOptions(path, time_col="at"))
        made = [e for e in job.source.events(job.prefilter, Stats(), job.typed) if e.mask]
        local += [shown(Event(e.row + first, e.ts, e.type, e.values, e.mask)) for e in made]
        job.close()
    reading, _ = _sample([("", compiled)], InputOptions(files[0], time_col="at"), RunOptions(), Stats())
    splits = []
    for path in files:
        found, rows = row_groups(path, sum(s.rows for s in splits), 3)
        splits += found
    reading = _projected(reading, [("", compiled)], RunOptions(), splits)
    assert reading.away == ("g", "n")  # (text and nested: fixed-width columns are read with the rest)
    assert [base for _, base in reading.files] == [0, 18]
    tables = [read_split(reading, split)[0] for split in splits]
    assert all(t.column(c).null_count == t.num_rows for t in tables for c in reading.away)
    table = pa.concat_tables(tables).sort_by([("__cepcli_ts", "ascending"), ("__cepcli_row", "ascending")])
    fetch = Fetch(reading)
    data = shard_columns(table, reading, None, fetch)
    every = np.arange(len(data))
    made = [shown(e) for e in data.events(every[::-1])][::-1]  # (not in file order)
    fetch.close()
    assert len(local) > 10
    assert sorted(made) == sorted(local)


def test_a_match_travels_exactly() -> None:
    """``MatchCodec``: every value an event holds comes back as the same Python value of the
    same type (big integers, floats to the last bit and infinite, a decimal with its
    exponent, text with quotes, line breaks and non-ASCII letters, booleans, None), with
    its row, time and type; a Kleene variable's events in their order; one line."""
    from decimal import Decimal

    from cepcli.events import Event
    from cepcli.output import MatchCodec
    from cepcli.runtime.matches import Match

    values = (
        2**70,
        -(2**63),
        0.1 + 0.2,
        float("inf"),
        float("-inf"),
        1.0,
        Decimal("1234567890123456789.10"),
        Decimal("1.23E+4"),
        'a "quoted"\nline\tand é, 東',
        "",
        True,
        False,
        None,
        '{"k":[1,null]}',
    )
    a = Event(3, -(2**63), "A", values, 5)
    b1, b2 = Event(7, 2**63 - 1, "B", (1, None), 1), Event(9, 2**63 - 1, "B", (2, "x"), 1)
    match = Match((("a", a), ("b", (b1, b2))))
    codec = MatchCodec()
    text = codec.encode(match)
    assert "\n" not in text
    back = MatchCodec().decode(text)
    assert back.key == match.key
    got = dict(back.bindings)
    for original, copy in ((a, got["a"]), (b1, got["b"][0]), (b2, got["b"][1])):
        assert (copy.row, copy.ts, copy.type) == (original.row, original.ts, original.type)
        assert [(type(v), repr(v)) for v in copy.values] == [(type(v), repr(v)) for v in original.values]
    assert codec.encode(match) == text  # each event's text made once, the same


def test_a_parquet_directory_whose_files_disagree_is_one_line(tmp_path: Path) -> None:
    """The kinds come from the first file; a later file whose column has a type that kind
    cannot read is an error of that file, named, not a worker's traceback."""
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"type": ["A", "B"], "ts": [1, 2], "x": [1, 2]}), folder / "a.parquet")
    pq.write_table(
        pa.table({"type": ["A", "B"], "ts": [3, 4], "x": [{"q": 1}, {"q": 2}]}), folder / "b.parquet"
    )
    query = "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5"
    done = _run(
        [CEPCLI, "run", "-e", query, "-i", str(folder), "--spark", "--master", "local[2]", "-q"], timeout=300
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"cepcli: error: {folder / 'b.parquet'}: column 'x' is struct<q: int64> here, which cannot be read"
        " as an integer (int64) (the column's kind, from the first 2 rows)"
    ]
