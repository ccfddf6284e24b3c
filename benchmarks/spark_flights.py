"""Local run vs ``--spark --master local[1]`` vs ``local[2]`` on the dense flights stream.

On ``flights-3m.parquet`` (3,000,000 US flights of 2001, airports as types) and on a 10x
input made from it (ten copies, each one's times shifted by 184 days, about six months,
so the stream stays in time order; written once by this script, one row group per
million rows), a selective three-airport SEQ and an ``[attr]``-free AND. Every run is a
real ``cepcli run`` process; the modes are interleaved in each repeat (the machine is
shared), and the table gives the median of the repeats:

* ``wall``: the whole process, start to exit (Python, the JVM, the job, writing);
* ``job``: ``seconds`` of the stats (after compiling the query), less
  ``spark_session_seconds`` (starting Spark and shipping cepcli) for Spark: the work once
  the session is up;
* the matches, which must be equal in every mode;
* ``read`` and ``evaluate``: the Spark job's steps; where the shards read their own time
  (``shards read``: "their time", a time-sorted Parquet input, ``cepcli.spark.ranges``)
  the reading is inside ``evaluate``.

The archive of Spark's classes (``cepcli.spark.classes``) is built first, so the cold runs
map it, as every run after a user's first does.

On the 10x input the Spark modes are also run ``warm``: the same query twice in one
process (one Spark session, ``cepcli.cli.main`` called twice), timing the second: the
job once the session and its Python workers are up and the JVM has run the job's code
once (what a notebook or a service that keeps its session pays per query). ``wall`` is
then the second call, start to return.

    python benchmarks/spark_flights.py [--repeat 3] [--copies 10] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from runner import cepcli_run, spark_class_archive

WARM = """
import json, sys, time
from cepcli.cli import main
for stats in sys.argv[2:]:
    started = time.perf_counter()
    try:
        main([*json.loads(sys.argv[1]), "--stats-json", stats, "--output", stats + ".matches"])
    except SystemExit as stop:
        assert not stop.code, stop.code
    print(time.perf_counter() - started)
