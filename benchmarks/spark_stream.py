"""A Structured Streaming query over files arriving, against the batch ``cepcli.spark.find``
and the local run on the same rows (issue 41's benchmark).

``flights-3m.parquet`` (3,000,000 US flights of 2001, in time order, airports as types)
is cut into 30 Parquet files of 100,000 rows (written once). Two queries: a three-airport
SEQ (no key: the stream is one group, on one task) and a two-airport SEQ keyed by the
destination (``[destination]``: a group per destination, spread over the cores).

1. **Whole processes** (interleaved, medians of ``--repeat``): ``cepcli run`` on the
   3M-row file (local), ``cepcli run --spark`` on the 30 files' directory read by Spark
   (``cepcli.spark.find`` over ``spark.read.parquet``, batch), and ``cepcli run --spark
   --stream --available-now`` on the same directory (every file there, one micro-batch per
   file: ``maxFilesPerTrigger`` 1), each with its matches written. Wall time, the
   run's own time, peak RSS of the driver, and the match counts, which must be equal.
2. **Steady state** (one process, ``local[2]``, the stream's progress reports): events per
   second over the micro-batches after the first five (the first starts the Python
   workers and the state store), per core (two cores), against the batch call's rate in
   the same session.
3. **Latency**: a stream at ``trigger(processingTime="1 second")`` over an empty
   directory, then a file put there every 3 s (renamed in whole): for each, the time from
   its arrival to the end of the micro-batch that read it (its matches committed to the
   sink), from the progress reports' start and duration.
4. **State over time**: the state operator's rows and memory after each micro-batch of
   step 2 (it must plateau: the window's tail, not the input).

    python benchmarks/spark_stream.py [--repeat 3] [--work DIR] [--only QUERY]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "flights-3m.parquet"
CLI = Path(sys.executable).parent / "cepcli"
OPTIONS = ["--type-col", "origin", "--time-col", "date"]
FILES = 30
QUERIES = {
    "SEQ3 ISP,COS,DAY 1 h": "PATTERN SEQ(ISP a, COS b, DAY c) WHERE a.delay < b.delay WITHIN 1 hour",
    "SEQ2 ORD,DEN [destination] 30 min": (
        "PATTERN SEQ(ORD a, DEN b) WHERE [destination] AND a.delay > b.delay WITHIN 30 minutes"
    ),
}


def cut(work: Path) -> Path:
    """The 3M rows as ``FILES`` Parquet files of equal rows, in time order (written once)."""
    target = work / "flights-30"
    if target.exists() and len(list(target.glob("*.parquet"))) == FILES:
        return target
    target.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(DATA)
    size = -(-table.num_rows // FILES)
    for i in range(FILES):
        pq.write_table(table.slice(i * size, size), target / f"part-{i:02d}.parquet")
    return target


def _process(command: list[str]) -> dict[str, Any]:
    """One ``cepcli run`` process: its stats, with ``wall_seconds``."""
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        started = time.perf_counter()
        subprocess.run(
            [*command, "--stats-json", str(stats), "--quiet"],
            check=True,
            stderr=subprocess.DEVNULL,
            cwd=tmp,
        )
        said: dict[str, Any] = json.loads(stats.read_text())
        said["wall_seconds"] = time.perf_counter() - started
        return said


def whole_processes(query: str, files: Path, repeat: int) -> dict[str, list[dict[str, Any]]]:
    """Local, batch --spark and --stream --available-now, interleaved ``repeat`` times."""
    out: dict[str, list[dict[str, Any]]] = {"local": [], "spark batch": [], "spark stream": []}
    for _ in range(repeat):
        for mode in out:
            with tempfile.TemporaryDirectory() as tmp:
                base = [str(CLI), "run", "-e", query, *OPTIONS]
                if mode == "local":
                    command = [*base, "-i", str(DATA), "--format", "jsonl", "-o", f"{tmp}/m.jsonl"]
                elif mode == "spark batch":
                    glob = f"{files}/*.parquet"  # (a glob: Spark's own reader, cepcli.spark.find)
                    command = [*base, "-i", glob, "--spark", "--master", "local[2]", "--format", "parquet"]
                    command += ["-o", f"{tmp}/m"]
                else:
                    command = [*base, "-i", str(files), "--spark", "--master", "local[2]", "--stream"]
                    command += ["--available-now", "--format", "parquet", "-o", f"{tmp}/m"]
                    command += ["--checkpoint", f"{tmp}/ck"]
                out[mode].append(_process(command))
    counts = {mode: {r["matches"] for r in runs} for mode, runs in out.items()}
    assert len(set().union(*counts.values())) == 1, counts
    return out


def _session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _stream(session: Any, query: str, source: Path, work: Path, keyed: bool, **trigger: Any) -> Any:
    import cepcli.spark

    session.conf.set("spark.sql.shuffle.partitions", "4" if keyed else "1")
    schema = session.read.parquet(str(next(source.glob("*.parquet")))).schema
    df = session.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source))
    matches = cepcli.spark.find(query, df, type_col="origin", time_col="date")
    return (
        matches.writeStream.format("parquet")
        .option("path", str(work / "out"))
        .option("checkpointLocation", str(work / "ck"))
        .trigger(**trigger)
        .start()
    )


def _held(session: Any, checkpoint: str, batch: int) -> tuple[int, int]:
    """The groups and the bytes of rows (tail and waiting rows, Arrow IPC) the state holds
    after micro-batch ``batch`` (Spark's state data source, at that version)."""
    from pyspark.sql import functions as F

    state = (
        session.read.format("statestore")
        .option("path", checkpoint)
        .option("stateVarName", "cepcli")
        .option("batchId", batch)
        .load()
    )
    row = state.select(F.count("*"), F.sum(F.length("value.tail") + F.length("value.pending"))).first()
    return int(row[0]), int(row[1] or 0)


def _end(progress: dict[str, Any]) -> float:
    started = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
    return started + progress["durationMs"]["triggerExecution"] / 1000


def steady(session: Any, query: str, files: Path, keyed: bool) -> dict[str, Any]:
    """The stream over every file (one a micro-batch) to its end; the batch call over the
    same rows in the same session."""
    import cepcli.spark

    with tempfile.TemporaryDirectory() as tmp:
        stream = _stream(session, query, files, Path(tmp), keyed, availableNow=True)
        stream.awaitTermination()
        batches = [p for p in stream.recentProgress if p["numInputRows"]]
        matches = session.read.parquet(f"{tmp}/out").count()
        held = [_held(session, f"{tmp}/ck", p["batchId"]) for p in batches]
    later = batches[5:]
    rows = sum(p["numInputRows"] for p in later)
    seconds = sum(p["durationMs"]["triggerExecution"] for p in later) / 1000
    state = [
        (p["batchId"], p["stateOperators"][0]["numRowsTotal"], p["stateOperators"][0]["memoryUsedBytes"])
        for p in batches
        if p.get("stateOperators")
    ]
    df = session.read.parquet(str(files))
    started = time.perf_counter()
    batch_matches = cepcli.spark.find(query, df, type_col="origin", time_col="date").count()
    batch_seconds = time.perf_counter() - started
    assert batch_matches == matches, (batch_matches, matches)
    return {
        "matches": matches,
        "stream_events_per_s": rows / seconds,
        "stream_batch_seconds_median": statistics.median(
            p["durationMs"]["triggerExecution"] / 1000 for p in later
        ),
        "batch_events_per_s": df.count() / batch_seconds,
        "batch_seconds": batch_seconds,
        "state": state,
        "held": held,
    }


def latency(
    session: Any, query: str, files: Path, keyed: bool, count: int = 8, every: float = 3.0
) -> list[float]:
    """Seconds from each file's arrival to the end of the micro-batch that read it."""
    with tempfile.TemporaryDirectory() as tmp:
        work, source = Path(tmp), Path(tmp) / "in"
        source.mkdir()
        shutil.copy(files / "part-00.parquet", source / "part-00.parquet")  # (the schema)
        stream = _stream(session, query, source, work, keyed, processingTime="1 second")
        arrived: list[float] = []
        try:
            time.sleep(every)
            for i in range(1, count + 1):
                hidden = source / f".part-{i:02d}.parquet"
                shutil.copy(files / f"part-{i:02d}.parquet", hidden)
                arrived.append(time.time())
                hidden.rename(source / f"part-{i:02d}.parquet")
                time.sleep(every)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done = [p for p in stream.recentProgress if p["numInputRows"]]
                if len(done) >= count + 1:
                    break
                time.sleep(0.5)
        finally:
            stream.stop()
        done = [p for p in stream.recentProgress if p["numInputRows"]][1:]  # (the first: part-00)
    return [_end(p) - t for p, t in zip(done, arrived, strict=False)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "cepcli-bench")
    parser.add_argument("--only", default=None, help="a query's name (a prefix)")
    parser.add_argument("--skip-processes", action="store_true")
    args = parser.parse_args()
    files = cut(args.work)
    head = ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(head, capture_output=True, text=True).stdout.strip()
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit}, Python {platform.python_version()},")
    print(f"# {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {FILES} files of 100,000 rows")
    queries = {n: q for n, q in QUERIES.items() if args.only is None or n.startswith(args.only)}
    for name, query in queries.items():
        print(f"\n## {name}")
        if not args.skip_processes:
            runs = whole_processes(query, files, args.repeat)
            print("| mode | wall | run's own time | peak RSS | matches |")
            print("|---|---:|---:|---:|---:|")
            for mode, said in runs.items():
                wall = statistics.median(r["wall_seconds"] for r in said)
                own = statistics.median(r["seconds"] for r in said)
                rss = statistics.median(r["peak_rss_mb"] for r in said)
                print(f"| {mode} | {wall:.1f} s | {own:.1f} s | {rss:.0f} MB | {said[0]['matches']:,} |")
        session = _session()
        keyed = "[" in query
        said = steady(session, query, files, keyed)
        print(
            f"steady state: stream {said['stream_events_per_s']:,.0f} events/s"
            f" ({said['stream_events_per_s'] / 2:,.0f} per core, local[2]; a micro-batch of 100,000 rows"
            f" {said['stream_batch_seconds_median']:.2f} s), batch find {said['batch_events_per_s']:,.0f}"
            f" events/s ({said['batch_seconds']:.1f} s); {said['matches']:,} matches each"
        )
        memory = [s[2] for s in said["state"]]
        groups = [g for g, _ in said["held"]]
        held = [b for _, b in said["held"]]
        print(f"groups in the state after each micro-batch: {groups}")
        print(f"bytes of rows the state holds after each micro-batch: {held}")
        middle = statistics.median(memory)
        print(f"state store memory (bytes) first/median/last: {memory[0]:,} / {middle:,.0f} / {memory[-1]:,}")
        waits = latency(session, query, files, keyed)
        print(
            f"latency, arrival to matches committed (processingTime 1 s, a file every 3 s):"
            f" median {statistics.median(waits):.2f} s, max {max(waits):.2f} s ({len(waits)} files)"
        )
        with contextlib.suppress(Exception):
            session.stop()
        threading.Event().wait(1)


if __name__ == "__main__":
    main()
