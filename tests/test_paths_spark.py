"""``--spark`` paths that once went astray: a contiguity strategy with an ``[attr]`` key
(strict contiguity is about consecutive rows of the whole input, so its rows must not be
grouped by the key), a decimal wider than Spark's 38 digits written with ``--output DIR
--format parquet`` (one clear line, nothing left behind), and a cepcli error raised in an
executor (the driver says the worker's own message, not "the Spark job failed").

One Spark session (``local[2]``, the ``spark`` fixture) serves the in-process tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import cepcli
import cepcli.spark
from cepcli.cli import cli
from cepcli.errors import CepError, InputError, LimitError

pytestmark = [pytest.mark.slow, pytest.mark.spark]

CEPCLI = str(Path(sys.executable).with_name("cepcli"))

# rows of the keys p and q interleave, and some have no key: strict contiguity is broken by
# any row between, partition contiguity only by a row of the same key
KEYED = (
    "ts,type,g\n1,A,p\n2,B,q\n3,B,p\n4,A,q\n5,B,p\n6,A,p\n7,B,p\n8,A,q\n9,C,p\n10,B,q\n"
    "11,A,p\n12,B,\n13,B,p\n14,A,\n15,B,\n16,A,q\n17,B,q\n"
)
STRATEGIES = ("strict_contiguity", "partition_contiguity", "skip_till_next_match")


def _pairs(matches: Any) -> list[tuple[int, int]]:
    return sorted((int(m["a"]["_row"]), int(m["b"]["_row"])) for m in matches)


def test_a_contiguity_with_a_key_is_the_local_result(spark: Any, tmp_path: Path) -> None:
    """Each strategy with ``[g]``, by ``cepcli.spark.find`` and by ``--spark``: the local
    matches (strict contiguity: 2, where grouping the rows by ``g`` made 4)."""
    data = tmp_path / "in.csv"
    data.write_text(KEYED)
    rows = [(int(t), k, g or None) for t, k, g in (line.split(",") for line in KEYED.splitlines()[1:])]
    frame = spark.createDataFrame(rows, "ts long, type string, g string")  # type: ignore[attr-defined]
    for strategy in STRATEGIES:
        query = f"PATTERN SEQ(A a, B b) WHERE {strategy} {{ [g] }} WITHIN 10"
        local = _pairs(cepcli.find(query, str(data)))
        assert (
            _pairs(r.asDict(recursive=True) for r in cepcli.spark.find(query, frame, partitions=2).collect())
            == local
        )
        if strategy == "strict_contiguity":
            assert local == [(5, 6), (15, 16)]
    query = "PATTERN SEQ(A a, B b) WHERE strict_contiguity { [g] } WITHIN 10"
    args = ["run", "-e", query, "-i", str(data), "--format", "jsonl", "-q"]
    local_lines = CliRunner().invoke(cli, args)
    remote = CliRunner().invoke(cli, [*args, "--spark", "--master", "local[2]", "--partitions", "3"])
    assert local_lines.exit_code == 0 and remote.exit_code == 0, remote.output
    assert sorted(remote.stdout.splitlines()) == sorted(local_lines.stdout.splitlines())
    assert len(remote.stdout.splitlines()) == 2


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)


def test_a_decimal_wider_than_sparks_is_one_line_and_leaves_nothing(spark: Any, tmp_path: Path) -> None:
    """A decimal of 79 digits (beyond pyarrow's 76 too: a worker's traceback, Spark's log
    and ``_temporary/`` once) and one of 51 (Spark's cast of it failed in the middle of the
    write), for ``--output DIR --format parquet``, which types them as Spark's decimals of
    38 digits at most: one line, exit 1, no directory left. The 79 digits in a process of
    its own (nothing of Spark's on standard error)."""

    def args(digits: int) -> list[str]:
        data = tmp_path / f"in{digits}.csv"
        data.write_text(f"ts,type,x\n1,A,{'1' + '2' * (digits - 1)}\n2,B,1.5\n3,B,2\n")
        out = tmp_path / f"out{digits}"
        spark_args = ["--spark", "--master", "local[2]", "--output", str(out), "--format", "parquet", "-q"]
        query = "PATTERN SEQ(A a, B b) WITHIN 10"
        return ["run", "-e", query, "-i", str(data), "--schema", "x:decimal", *spark_args]

    done = _run([CEPCLI, *args(79)])
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"cepcli: error: {tmp_path / 'out79'}: cannot write: a.x is a decimal that needs 79 digits (row 0),"
        " and Spark's decimals hold 38 digits at most: the matches cannot be typed as Spark's (--output DIR"
        " --format parquet); write --format jsonl or csv, or run without --spark"
    ]
    assert not (tmp_path / "out79").exists()
    done = CliRunner().invoke(cli, args(51))
    assert done.exit_code == 1, done.output
    (line,) = done.stderr.splitlines()
    assert "a.x is a decimal that needs 51 digits (row 0), and Spark's" in line, line
    assert not (tmp_path / "out51").exists()


