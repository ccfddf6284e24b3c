"""Structured Streaming queries on ``local[2]`` (kept few and short: each micro-batch is a
Spark job): CSV files arriving in a directory, ``cepcli.spark.find`` over Spark's file
source, the matches written by Spark's file sink with a checkpoint.

* A query stopped and restarted from its checkpoint, more files arriving between, gives
  the local run's matches over all the files, none lost, none repeated; ``availableNow``
  decides every match its rows decide (the no-data micro-batch fires the timers).
* The state the query keeps (read back through Spark's state data source) holds no row
  older than the watermark less the reach, and nothing for a key gone quiet.
* A late row stops the query with the local message (``fail``), or is counted in the
  query's observed metrics (``skip``).
* ``cepcli run --spark --stream`` writes the same matches and its statistics."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import cepcli
from cepcli.cli import cli
from cepcli.errors import InputError
from cepcli.spark.session import worker_error

pytest.importorskip("pyspark")
from pyspark.errors import StreamingQueryException  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = "id long, type string, ts long, x long, k string"
HEADER = "id,type,ts,x,k\n"
# key p is busy; q goes quiet after 14 s; r comes once
FILES = [
    [(0, "A", 1, 5, "p"), (1, "B", 2, 7, "p"), (2, "A", 3, 1, "q"), (3, "B", 4, 9, "q"),
     (4, "C", 5, 0, "p")],
    [(5, "B", 8, 6, "q"), (6, "A", 9, 2, "p"), (7, "B", 11, 3, "p"), (8, "A", 12, 4, "q"),
     (9, "B", 14, 8, "q")],
    [(10, "A", 20, 1, "p"), (11, "B", 22, 5, "p"), (12, "A", 23, 2, "r"), (13, "C", 24, 0, "p"),
     (14, "B", 30, 3, "p"), (15, "B", 40, 1, "p")],
]  # fmt: skip
QUERY = "PATTERN SEQ(A a, B b, !C c) WHERE [k] AND a.x < b.x WITHIN 4 seconds"


def _put(directory: Path, name: str, rows: list[tuple[Any, ...]]) -> None:
    """A file arriving whole (written aside, then renamed in, as Spark's file source wants),
    a second after the one before it (Spark's file source takes files in that order)."""
    hidden = directory / f".{name}"
    hidden.write_text(HEADER + "".join(",".join(map(str, r)) + "\n" for r in rows))
    before = [p.stat().st_mtime for p in directory.iterdir() if not p.name.startswith(".")]
    arrived = max([*before, time.time() - 1000]) + 1
    os.utime(hidden, (arrived, arrived))
    hidden.rename(directory / name)


def _ids(rows: list[dict[str, Any]]) -> Counter[tuple[tuple[str, Any], ...]]:
    """Each match as its variables' event ids (a multiset: a match written twice counts twice)."""
    return Counter(tuple(sorted((n, v["id"]) for n, v in row.items() if v is not None)) for row in rows)


def _local(tmp_path: Path, upto: int, query: str = QUERY) -> Counter[tuple[tuple[str, Any], ...]]:
    whole = tmp_path / "all.csv"
    whole.write_text(HEADER + "".join(",".join(map(str, r)) + "\n" for f in FILES[:upto] for r in f))
    return _ids([m for m in cepcli.find(query, str(whole))])


@pytest.fixture(autouse=True)
def one_state_partition(spark: Any) -> Any:
    """The streams here keep their state in one partition (a state store each, per
    micro-batch: the session's four cost twice the time), as ``cepcli run --stream`` sets
    for a pattern without a key; the keys' groups are the same in any number of them."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def _run(spark: Any, source: Path, out: Path, checkpoint: Path, **given: Any) -> Any:
    """The query over the files there, to its end (``availableNow``); ``one_by_one``: a
    micro-batch per file, in the files' order (so a file read later is judged against the
    watermark the files before it set)."""
    one_by_one = given.pop("one_by_one", False)
    reader = spark.readStream.schema(SCHEMA).option("header", True)
    if one_by_one:
        reader = reader.option("maxFilesPerTrigger", 1)
    df = reader.csv(str(source))
    matches = cepcli.spark.find(given.pop("query", QUERY), df, **given)
    query = (
        matches.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(StreamingQueryException):  # (a failure: the test asks query.exception())
        query.awaitTermination()
    return query


def test_a_stream_restarted_from_its_checkpoint_loses_no_match_and_repeats_none(
    spark: Any, tmp_path: Path
) -> None:
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    source.mkdir()
    _put(source, "1.csv", FILES[0])
    _put(source, "2.csv", FILES[1])
    _run(spark, source, out, checkpoint)
    first = _ids(spark.read.parquet(str(out)).toArrow().to_pylist())
    # the watermark is 14 s: the matches whose window closed before it (q's at 3-4 s, p's
    # at 9-11 s; p's at 1-2 s is undone by C at 5 s), not q's at 12-14 s (open until 16 s)
    assert first == Counter({(("a", 2), ("b", 3)): 1, (("a", 6), ("b", 7)): 1})
    _put(source, "3.csv", FILES[2])
    query = _run(spark, source, out, checkpoint)  # the same query, from its checkpoint
    written = _ids(spark.read.parquet(str(out)).toArrow().to_pylist())
    expected = _local(tmp_path, 3)
    assert written == expected  # (q's at 12-14 s, and p's at 20-22 s undone by C at 24 s)
    assert (("a", 8), ("b", 9)) in written
    assert max(written.values()) == 1
    state = spark.read.format("statestore").option("path", str(checkpoint)).option("stateVarName", "cepcli")
    held = {r.key.k: r.value for r in state.load().collect()}
    watermark = 40 * 10**9
    reach = 2 * 4 * 10**9  # (a trailing negation: two windows)
    assert "q" not in held and "r" not in held  # quiet since 14 s and 23 s: dropped
    assert all(v.earliest >= watermark - reach for v in held.values())
    assert query.lastProgress["eventTime"]["watermark"] == "1970-01-01T00:00:40.000Z"


def test_a_late_row_stops_the_stream_or_is_counted(spark: Any, tmp_path: Path) -> None:
    pairs = "PATTERN SEQ(A a, B b) WITHIN 4 seconds"
    source = tmp_path / "in"
    source.mkdir()
    _put(source, "1.csv", FILES[0])
    _put(source, "2.csv", [(20, "A", 2, 1, "p"), (21, "B", 9, 9, "p")])  # 2 s: after the watermark, 5 s
    query = _run(spark, source, tmp_path / "out", tmp_path / "ck", query=pairs, one_by_one=True)
    failure = query.exception()
    assert failure is not None
    carried = worker_error(failure)  # (what the command line says: one line, exit code 1)
    assert carried is not None and carried.exit_code == InputError.exit_code
    said = "<stream>: a row at 1970-01-01T00:00:02Z came after the watermark, 1970-01-01T00:00:05Z"
    assert str(carried).startswith(said)  # (5 s: C's, a row no variable uses moves it too)

    skipped = _run(
        spark, source, tmp_path / "out2", tmp_path / "ck2", query=pairs, one_by_one=True, on_bad_row="skip"
    )
    assert skipped.exception() is None
    counted = [p["observedMetrics"]["cepcli"]["late_rows"] for p in skipped.recentProgress]
    assert sum(counted) == 1
    written = _ids(spark.read.parquet(str(tmp_path / "out2")).toArrow().to_pylist())
    assert (("a", 0), ("b", 21)) not in written and (
        ("a", 20),
        ("b", 21),
    ) not in written  # (A at 2 s left out)


def test_run_spark_stream_writes_the_local_matches_and_its_stats(spark: Any, tmp_path: Path) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    for i, rows in enumerate(FILES):
        _put(source, f"{i}.csv", rows)
    stats = tmp_path / "stats.json"
    args = ["run", "-e", QUERY, "-i", str(source), "--spark", "--stream", "--available-now", "--quiet"]
    args += ["--output", str(out), "--checkpoint", str(tmp_path / "ck"), "--format", "parquet"]
    result = CliRunner().invoke(cli, [*args, "--stats-json", str(stats)])
    assert result.exit_code == 0, result.output
    written = _ids(pq.read_table(out).to_pylist())
    assert written == _local(tmp_path, 3)
    said = json.loads(stats.read_text())
    assert said["matches"] == sum(written.values())
    assert said["events"] == sum(len(f) for f in FILES)


def test_run_spark_stream_needs_an_output_and_a_checkpoint(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    result = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(source), "--stream"])
    assert result.exit_code == 2 and "with --spark" in result.output
    result = CliRunner().invoke(cli, ["run", "-e", QUERY, "-i", str(source), "--spark", "--stream"])
    assert result.exit_code == 2
    assert "--output DIR and keeps its progress in --checkpoint DIR" in result.output


def test_several_queries_give_a_result_each(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    _put(source, "1.csv", FILES[0])
    df = spark.readStream.schema(SCHEMA).option("header", True).csv(str(source))
    both = cepcli.spark.find({"pairs": "PATTERN SEQ(A a, B b) WITHIN 4 s", "keyed": QUERY}, df)
    assert sorted(both) == ["keyed", "pairs"]
    assert all(frame.isStreaming for frame in both.values())
    assert both["pairs"].columns == ["a", "b"]
