"""Where a cold ``--spark`` run's time goes on a small machine: the CPU time of pyspark's
JVM in a first (cold) and a second (warm) run of the same query in one process.

The SEQ3 of ``spark_flights.py`` on its 10x input, ``--master local[1]`` and ``local[2]``,
each in a fresh process that runs the query twice (``cepcli.cli.main``), reading the JVM's
user and system time from ``/proc/<pid>/stat`` after each run (Linux). The archive of
Spark's classes is built first (``runner.spark_class_archive``).

    python benchmarks/spark_jvm_cpu.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from runner import spark_class_archive
from spark_flights import DATA, OPTIONS, QUERIES, bigger_input

QUERY = QUERIES["SEQ3 ISP,COS,DAY 1 h"]
TWICE = """
import json, os, sys, tempfile, time
from pathlib import Path
from cepcli.cli import main
from pyspark import SparkContext

def jvm_seconds():
    fields = Path(f"/proc/{SparkContext._gateway.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

argv, out = json.loads(sys.argv[1]), []
before = 0.0
with tempfile.TemporaryDirectory() as tmp:
    for k in (1, 2):
        started = time.perf_counter()
        try:
            main([*argv, "--output", f"{tmp}/m{k}", "--stats-json", f"{tmp}/s{k}.json"])
        except SystemExit as stop:
            assert not stop.code, stop.code
        wall = time.perf_counter() - started
        jvm = jvm_seconds()
        stats = json.loads(Path(f"{tmp}/s{k}.json").read_text())
        out.append({"wall": wall, "jvm_cpu": jvm - before, "steps": stats["spark_steps"]})
        before = jvm
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    data = bigger_input()
    spark_class_archive(QUERY, DATA, OPTIONS)
    query = data.with_name("spark_jvm_cpu.sase")
    query.write_text(QUERY + "\n")
    print("| master | repeat | run | wall s | JVM CPU s | read s | evaluate s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for repeat in range(1, args.repeat + 1):
        for master in ("local[1]", "local[2]"):
            argv = ["run", str(query), "--input", str(data), *OPTIONS, "--spark", "--master", master]
            argv += ["--format", "jsonl", "--quiet"]
            done = subprocess.run(
                [sys.executable, "-c", TWICE, json.dumps(argv)], check=True, capture_output=True, text=True
            )
            for name, run in zip(("cold", "warm"), json.loads(done.stdout.splitlines()[-1]), strict=True):
                steps = run["steps"]
                print(f"| {master} | {repeat} | {name} | {run['wall']:.1f} | {run['jvm_cpu']:.1f} "
                      f"| {steps['read']:.1f} | {steps['evaluate']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
