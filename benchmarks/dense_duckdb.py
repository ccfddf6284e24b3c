"""The dense flights against DuckDB (adaptive-evaluation issue): whole processes.

Usage (from the repository root, with ../shared beside it; DuckDB is installed for the
benchmark only: ``pip install duckdb``):

    python benchmarks/dense_duckdb.py --repeat 3 [--window 20]

On ``flights-3m.parquet`` (airports as types, sorted by time, so the stream order is the row
order), the selective SEQ3, AND3 and negated SEQ3 of ``benchmarks/paper.py``'s dense suite,
at one window: ``cepcli run`` with eager, tree and adaptive (each a whole process: start-up,
reading, evaluating, writing jsonl to a file) against a DuckDB self-join of the same query as
a whole process (``read_parquet``; the window, the order by row number, and each variable's
time range against ``a``'s so that DuckDB plans range joins; the negation as ``NOT EXISTS``).
The rows of one query are interleaved in each repeat; the match counts must agree.
Not a test: the numbers go to BENCHMARKS.md with the command and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from arrow_input import F3M, SCRATCH, cepcli_counted, duckdb_count, interleaved  # noqa: E402

OPTIONS = ["--type-col", "origin", "--time-col", "date"]
TO_ONE_PLACE = "a.destination = c.destination AND b.destination = c.destination"


def _queries(minutes: int) -> dict[str, tuple[str, str]]:
    """name -> (SASE+, the SQL WHERE over f a, f b, f c) at a window of ``minutes``."""
    w = f"INTERVAL {minutes} MINUTE"
    kinds = "a.origin = 'ORD' AND b.origin = 'DFW' AND c.origin = 'BIL'"
    return {
        "seq3": (
            f"PATTERN SEQ(ORD a, DFW b, BIL c) WHERE a.delay < b.delay AND {TO_ONE_PLACE}"
            f" WITHIN {minutes} min",
            f"{kinds} AND a.delay < b.delay AND {TO_ONE_PLACE} AND a.r < b.r AND b.r < c.r"
            f" AND c.ts - a.ts <= {w} AND b.ts BETWEEN a.ts AND a.ts + {w}"
            f" AND c.ts BETWEEN a.ts AND a.ts + {w}",
        ),
        "and3": (
            f"PATTERN AND(ORD a, DFW b, BIL c) WHERE a.delay < b.delay AND {TO_ONE_PLACE}"
            f" WITHIN {minutes} min",
            f"{kinds} AND a.delay < b.delay AND {TO_ONE_PLACE}"
            f" AND greatest(a.ts, b.ts, c.ts) - least(a.ts, b.ts, c.ts) <= {w}"
            f" AND b.ts BETWEEN a.ts - {w} AND a.ts + {w} AND c.ts BETWEEN a.ts - {w} AND a.ts + {w}",
        ),
        "neg-seq3": (
            f"PATTERN SEQ(ORD a, NOT DFW b, BIL c) WHERE a.delay < b.delay AND {TO_ONE_PLACE}"
            f" WITHIN {minutes} min",
            "a.origin = 'ORD' AND c.origin = 'BIL' AND a.destination = c.destination AND a.r < c.r"
            f" AND c.ts - a.ts <= {w} AND c.ts BETWEEN a.ts AND a.ts + {w} AND NOT EXISTS (SELECT 1 FROM f b"
            " WHERE b.origin = 'DFW' AND b.r > a.r AND b.r < c.r AND a.delay < b.delay"
            " AND b.destination = c.destination)",
        ),
    }


def _duckdb(where: str) -> tuple[float, int]:
    view = (
        f"SELECT row_number() OVER () AS r, date AS ts, origin, destination, delay FROM read_parquet('{F3M}')"
    )
    joined = "f a, f c" if "NOT EXISTS" in where else "f a, f b, f c"
    return duckdb_count(view, f"SELECT count(*) FROM {joined} WHERE {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--window", type=int, default=20, help="minutes")
    args = parser.parse_args()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(
        f"\n## flights-3m at {args.window} min: cepcli and DuckDB, whole processes, median of {args.repeat}"
    )
    print("| query | run | wall s | seconds (stats) | matches | vs DuckDB |")
    print("|---|---|---:|---:|---:|---:|")
    SCRATCH.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        scratch = Path(tmp)
        for name, (query, where) in _queries(args.window).items():
            runs = {
                engine: cepcli_counted(query, F3M, [*OPTIONS, "--engine", engine], scratch)
                for engine in ("eager", "tree", "adaptive")
            }
            runs["duckdb"] = lambda where=where: (*_duckdb(where), None)
            medians, matches, seconds, _ = interleaved(name, runs, args.repeat)
            for run, wall in medians.items():
                shown = f"{seconds[run]:.2f}" if run in seconds else ""
                ratio = medians["duckdb"] / wall
                print(f"| {name} | {run} | {wall:.2f} | {shown} | {matches[run]:,} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
