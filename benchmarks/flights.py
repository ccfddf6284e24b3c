"""Run cepcli on the NYC flights of 2013 and report throughput and work per engine.

Usage (from the repository root, with ../shared beside it):

    python benchmarks/flights.py                      # the default query, eager
    python benchmarks/flights.py --engines eager --windows 1h,2h --json out.json

Each run is a real ``cepcli run`` process with ``--stats-json``; the table shows
events/s (all 336,776 rows over the evaluation time), peak instances, predicate
evaluations and matches. Not a test: numbers go to BENCHMARKS.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLIGHTS = ROOT.parent / "shared" / "data" / "flights.csv.gz"
DEFAULT_QUERY = """PATTERN SEQ(UA a, B6 b, OO c)
WHERE a.origin = c.origin
WITHIN {window}
"""
CLI = Path(sys.executable).with_name("cepcli")


def run_once(query: str, engine: str, data: Path) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "q.sase"
        qfile.write_text(query)
        stats = Path(tmp) / "stats.json"
        subprocess.run(
            [
                str(CLI),
                "run",
                str(qfile),
                "--input",
                str(data),
                "--type-col",
                "carrier",
                "--time-col",
                "time_hour",
                "--sort",
                "--engine",
                engine,
                "--format",
                "jsonl",
                "--output",
                str(Path(tmp) / "m.jsonl"),
                "--stats-json",
                str(stats),
                "--quiet",
            ],
            check=True,
        )
        result: dict[str, object] = json.loads(stats.read_text())
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="eager")
    parser.add_argument("--windows", default="2 hours")
    parser.add_argument("--query", default=DEFAULT_QUERY, help="SASE+ text with a {window} placeholder")
    parser.add_argument("--data", type=Path, default=FLIGHTS)
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the best time is kept")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print("| window | engine | events/s | peak instances | predicate evaluations | matches |")
    print("|---|---|---:|---:|---:|---:|")
    for window in args.windows.split(","):
        for engine in args.engines.split(","):
            runs = [run_once(args.query.format(window=window), engine, args.data) for _ in range(args.repeat)]
            best = max(runs, key=lambda r: float(r["events_per_second"]))  # type: ignore[arg-type]
            rows.append({"window": window, **best})
            print(
                f"| {window} | {engine} | {best['events_per_second']:,.0f} | {best['peak_instances']:,}"
                f" | {best['predicate_evaluations']:,} | {best['matches']:,} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