def test_a_columns_decimals_fit_spark_by_their_most_digits_before_and_after_the_point() -> None:
    """Spark's decimal of a column has one scale: 30 digits before the point in one row and
    10 after it in another need 40, though neither value has more than 38."""
    from cepcli.results import decimal_digits
    from cepcli.spark.deliver import merged_digits, too_wide

    assert decimal_digits(" 123.4500 ", frozenset()) == (3, 4)
    assert decimal_digits("1E+40", frozenset()) == (41, 0)
    assert decimal_digits("NA", frozenset({"NA"})) is None and decimal_digits(12, frozenset()) == (2, 0)
    shards = [{"digits": {"a.x": [30, 4, 2, 4]}}, {"digits": {"a.x": [1, 9, 10, 7], "b.x": [38, 9, 0, 9]}}]
    merged = merged_digits(shards)
    assert merged == {"a.x": [30, 4, 10, 7], "b.x": [38, 9, 0, 9]}
    said = too_wide(merged)
    assert said is not None and said.startswith(
        "a.x is a decimal that needs 30 digits before the point (row 4) and 10 after it (row 7),"
    )
    assert too_wide({"b.x": [38, 9, 0, 9]}) is None


def test_a_cepcli_error_in_an_executor_reaches_the_driver_as_it_was(spark: Any, tmp_path: Path) -> None:
    """An executor's ``CepError`` (a Python worker of a DataFrame's task, and of an RDD's):
    the driver raises its message and exit code; another failure says the worker's last
    line. And through the command line: a shard past ``--max-instances`` (which the
    executors raise on a path Spark reads, writing to a directory) says the local message."""
    import pyarrow as pa

    from cepcli.spark.session import SparkError, spark_failures

    def bad_row(batches: Any) -> Any:
        for _ in batches:
            raise InputError("a time earlier than the row before it", 7, "in.csv")
        yield pa.RecordBatch.from_pydict({"id": [0]})

    frame = spark.range(0, 2, 1, 2)  # type: ignore[attr-defined]
    with pytest.raises(CepError) as caught, spark_failures([]):
        frame.mapInArrow(bad_row, "id long").collect()
    assert caught.value.render() == "in.csv: row 7: a time earlier than the row before it"
    assert caught.value.exit_code == 1

    def limit(_: int) -> int:
        raise LimitError("more than 5 live instances")

    with pytest.raises(CepError) as caught, spark_failures([]):
        spark.sparkContext.parallelize([1, 2], 2).map(limit).collect()  # type: ignore[attr-defined]
    assert caught.value.render() == "more than 5 live instances"

    def other(_: int) -> int:
        raise ValueError("no luck\nat all")

    with pytest.raises(SparkError) as failed, spark_failures([]):
        spark.sparkContext.parallelize([1], 1).map(other).collect()  # type: ignore[attr-defined]
    assert failed.value.render() == "the Spark job failed: in a Python worker: ValueError: no luck"

    data = tmp_path / "in.csv"
    data.write_text("ts,type\n" + "".join(f"{i // 3},B\n" for i in range(40)) + "20,A\n")
    out = tmp_path / "out"
    args = ["run", "-e", "PATTERN SEQ(B+ d[], A w) WITHIN 13", "-i", f"file://{data}", "--spark"]
    args += ["--master", "local[2]", "--engine", "eager", "--max-instances", "5000", "-q"]
    done = CliRunner().invoke(cli, [*args, "--output", str(out), "--format", "parquet"])
    assert done.exit_code == 1, done.output
    (line,) = done.stderr.splitlines()
    assert "more than 5,000 live instances" in line and "Spark job failed" not in line, line
    assert not out.exists()
    assert json.dumps(line)  # one plain line


def test_a_decimal_time_is_a_decimal_from_spark_as_locally(spark: Any) -> None:
    """``cepcli.spark.find`` over a DataFrame whose time column is decimal: the matches' times
    are decimals, as ``cepcli.find``'s ``to_arrow()`` has them (they were text)."""
    from decimal import Decimal

    import pyarrow as pa

    table = pa.table(
        {
            "ts": pa.array([Decimal("14.067"), Decimal("14.5"), Decimal("15.001")], pa.decimal128(18, 3)),
            "type": ["A", "B", "B"],
        }
    )
    query = "PATTERN SEQ(A a, B b) WITHIN 1"
    local = cepcli.find(query, table).to_arrow().to_pylist()
    frame = spark.createDataFrame(table.to_pandas())  # type: ignore[attr-defined]
    remote = [r.asDict(recursive=True) for r in cepcli.spark.find(query, frame, partitions=2).collect()]
    assert sorted(m["b"]["ts"] for m in remote) == sorted(m["b"]["ts"] for m in local)
    assert [type(m["a"]["ts"]) for m in remote] == [Decimal, Decimal]
    assert {m["a"]["ts"] for m in remote} == {Decimal("14.067")}
