"""Many patterns in one pass (issue 28): 20 queries over flights-3m in one ``cepcli run``
against each of them alone, whole processes.

    python benchmarks/many_queries.py [--repeat 3] [--queries 20] [--alerts]

The queries are SEQ3s and AND3s over airport triples at 20 minutes (types are origins:
``--type-col origin --time-col date``), some with a condition. Each repeat runs the 20 alone
and then all of them in one run (``cepcli run DIR``: the input read once), interleaved;
the medians are reported, and the per-query match counts of the one run must equal those of
the runs alone. Target: the one run takes at most 2x the slowest query alone (3x before the
every-core issue). Not a test.
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "flights-3m.parquet"
CLI = str(Path(sys.executable).with_name("cepcli"))
OPTIONS = ["--type-col", "origin", "--time-col", "date", "--format", "jsonl", "-q"]
AIRPORTS = [
    ("ORD", "DFW", "BIL"),
    ("ATL", "ORD", "DEN"),
    ("LAX", "SFO", "SEA"),
    ("BOS", "IAH", "CLT"),
    ("ORD", "DFW", "ATL"),
    ("PHX", "LAS", "SLC"),
    ("DTW", "MSP", "STL"),
    ("JFK", "LGA", "EWR"),
    ("MIA", "MCO", "TPA"),
    ("DEN", "SLC", "BOI"),
    ("SEA", "PDX", "GEG"),
    ("ORD", "DFW", "PIT"),
    ("ATL", "CLT", "RDU"),
    ("IAH", "DFW", "AUS"),
    ("SFO", "LAX", "SAN"),
    ("BWI", "DCA", "IAD"),
    ("PHL", "PIT", "CLE"),
    ("MSP", "ORD", "MKE"),
    ("LAS", "PHX", "ABQ"),
    ("ORD", "DFW", "DAY"),
]


def queries(n: int, alerts: bool = False) -> dict[str, str]:
    """``n`` monitoring patterns: rising delays (SEQ), three flights to one place (AND), a
    late one then its two followers (SEQ with a threshold); with ``alerts``, the rising
    delays start from a late flight (a rule that fires rarely: 14-38x fewer matches)."""
    within = " WITHIN 20 minutes"
    out = {}
    for i, (x, y, z) in enumerate(AIRPORTS[:n], 1):
        if i % 3 == 0:
            where = "a.destination = c.destination AND b.destination = c.destination"
            text = f"PATTERN AND({x} a, {y} b, {z} c) WHERE {where}"
        elif i % 3 == 1:
            rising = "a.delay < b.delay AND b.delay < c.delay"
            text = f"PATTERN SEQ({x} a, {y} b, {z} c) WHERE {'a.delay > 30 AND ' if alerts else ''}{rising}"
        else:
            text = f"PATTERN SEQ({x} a, {y} b, {z} c) WHERE a.delay > 60 AND b.delay > a.delay"
        out[f"q{i:02d}"] = text + within
    return out


def run(args: list[str], scratch: Path) -> tuple[float, dict[str, object]]:
    stats = scratch / "stats.json"
    started = time.perf_counter()
    subprocess.run(
        [
            CLI,
            "run",
            *args,
            "-i",
            str(DATA),
            *OPTIONS,
            "-o",
            str(scratch / "out.jsonl"),
            "--stats-json",
            str(stats),
        ],
        check=True,
    )
    return time.perf_counter() - started, json.loads(stats.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--alerts", action="store_true", help="rules that fire rarely (see queries())")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "cepcli")], check=True)
    texts = queries(args.queries, args.alerts)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        rules = scratch / "rules"
        rules.mkdir()
        for name, text in texts.items():
            (rules / f"{name}.sase").write_text(text + "\n")
        alone: dict[str, list[float]] = {name: [] for name in texts}
        together: list[float] = []
        counts: dict[str, int] = {}
        for _ in range(args.repeat):
            for name in texts:
                wall, stats = run([str(rules / f"{name}.sase")], scratch)
                alone[name].append(wall)
                counts[name] = int(stats["matches"])  # type: ignore[call-overload]
            wall, stats = run([str(rules)], scratch)
            together.append(wall)
            each = {q: int(s["matches"]) for q, s in stats["queries"].items()}  # type: ignore[union-attr]
            assert each == counts, f"one run's matches differ from the queries alone: {each} vs {counts}"
    medians = {name: statistics.median(walls) for name, walls in alone.items()}
    slowest = max(medians, key=medians.__getitem__)
    one = statistics.median(together)
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()};"
        f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median of {args.repeat}, interleaved"
    )
    print("\n| run | wall s | matches |\n|---|---:|---:|")
    for name in texts:
        print(f"| {name} alone: `{texts[name]}` | {medians[name]:.2f} | {counts[name]:,} |")
    print(f"| all {len(texts)} in one run | {one:.2f} | {sum(counts.values()):,} |")
    ratio = one / medians[slowest]
    print(
        f"\nSum of the runs alone: {sum(medians.values()):.2f} s; the slowest alone ({slowest}):"
        f" {medians[slowest]:.2f} s; the one run: {one:.2f} s = {ratio:.2f}x the slowest"
        f" (target at most 2x: **{'met' if ratio <= 2 else 'not met'}**)"
    )


if __name__ == "__main__":
    main()