"""

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "flights-3m.parquet"
OPTIONS = ["--type-col", "origin", "--time-col", "date"]
QUERIES = {
    "SEQ3 ISP,COS,DAY 1 h": "PATTERN SEQ(ISP a, COS b, DAY c) WHERE a.delay < b.delay WITHIN 1 hour",
    "AND3 JAN,GRR,DAY 30 min": (
        "PATTERN AND(JAN a, GRR b, DAY c) WHERE a.distance > c.distance WITHIN 30 minutes"
    ),
}
MODES = {
    "local": [],
    "spark local[1]": ["--spark", "--master", "local[1]"],
    "spark local[2]": ["--spark", "--master", "local[2]"],
}
SHIFT = pa.scalar(184 * 86_400_000_000, pa.duration("us"))


def tenfold(source: Path, target: Path, copies: int) -> Path:
    """``copies`` copies of ``source``, the k-th shifted by k * 184 days (written once)."""
    if target.exists():
        return target
    table = pq.read_table(source)
    partial = target.with_suffix(".partial")
    with pq.ParquetWriter(partial, table.schema) as writer:
        for k in range(copies):
            shifted = pc.add(table.column("date"), pa.scalar(k * SHIFT.value, pa.duration("us")))
            writer.write_table(table.set_column(0, "date", shifted), row_group_size=1_000_000)
    partial.rename(target)
    return target


def bigger_input(work: Path = ROOT / "benchmarks" / "results" / "data", copies: int = 10) -> Path:
    """The 10x input (``copies`` copies), written once into ``work``; Spark's workers run this Python."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work.mkdir(parents=True, exist_ok=True)
    return tenfold(DATA, work / f"flights-3m-x{copies}.parquet", copies)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "results" / "data")
    parser.add_argument("--only-bigger", action="store_true", help="the x10 input only")
    args = parser.parse_args()
    bigger = bigger_input(args.work, args.copies)
    inputs = {"flights-3m": DATA, f"flights-3m x{args.copies}": bigger}
    if args.only_bigger:
        del inputs["flights-3m"]
    spark_class_archive(QUERIES["SEQ3 ISP,COS,DAY 1 h"], DATA, OPTIONS)  # the cold runs map it
    cells: dict[tuple[str, str, str], list[dict[str, object]]] = {}
    for _ in range(args.repeat):
        for data_name, data in inputs.items():
            for query_name, query in QUERIES.items():
                for mode, extra in MODES.items():
                    result = cepcli_run(query, data, OPTIONS + extra, fmt="jsonl")
                    assert result is not None
                    cells.setdefault((data_name, query_name, mode), []).append(result)
                    if extra and data is bigger:
                        warm = _twice(query, data, OPTIONS + extra)
                        cells.setdefault((data_name, query_name, f"{mode} warm"), []).append(warm)
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"median of {args.repeat} interleaved runs")  # fmt: skip
    print(
        "| input | query | mode | wall s | job s | session s | read s | evaluate s | overlap | matches"
        " | splits | shards | shards read |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (data_name, query_name, mode), runs in cells.items():
        matches = {int(r["matches"]) for r in runs}  # type: ignore[call-overload]
        local = {int(r["matches"]) for r in cells[(data_name, query_name, "local")]}  # type: ignore[call-overload]
        assert matches == local, (data_name, query_name, mode, matches, local)
        splits = len(runs[0].get("spark_splits", [])) or "-"  # type: ignore[arg-type]
        shards = runs[0].get("partitions", "-")
        # by time range (time-sorted Parquet: each shard reads its own row groups, no shuffle),
        # or the rows the splits read, spread by a shuffle
        ranged = runs[0].get("spark_by_time_range")
        how = "-" if not shards or shards == "-" else "their time" if isinstance(ranged, dict) else "shuffled"
        wall, job, session = (median_of(runs, what) for what in ("wall", "job", "session"))
        read, evaluate, overlap = (median_of(runs, what) for what in ("read", "evaluate", "overlap"))
        print(f"| {data_name} | {query_name} | {mode} | {wall:.1f} | {job:.1f} | {session:.1f} "
              f"| {read:.2f} | {evaluate:.2f} | {overlap:.2f} "
              f"| {matches.pop():,} | {splits} | {shards} | {how} |")  # fmt: skip
    print()
    print("| input | query | local[2]/local[1] wall | job | local[1] job / local job (per core) |")
    print("|---|---|---:|---:|---:|")
    for data_name in inputs:
        for query_name in QUERIES:
            for how in ("", " warm"):
                if (data_name, query_name, f"spark local[1]{how}") not in cells:
                    continue
                alone = cells[(data_name, query_name, "local")]
                one, two = (cells[(data_name, query_name, f"spark local[{n}]{how}")] for n in (1, 2))
                walls = median_of(one, "wall") / median_of(two, "wall")
                print(
                    f"| {data_name}{how} | {query_name} | {walls:.2f}x "
                    f"| {median_of(one, 'job') / median_of(two, 'job'):.2f}x "
                    f"| {median_of(one, 'job') / median_of(alone, 'job'):.2f}x |"
                )


def _twice(query: str, data: Path, options: list[str]) -> dict[str, object]:
    """The stats of the second of two runs of ``query`` in one process (one Spark session)."""
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "q.sase"
        qfile.write_text(query + "\n")
        argv = ["run", str(qfile), "--input", str(data), *options, "--format", "jsonl", "--quiet"]
        firsts = [str(Path(tmp) / f"stats{k}.json") for k in (1, 2)]
        done = subprocess.run(
            [sys.executable, "-c", WARM, json.dumps(argv), *firsts],
            check=True,
            capture_output=True,
            text=True,
        )
        result: dict[str, object] = json.loads(Path(firsts[1]).read_text())
        result["wall_seconds"] = float(done.stdout.split()[-1])
        return result


def median_of(runs: list[dict[str, object]], what: str) -> float:
    """wall: the whole process; session: starting Spark; job: the stats' seconds less that."""

    def one(run: dict[str, object]) -> float:
        session = float(run.get("spark_session_seconds", 0.0))  # type: ignore[arg-type]
        if what == "session":
            return session
        if what in ("read", "evaluate"):  # the Spark job's steps (cepcli.spark's laps)
            return float(run.get("spark_steps", {}).get(what, 0.0))  # type: ignore[union-attr]
        if what == "overlap":  # the shards' busy seconds over their union (1: one at a time)
            return float(run.get("spark_shard_overlap", 0.0))  # type: ignore[arg-type]
        if what == "job":
            return float(run["seconds"]) - session  # type: ignore[arg-type]
        return float(run["wall_seconds"])  # type: ignore[arg-type]

    return statistics.median(one(r) for r in runs)


if __name__ == "__main__":
    main()
