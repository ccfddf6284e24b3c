"""``--spark`` returns exactly the local result, for every engine: on cases of the table
that straddle shard borders (tiny shards forced), with an ``[attr]`` query grouped by
key, and through the CLI. One Spark session (``local[2]``) serves every test."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli
from cepcli.engines import ENGINE_NAMES
from cepcli.job import RunOptions, compile_file
from cepcli.sources.options import InputOptions
from tests.cases import CASES
from tests.harness import run_engine

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


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cepcli-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _spark_matches(query: Path, data: Path, engine: str, shard_seconds: float | None, **csv: object) -> set:
    from cepcli.spark import SparkOptions, run_spark

    found = []
    inputs = InputOptions(str(data), **csv)  # type: ignore[arg-type]
    compiled = compile_file(str(query), inputs.unit)
    spark = SparkOptions("local[2]", None, shard_seconds)
    run_spark(compiled, inputs, RunOptions(engine), spark, lambda schema, pattern: found.append)
    keys = [frozenset(m.key) for m in found]
    assert len(keys) == len(set(keys)), "a match was reported twice"
    return set(keys)


@pytest.mark.parametrize("name", SHARDED)
def test_spark_equals_local_for_every_engine(spark: object, name: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == name)
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(case.query)
    data.write_text(case.csv)
    for engine in ENGINE_NAMES:
        local, _ = run_engine(case.query, case.csv, engine, type_col=case.type_col)
        # Shards of one time unit: most matches and windows straddle a border.
        got = _spark_matches(query, data, engine, 1.0, type_col=case.type_col)
        assert got == local == case.expected, engine


def test_equivalence_query_is_grouped_by_its_attribute(spark: object, tmp_path: Path) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text("PATTERN SEQ(A a, NOT B n, C c) WHERE [k] AND a.x < c.x WITHIN 10")
    rows = ["ts,type,k,x"] + [f"{i},{'ABC'[i % 3]},{'pq'[i % 2] if i % 7 else ''},{i % 5}" for i in range(40)]
    data.write_text("\n".join(rows) + "\n")
    text = query.read_text()
    for engine in ENGINE_NAMES:
        local, _ = run_engine(text, data.read_text(), engine)
        assert local, "the query should match something"
        assert _spark_matches(query, data, engine, None) == local, engine


def test_cli_spark_writes_the_same_matches_and_merged_stats(spark: object, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "neg_with_condition")
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(case.query)
    data.write_text(case.csv)
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
    assert stats["partitions"] >= 1 and stats["peaks"] == "largest of any partition"


def test_spark_needs_a_path_not_standard_input(spark: object, tmp_path: Path) -> None:
    query = tmp_path / "q.sase"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    result = CliRunner().invoke(cli, ["run", str(query), "--spark"], input="ts,type\n0,A\n")
    assert result.exit_code == 2
    assert "--spark reads its input with Spark" in result.stderr


@pytest.mark.parametrize("where", ["", " WHERE [k]"], ids=["time shards", "grouped by [k]"])
def test_decreasing_timestamps_are_an_error_as_locally(spark: object, tmp_path: Path, where: str) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text(f"PATTERN SEQ(A a, B b){where} WITHIN 10")
    data.write_text("ts,type,k\n0,A,p\n5,B,p\n3,A,p\n")
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "-q"])
    assert result.exit_code == 1
    assert "row 2" in result.stderr and "pass --sort" in result.stderr
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "--spark", "--sort", "-q"])
    assert result.exit_code == 0


def test_no_java_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    import subprocess

    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    data.write_text("ts,type\n0,A\n1,B\n")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    cepcli = Path(sys.executable).with_name("cepcli")
    done = subprocess.run(
        [str(cepcli), "run", str(query), "-i", str(data), "--spark", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "cepcli: error: cannot start Spark: Java 17 or newer is needed" in done.stderr
    assert "Traceback" not in done.stderr
