"""``--spark`` with and without the archive of Spark's classes (``cepcli.spark.classes``).

The same SEQ3 as ``spark_flights.py`` on ``flights-3m.parquet`` and its 10x copy (made by
that script), ``local[1]`` and ``local[2]``, each run a real ``cepcli run`` process with
``CEPCLI_SPARK_CLASS_CACHE=0`` and then with the archive, interleaved in every repeat (the
machine is shared). The archive is built first (a run records the classes; the script
waits for the detached build). The table gives medians: the whole process (``wall``), the
session's start, the job after it, and their ratio.

    python benchmarks/spark_classes.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform

from runner import cepcli_run, spark_class_archive
from spark_flights import DATA, OPTIONS, QUERIES, bigger_input, median_of

QUERY = QUERIES["SEQ3 ISP,COS,DAY 1 h"]
MODES = {"no archive": {"CEPCLI_SPARK_CLASS_CACHE": "0"}, "archive": {"CEPCLI_SPARK_CLASS_CACHE": "1"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    inputs = {"flights-3m": DATA, "flights-3m x10": bigger_input()}
    spark_class_archive(QUERY, DATA, OPTIONS)
    cells: dict[tuple[str, str, str], list[dict[str, object]]] = {}
    for _ in range(args.repeat):
        for name, data in inputs.items():
            for master in ("local[1]", "local[2]"):
                for mode, env in MODES.items():
                    spark = [*OPTIONS, "--spark", "--master", master]
                    result = cepcli_run(QUERY, data, spark, fmt="jsonl", env=env)
                    assert result is not None
                    expected = "off" if mode == "no archive" else "used"
                    assert result["spark_class_archive"] == expected, result["spark_class_archive"]
                    cells.setdefault((name, master, mode), []).append(result)
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"median of {args.repeat} interleaved runs")  # fmt: skip
    print("| input | master | mode | wall s | session s | job s | matches |")
    print("|---|---|---|---:|---:|---:|---:|")
    walls = {}
    for (name, master, mode), runs in cells.items():
        wall, session, job = (median_of(runs, what) for what in ("wall", "session", "job"))
        walls[(name, master, mode)] = wall
        matches = {int(r["matches"]) for r in runs}  # type: ignore[call-overload]
        assert len(matches) == 1, matches
        print(f"| {name} | {master} | {mode} | {wall:.1f} | {session:.1f} | {job:.1f} | {matches.pop():,} |")
    print()
    print("| input | master | wall, no archive / archive |")
    print("|---|---|---:|")
    for name in inputs:
        for master in ("local[1]", "local[2]"):
            ratio = walls[(name, master, "no archive")] / walls[(name, master, "archive")]
            print(f"| {name} | {master} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
