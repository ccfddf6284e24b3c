"""Compare the engines on the NYC flights of 2013: throughput and work per engine.

Usage (from the repository root, with ../shared beside it):

    python benchmarks/flights.py                              # the chain suite, all windows
    python benchmarks/flights.py --queries seq3 --engines eager,chain --windows 2h
    python benchmarks/flights.py --json results.json

Each cell is a real ``cepcli run`` process with ``--stats-json`` and ``--order`` given
(rarest first, from the carriers' counts in the file), so the numbers are the
evaluation alone; the best of ``--repeat`` runs is kept, and a run that exceeds
``--timeout`` seconds is reported as such. events/s counts all 336,776 rows over the
evaluation time (reading, prefilter, sort and automaton). Not a test: the numbers go
to BENCHMARKS.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from runner import FLIGHTS_OPTIONS, cepcli_run

ROOT = Path(__file__).resolve().parent.parent
FLIGHTS = ROOT.parent / "shared" / "data" / "flights.csv.gz"

# Carriers in the file: UA 58,665, B6 54,635, EV 54,173, DL 48,110 ... HA 342, OO 32.
# Each query: (text with a {window} placeholder, the order rarest first).
QUERIES: dict[str, tuple[str, str]] = {
    "seq3": ("PATTERN SEQ(UA a, B6 b, OO c) WHERE a.origin = c.origin WITHIN {window}", "c,b,a"),
    "seq4": (
        "PATTERN SEQ(UA a, DL b, B6 c, HA d) WHERE a.origin = d.origin AND b.origin = d.origin"
        " WITHIN {window}",
        "d,b,c,a",
    ),
    "and3": ("PATTERN AND(UA a, B6 b, OO c) WHERE a.origin = c.origin WITHIN {window}", "c,b,a"),
    "and4": (
        "PATTERN AND(UA a, EV b, DL c, HA d) WHERE a.origin = d.origin AND b.origin = d.origin"
        " AND c.dest = d.dest WITHIN {window}",
        "d,c,b,a",
    ),
}


def run_once(query: str, engine: str, order: str, data: Path, timeout: float) -> dict[str, object] | None:
    options = [*FLIGHTS_OPTIONS, "--engine", engine] + (["--order", order] if engine != "eager" else [])
    return cepcli_run(query, data, options, timeout, fmt="jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--engines", default="eager,chain")
    parser.add_argument("--windows", default="1 hour,2 hours,4 hours,8 hours")
    parser.add_argument("--data", type=Path, default=FLIGHTS)
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the best is kept")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    print(f"# {platform.machine()}, Python {platform.python_version()}, {args.data.name}")
    print(
        "| query | window | engine | events/s | seconds | of which input | automaton events/s"
        " | peak instances | predicate evaluations | memory operations | matches |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.queries.split(","):
        text, order = QUERIES[name]
        for window in args.windows.split(","):
            for engine in args.engines.split(","):
                runs = [
                    run_once(text.format(window=window), engine, order, args.data, args.timeout)
                    for _ in range(args.repeat)
                ]
                done = [r for r in runs if r is not None]
                if not done:
                    print(
                        f"| {name} | {window} | {engine} | timeout > {args.timeout:.0f} s | | | | | | | |",
                        flush=True,
                    )
                    rows.append({"query": name, "window": window, "engine": engine, "timeout": True})
                    continue
                best = max(done, key=lambda r: float(r["events_per_second"]))  # type: ignore[arg-type]
                rows.append({"query": name, "window": window, **best})
                seconds, input_seconds = float(best["seconds"]), float(best["input_seconds"])  # type: ignore[arg-type]
                automaton = float(best["events"]) / max(seconds - input_seconds, 1e-9)  # type: ignore[arg-type]
                print(
                    f"| {name} | {window} | {engine} | {best['events_per_second']:,.0f}"
                    f" | {seconds:.2f} | {input_seconds:.2f} | {automaton:,.0f} | {best['peak_instances']:,}"
                    f" | {best['predicate_evaluations']:,} | {best['memory_operations']:,}"
                    f" | {best['matches']:,} |",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
