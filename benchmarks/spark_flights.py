"""Local vs ``--spark`` on the NYC flights: wall time (process start to exit) and
matches, so users see what starting Spark costs.

    python benchmarks/spark_flights.py [--master 'local[2]'] [--data ../shared/data/flights.csv.gz]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("cepcli")
QUERIES = {
    "time shards": "PATTERN SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin WITHIN 2 hours",
    "[origin] groups": "PATTERN SEQ(UA a, B6 b, OO c) WHERE [origin] WITHIN 2 hours",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "flights.csv.gz")
    args = parser.parse_args()
    print(f"# {platform.machine()}, Python {platform.python_version()}, master {args.master}")
    print("| query | mode | wall seconds | matches | partitions |")
    print("|---|---|---:|---:|---:|")
    for name, text in QUERIES.items():
        for mode in ("local", "spark"):
            with tempfile.TemporaryDirectory() as tmp:
                query = Path(tmp) / "q.sase"
                query.write_text(text + "\n")
                stats = Path(tmp) / "stats.json"
                command = [
                    str(CLI),
                    "run",
                    str(query),
                    "--input",
                    str(args.data),
                    "--type-col",
                    "carrier",
                    "--time-col",
                    "time_hour",
                    "--sort",
                    "--format",
                    "jsonl",
                    "--output",
                    str(Path(tmp) / "m.jsonl"),
                    "--stats-json",
                    str(stats),
                    "--quiet",
                ]
                if mode == "spark":
                    command += ["--spark", "--master", args.master]
                started = time.perf_counter()
                subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
                wall = time.perf_counter() - started
                result = json.loads(stats.read_text())
                parts = result.get("partitions", 1)
                print(f"| {name} | {mode} | {wall:.1f} | {result['matches']:,} | {parts} |", flush=True)


if __name__ == "__main__":
    main()
