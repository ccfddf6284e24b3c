"""Local vs ``--spark`` on the NYC flights: wall time (process start to exit) and
matches, so users see what starting Spark costs.

    python benchmarks/spark_flights.py [--master 'local[2]'] [--data ../shared/data/flights.csv.gz]
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

from runner import FLIGHTS_OPTIONS, cepcli_run

ROOT = Path(__file__).resolve().parent.parent
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
            options = FLIGHTS_OPTIONS + (["--spark", "--master", args.master] if mode == "spark" else [])
            result = cepcli_run(text, args.data, options, fmt="jsonl")
            assert result is not None
            wall = float(result["wall_seconds"])  # type: ignore[arg-type]
            parts = result.get("partitions", 1)
            print(f"| {name} | {mode} | {wall:.1f} | {result['matches']:,} | {parts} |", flush=True)


if __name__ == "__main__":
    main()
